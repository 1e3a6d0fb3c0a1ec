package evals

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/tool"
)

// Limits of an eval's stubs.
const (
	maxEvalStubs    = 50  // stubs of one tool
	maxEvalSequence = 100 // answers of one stub's sequence
)

// checkStubs checks an eval's or a case's stubs: each names a tool of
// the agent's, and is exactly one of result, error and sequence, in
// JSON.
func checkStubs(bad func(string, string, ...any), path string, stubs map[string][]api.EvalStub, tools agentTools) {
	for _, name := range slices.Sorted(maps.Keys(stubs)) {
		list := stubs[name]
		at := path + "." + name
		if _, ok := tools.Tools().Lookup(name); !ok {
			bad(at, "the agent has no tool %q to stub", name)
			continue
		}
		switch {
		case len(list) == 0:
			bad(at, "has no stubs; give at least one (result, error or sequence), or remove it")
		case len(list) > maxEvalStubs:
			bad(at, "%d stubs; a tool has at most %d", len(list), maxEvalStubs)
			continue
		}
		for k, st := range list {
			sp := fmt.Sprintf("%s[%d]", at, k)
			if _, err := json.Marshal(st.Match); err != nil {
				bad(sp+".match", "cannot be encoded as JSON: %v", err)
			}
			n := 0
			if st.Result != nil {
				n++
			}
			if st.Error != "" {
				n++
			}
			if len(st.Sequence) > 0 {
				n++
			}
			switch {
			case n == 0:
				bad(sp, "gives no answer; give one of result, error, sequence")
				continue
			case n > 1:
				bad(sp, "gives more than one of result, error, sequence; give one")
				continue
			case len(st.Sequence) > maxEvalSequence:
				bad(sp+".sequence", "%d answers; at most %d", len(st.Sequence), maxEvalSequence)
				continue
			}
			checkStubAnswer(bad, sp, api.EvalStubAnswer{Result: st.Result, Error: st.Error})
			for j, a := range st.Sequence {
				ap := fmt.Sprintf("%s.sequence[%d]", sp, j)
				if (a.Result != nil) == (a.Error != "") {
					bad(ap, "give one of result, error")
					continue
				}
				checkStubAnswer(bad, ap, a)
			}
		}
	}
}

func checkStubAnswer(bad func(string, string, ...any), path string, a api.EvalStubAnswer) {
	if a.Result != nil {
		if _, err := json.Marshal(a.Result); err != nil {
			bad(path+".result", "cannot be encoded as JSON: %v", err)
		}
	}
	if len(a.Error) > maxEvalMessage {
		bad(path+".error", "is %d bytes; at most %d", len(a.Error), maxEvalMessage)
	}
}

// withStubs are a case's stubs with the eval's of the tools the case
// does not stub itself.
func withStubs(own, eval map[string][]api.EvalStub) map[string][]api.EvalStub {
	if len(eval) == 0 {
		return own
	}
	out := maps.Clone(eval)
	maps.Copy(out, own)
	return out
}

// stubs answer a running case's calls of its stubbed tools
// (host.SessionHooks.Call), counting the calls each stub answered for
// its sequence, and keep the calls no stub matched.
type stubs struct {
	byTool map[string][]stub
	mu     sync.Mutex
	missed []string // a line per call no stub matched
}

// stub is an api.EvalStub in JSON, ready to match.
type stub struct {
	match   map[string]any // nil: every call
	answers []api.EvalStubAnswer
	calls   int // the calls it answered so far
}

// newStubs prepares a case's stubs (checked by checkEval); nil without.
func newStubs(byTool map[string][]api.EvalStub) (*stubs, error) {
	if len(byTool) == 0 {
		return nil, nil
	}
	s := &stubs{byTool: map[string][]stub{}}
	for name, list := range byTool {
		for k, st := range list {
			var match map[string]any
			if len(st.Match) > 0 {
				if err := roundTrip(st.Match, &match); err != nil {
					return nil, fmt.Errorf("stubs.%s[%d].match: %w", name, k, err)
				}
			}
			answers := st.Sequence
			if len(answers) == 0 {
				answers = []api.EvalStubAnswer{{Result: st.Result, Error: st.Error}}
			}
			s.byTool[name] = append(s.byTool[name], stub{match: match, answers: answers})
		}
	}
	return s, nil
}

// call answers a call of a stubbed tool: the first stub that matches its
// input, its next answer (the last again past the end of its sequence);
// a call no stub matches fails, saying what it was and what the stubs
// match. A call of a tool without stubs is not answered: the tool runs.
func (s *stubs) call(_ context.Context, c host.HookedCall) (tool.Output, bool) {
	name := c.Tool.Name()
	s.mu.Lock()
	defer s.mu.Unlock()
	list, ok := s.byTool[name]
	if !ok {
		return tool.Output{}, false
	}
	var in map[string]any
	_ = json.Unmarshal(c.Input, &in) // not an object: only a stub without match matches
	for i := range list {
		st := &list[i]
		if st.match != nil && (in == nil || !holds(in, st.match)) {
			continue
		}
		a := st.answers[min(st.calls, len(st.answers)-1)]
		st.calls++
		if a.Error != "" {
			return tool.ErrorOutput(a.Error), true
		}
		b, err := json.Marshal(a.Result)
		if err != nil {
			return tool.ErrorOutput(fmt.Sprintf("the stub of %s cannot be encoded as JSON: %v", name, err)), true
		}
		return tool.Output{Result: b}, true
	}
	var matches []string
	for _, st := range list {
		b, _ := json.Marshal(st.match)
		matches = append(matches, string(b))
	}
	input := preview(string(c.Input), 500)
	msg := fmt.Sprintf("no stub of %s matches this call's input %s; its stubs match %s (in this eval %s never runs: add a stub that matches)",
		name, input, strings.Join(matches, ", "), name)
	s.missed = append(s.missed, fmt.Sprintf("%s (%s): no stub matches its input %s; the stubs match %s", name, c.CallID, input, strings.Join(matches, ", ")))
	return tool.ErrorOutput(msg), true
}

// missedCheck is the failed check of the calls no stub matched, or false
// if every call of a stubbed tool matched one.
func (s *stubs) missedCheck() (api.EvalCheckResult, bool) {
	if s == nil {
		return api.EvalCheckResult{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.missed) == 0 {
		return api.EvalCheckResult{}, false
	}
	var tools []string
	for _, m := range s.missed {
		name, _, _ := strings.Cut(m, " ")
		if !slices.Contains(tools, name) {
			tools = append(tools, name)
		}
	}
	return api.EvalCheckResult{Check: api.EvalCheck{Stub: strings.Join(tools, ",")}, Detail: strings.Join(s.missed, "; ")}, true
}

// roundTrip turns v into out through JSON (YAML's and Go's values as
// JSON compares them).
func roundTrip(v, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

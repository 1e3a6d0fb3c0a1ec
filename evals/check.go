package evals

import (
	"encoding/json"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// Limits of an eval.
const (
	maxEvalCases        = 500
	maxEvalChecks       = 20
	maxEvalConversation = 50       // messages of a case's conversation
	maxEvalMessage      = 64 << 10 // bytes of one message
	maxEvalName         = 200      // bytes of a batch's or a case's name
	maxEvalConcurrency  = 64
	maxEvalPattern      = 4 << 10 // bytes of a Matches or Contains
	// A Matches is an RE2 expression: matching is linear in the answer,
	// but times the size of its compiled program, which a counted repeat
	// multiplies ((a|aa){0,1000}b is 15 bytes and 7,003 instructions:
	// seconds on a 64 KiB answer). These bound both, and evalCheckTimeout
	// the match.
	maxEvalRegexp  = 1 << 10 // bytes of a Matches
	maxEvalProgram = 500     // instructions of a Matches, compiled
)

// agentTools are the agent's tools as an eval's checks name them: the
// host's (*host.Host).
type agentTools interface {
	// ModelTool finds a tool the model may call (a called check's).
	ModelTool(name string) (*tool.Tool, bool)
	// Tools are the agent's tools (a scorer is one of them).
	Tools() *tool.Set
}

// checkEval checks an eval, defaulting its name and its cases' names, and
// returns its cases; invalid_eval lists every problem.
func checkEval(req *api.EvalRunRequest, tools agentTools) ([]api.EvalCase, error) {
	var problems []tool.Violation
	bad := func(path, format string, args ...any) {
		problems = append(problems, tool.Violation{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if req.Name == "" {
		req.Name = "eval"
	}
	if len(req.Name) > maxEvalName || !utf8.ValidString(req.Name) {
		bad("name", "must be valid UTF-8 of at most %d bytes", maxEvalName)
	}
	switch {
	case req.Concurrency < 0:
		bad("concurrency", "must not be negative")
	case req.Concurrency > maxEvalConcurrency:
		bad("concurrency", "is %d; at most %d", req.Concurrency, maxEvalConcurrency)
	}
	switch {
	case len(req.Cases) == 0:
		bad("cases", "an eval needs at least one case")
	case len(req.Cases) > maxEvalCases:
		bad("cases", "%d cases; an eval has at most %d (split it)", len(req.Cases), maxEvalCases)
		return nil, invalidEval(problems)
	}
	checkStubs(bad, "stubs", req.Stubs, tools)
	cases := make([]api.EvalCase, len(req.Cases))
	names := map[string]int{}
	for i, c := range req.Cases {
		at := fmt.Sprintf("cases[%d]", i)
		if c.Name == "" {
			c.Name = "case-" + strconv.Itoa(i+1)
		}
		if first, dup := names[c.Name]; dup {
			bad(at+".name", "%q is the name of cases[%d] too; names must be unique", c.Name, first)
		} else {
			names[c.Name] = i
		}
		if len(c.Name) > maxEvalName || !utf8.ValidString(c.Name) {
			bad(at+".name", "must be valid UTF-8 of at most %d bytes", maxEvalName)
		}
		switch {
		case c.Message != "" && len(c.Conversation) > 0:
			bad(at, "has both a message and a conversation; give one")
		case c.Message == "" && len(c.Conversation) == 0:
			bad(at, "has neither a message nor a conversation")
		case c.Message != "":
			checkEvalMessage(bad, at+".message", c.Message)
		case len(c.Conversation) > maxEvalConversation:
			bad(at+".conversation", "%d messages; at most %d", len(c.Conversation), maxEvalConversation)
		default:
			for k, m := range c.Conversation {
				checkEvalMessage(bad, fmt.Sprintf("%s.conversation[%d]", at, k), m)
			}
		}
		if len(c.Checks) > maxEvalChecks {
			bad(at+".checks", "%d checks; a case has at most %d", len(c.Checks), maxEvalChecks)
		}
		for k, ch := range c.Checks {
			checkEvalCheck(bad, fmt.Sprintf("%s.checks[%d]", at, k), ch, tools)
		}
		if c.Scorer != "" {
			t, ok := tools.Tools().Lookup(c.Scorer)
			switch {
			case !ok:
				bad(at+".scorer", "the agent has no tool %q", c.Scorer)
			case t.Execution() != tool.Server:
				bad(at+".scorer", "%q is an agent tool (a script); a scorer is a server tool", c.Scorer)
			}
		}
		checkStubs(bad, at+".stubs", c.Stubs, tools)
		c.Stubs = withStubs(c.Stubs, req.Stubs)
		checkReplay(bad, at+".replay", c.Replay)
		cases[i] = c
	}
	if len(problems) > 0 {
		return nil, invalidEval(problems)
	}
	return cases, nil
}

func checkEvalMessage(bad func(string, string, ...any), path, m string) {
	switch {
	case strings.TrimSpace(m) == "":
		bad(path, "is empty")
	case len(m) > maxEvalMessage:
		bad(path, "is %d bytes; at most %d", len(m), maxEvalMessage)
	case !utf8.ValidString(m):
		bad(path, "is not valid UTF-8")
	}
}

// checkEvalCheck checks that a check is exactly one kind, and sound.
func checkEvalCheck(bad func(string, string, ...any), path string, c api.EvalCheck, tools agentTools) {
	var kinds []string
	if c.Called != "" {
		kinds = append(kinds, "called")
	}
	if c.NotCalled != "" {
		kinds = append(kinds, "notCalled")
	}
	if c.Contains != "" {
		kinds = append(kinds, "contains")
	}
	if c.Matches != "" {
		kinds = append(kinds, "matches")
	}
	if c.MaxSteps != 0 {
		kinds = append(kinds, "maxSteps")
	}
	if c.NoError {
		kinds = append(kinds, "noError")
	}
	switch {
	case len(kinds) == 0 && c.Args != nil:
		bad(path, "args without called: args narrow a called check")
		return
	case len(kinds) == 0 && c.Result != nil:
		bad(path, "result without called: a result narrows a called check")
		return
	case len(kinds) == 0:
		bad(path, "is empty; give one of called, notCalled, contains, matches, maxSteps, noError")
		return
	case len(kinds) > 1:
		bad(path, "has %s; a check is exactly one kind (make one check of each)", strings.Join(kinds, " and "))
		return
	}
	switch {
	case c.Args != nil && c.Called == "":
		bad(path+".args", "args go with called only")
	case c.Result != nil && c.Called == "":
		bad(path+".result", "result goes with called only")
	case c.Called != "":
		if _, ok := tools.ModelTool(c.Called); !ok {
			bad(path+".called", "the agent has no tool %q", c.Called)
		}
		if _, err := json.Marshal(c.Args); err != nil {
			bad(path+".args", "cannot be encoded as JSON: %v", err)
		}
		if _, err := json.Marshal(c.Result); err != nil {
			bad(path+".result", "cannot be encoded as JSON: %v", err)
		}
	case c.MaxSteps < 0:
		bad(path+".maxSteps", "must be positive")
	case len(c.Contains) > maxEvalPattern || len(c.Matches) > maxEvalPattern:
		bad(path, "the text is longer than %d bytes", maxEvalPattern)
	case len(c.Matches) > maxEvalRegexp:
		bad(path+".matches", "is %d bytes; a pattern has at most %d", len(c.Matches), maxEvalRegexp)
	case c.Matches != "":
		n, err := regexpSize(c.Matches)
		switch {
		case err != nil:
			bad(path+".matches", "is not a regular expression (RE2): %v", err)
		case n > maxEvalProgram:
			bad(path+".matches", "compiles to %d instructions; at most %d (a counted repeat such as {0,1000} copies what it repeats)", n, maxEvalProgram)
		}
	}
}

// regexpSize is how many instructions an RE2 expression compiles to, as
// package regexp compiles it.
func regexpSize(expr string) (int, error) {
	if _, err := regexp.Compile(expr); err != nil {
		return 0, err
	}
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return 0, err
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0, err
	}
	return len(prog.Inst), nil
}

func invalidEval(problems []tool.Violation) error {
	parts := make([]string, len(problems))
	for i, p := range problems {
		parts[i] = p.Path + ": " + p.Message
	}
	return &api.Error{Code: api.CodeInvalidEval, Message: "invalid eval: " + strings.Join(parts, "; "), Violations: problems}
}

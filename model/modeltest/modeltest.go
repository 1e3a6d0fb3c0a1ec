// Package modeltest provides models for tests: a scripted
// [model.Provider] ([New]) that answers from a list of answers and rules
// and keeps what it was asked, and record and replay of real model calls
// ([Record], [Replay]) as cassette files keyed by the request.
//
// Both answer the way a provider does — text in several deltas, each
// reasoning block's deltas and then the block, each tool call once whole,
// and last a [model.End] with the usage, the model and the stop reason; a
// failure is an error, a [*model.Error] — so a host's turn loop runs them
// exactly as it runs a real model: it streams the deltas, runs the calls,
// records the usage, retries what is retryable.
//
// A request nothing answers (a script run out, no rule matching, no
// cassette recorded for it) fails loudly: the stream fails with an
// invalid_request [*model.Error] saying what was asked (for a replay, with
// a diff against the closest cassette), and a [Reporter] set with
// ReportTo (a *testing.T) gets the same message, so the test fails even if
// the agent takes the failed turn in its stride.
//
// A cassette is a file of JSON meant to be read and reviewed: the request
// as lines (the system prompt's, each message's, each tool's) and the
// answers recorded for it, chunk by chunk. agent-sdk serve --record DIR
// records an agent's model calls with a [Recorder] around its provider,
// and --replay DIR answers them with a [Replayer] and no provider; the
// cassettes are the same whatever the provider.
package modeltest

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/agentsdk/agentsdk/model"
)

// ModelName is the model a scripted answer says answered ([model.End]'s
// Model) unless the answer names one.
const ModelName = "modeltest"

// Answer is one answer of a scripted model: reasoning, text, tool calls,
// usage, or a failure. The zero Answer is an empty answer that ends the
// turn.
type Answer struct {
	// Reasoning are complete reasoning blocks, streamed before the text
	// (each block's text in deltas, then the block).
	Reasoning []model.Reasoning
	// Text is the answer's text, streamed in deltas of a word or so.
	Text string
	// ToolCalls are the calls the model makes, each yielded once whole.
	// A call without an ID gets one ("call_1", "call_2", … in the order
	// the model makes them); Input nil is {}.
	ToolCalls []model.ToolCall
	// Usage is what the answer reports it consumed; nil: InputTokens are
	// the bytes of the request's JSON (as a cassette keeps it) over four,
	// OutputTokens the answer's text, reasoning and calls' over four.
	Usage *model.Usage
	// Model is [model.End]'s Model; "": [ModelName].
	Model string
	// StopReason is [model.End]'s; "": "tool_use" when the answer makes
	// calls, else "end_turn".
	StopReason string
	// Err, if set, fails the call with it after the chunks above (none:
	// at once), as a provider's error or a stream cut short does. A
	// *model.Error is classified as it says (rate_limited and overloaded
	// are retried by the turn loop).
	Err error
	// Hold, if set, holds the answer (before its first chunk) until it is
	// closed or the call's context ends, for tests of what happens while
	// a model is thinking.
	Hold <-chan struct{}
}

// Text is an answer of text alone, which ends the turn.
func Text(s string) Answer { return Answer{Text: s} }

// Call is an answer that calls the tool name with input: JSON as a
// string, []byte or [json.RawMessage] is sent as is (valid or not, as a
// model may), anything else is marshalled.
func Call(name string, input any) Answer { return Answer{}.Call(name, input) }

// Fail is an answer that fails the call with err (a [*model.Error] to
// choose its reason).
func Fail(err error) Answer { return Answer{Err: err} }

// Call returns a with one more tool call, of the tool name with input (as
// for the function [Call]).
func (a Answer) Call(name string, input any) Answer {
	a.ToolCalls = append(append([]model.ToolCall(nil), a.ToolCalls...), model.ToolCall{Name: name, Input: inputJSON(input)})
	return a
}

// inputJSON is a call's input as the model sends it.
func inputJSON(input any) json.RawMessage {
	switch v := input.(type) {
	case nil:
		return nil
	case string:
		return json.RawMessage(v)
	case []byte:
		return json.RawMessage(v)
	case json.RawMessage:
		return v
	}
	b, err := json.Marshal(input)
	if err != nil {
		// A test's own mistake: the model sends what it can, and the
		// host refuses it as invalid input.
		return json.RawMessage(fmt.Sprintf("%q", fmt.Sprintf("modeltest: marshalling the input: %v", err)))
	}
	return b
}

// Match says whether a rule answers a request.
type Match func(req *model.Request) bool

// LastUser matches requests whose last user message with text contains s.
func LastUser(s string) Match {
	return func(req *model.Request) bool {
		text, ok := lastUserText(req)
		return ok && strings.Contains(text, s)
	}
}

// AfterTool matches requests whose last message carries a result of a
// call of the tool name: the model's next step after that tool ran.
func AfterTool(name string) Match {
	return func(req *model.Request) bool {
		for _, r := range lastResults(req) {
			if r.name == name {
				return true
			}
		}
		return false
	}
}

// System matches requests whose system prompt contains s.
func System(s string) Match {
	return func(req *model.Request) bool { return strings.Contains(req.System, s) }
}

// Reporter is where a model reports a request it cannot answer, besides
// failing the call: a *testing.T or *testing.B.
type Reporter interface {
	Errorf(format string, args ...any)
}

// Model is a scripted [model.Provider]. Each request is answered by the
// first rule ([Model.On]) that matches it, else by the next answer of
// the sequence ([New], [Model.Then]); a request neither answers fails
// loudly (see the package documentation). It keeps every request it was
// sent ([Model.Requests]). It is safe for concurrent use.
type Model struct {
	mu       sync.Mutex
	answers  []Answer
	next     int
	rules    []*rule
	requests []model.Request
	calls    int // tool calls given an ID
	report   Reporter
}

// rule is an On's.
type rule struct {
	match   Match
	answers []Answer
	used    int
}

// New returns a model answering requests with answers, in order.
func New(answers ...Answer) *Model {
	return &Model{answers: append([]Answer(nil), answers...)}
}

// Then adds answers to the end of the sequence and returns m.
func (m *Model) Then(answers ...Answer) *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.answers = append(m.answers, answers...)
	return m
}

// On adds a rule, checked before the sequence and after the rules added
// before it: a request that match accepts gets the rule's next answer,
// the last one again once they are all given. It returns m.
func (m *Model) On(match Match, answers ...Answer) *Model {
	if len(answers) == 0 {
		answers = []Answer{{}}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rules = append(m.rules, &rule{match: match, answers: append([]Answer(nil), answers...)})
	return m
}

// ReportTo makes m report each request it cannot answer to r (t.Errorf)
// as well as failing the call, and returns m.
func (m *Model) ReportTo(r Reporter) *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.report = r
	return m
}

// Requests returns copies of the requests m was sent, in order.
func (m *Model) Requests() []model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]model.Request, len(m.requests))
	for i := range m.requests {
		out[i] = copyRequest(&m.requests[i])
	}
	return out
}

// Left is the number of answers of the sequence not given yet: 0 once the
// script has been played through.
func (m *Model) Left() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.answers) - m.next
}

// Stream answers req from the script (see [Model]).
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		a, err := m.take(req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		streamAnswer(ctx, req, a, yield)
	}
}

// take records req and picks its answer, giving its calls IDs.
func (m *Model) take(req *model.Request) (Answer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, copyRequest(req))
	n := len(m.requests)
	var a Answer
	switch r, ok := m.matching(req); {
	case ok:
		a = r.answers[min(r.used, len(r.answers)-1)]
		r.used++
	case m.next < len(m.answers):
		a = m.answers[m.next]
		m.next++
	default:
		msg := fmt.Sprintf("modeltest: request %d is beyond the script (%s, %s, none matching): %s",
			n, plural(len(m.answers), "answer"), plural(len(m.rules), "rule"), describe(req))
		if m.report != nil {
			m.report.Errorf("%s", msg)
		}
		return Answer{}, &model.Error{Reason: model.ReasonInvalidRequest, Message: msg}
	}
	if len(a.ToolCalls) > 0 {
		calls := make([]model.ToolCall, len(a.ToolCalls))
		for i, c := range a.ToolCalls {
			if c.ID == "" {
				m.calls++
				c.ID = fmt.Sprintf("call_%d", m.calls)
			}
			calls[i] = c
		}
		a.ToolCalls = calls
	}
	return a, nil
}

// matching is the first rule that matches req.
func (m *Model) matching(req *model.Request) (*rule, bool) {
	for _, r := range m.rules {
		if r.match(req) {
			return r, true
		}
	}
	return nil, false
}

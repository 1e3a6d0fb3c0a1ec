package evals

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// trajectory makes a session's events from payloads, each in the turn
// named before it ("turn:<id>" strings switch the turn).
func trajectory(t *testing.T, items ...any) []api.Event {
	t.Helper()
	var evs []api.Event
	turn := ""
	for _, it := range items {
		if s, ok := it.(string); ok {
			turn = strings.TrimPrefix(s, "turn:")
			continue
		}
		e := api.NewEvent(it.(api.Payload))
		e.TurnID, e.Seq = turn, int64(len(evs)+1)
		evs = append(evs, e)
	}
	return evs
}

func steps(n int) *int { return &n }

func TestEvalChecks(t *testing.T) {
	t.Parallel()
	evs := trajectory(t,
		"turn:t1",
		api.Message{Role: api.RoleUser, Text: "Weather?"},
		api.Message{Role: api.RoleAssistant, Text: "Which city?"},
		api.TurnCompleted{Steps: steps(1)},
		"turn:t2",
		api.ActionsRequested{Actions: []api.Action{
			{CallID: "c1", Tool: "lookup", Input: json.RawMessage(`{"city":"Oslo","units":"metric"}`)},
			{CallID: "c2", Tool: "boom", Input: json.RawMessage(`{}`)},
			{CallID: "c3", Tool: "boom", Input: json.RawMessage(`{}`)},
		}},
		api.ActionResult{CallID: "c2", Tool: "boom", IsError: true, Result: json.RawMessage(`"it broke"`)},
		api.ActionResult{CallID: "c3", Tool: "boom", Result: json.RawMessage(`{"ok":true}`)},
		api.Message{Role: api.RoleAssistant, Text: "Oslo: cloudy, 4 °C."},
		api.TurnCompleted{Steps: steps(2)},
	)
	for _, tc := range []struct {
		name   string
		check  api.EvalCheck
		last   string // the last turn; "t2" unless set
		pass   bool
		detail string
	}{
		{"called", api.EvalCheck{Called: "lookup"}, "", true, "called by c1"},
		{"called with args", api.EvalCheck{Called: "lookup", Args: map[string]any{"city": "Oslo"}}, "", true, "called with the args by c1"},
		{"called with other args", api.EvalCheck{Called: "lookup", Args: map[string]any{"city": "Rome"}}, "", false, `called once, never with the args; last input: {"city":"Oslo","units":"metric"}`},
		{"called twice, never with the args", api.EvalCheck{Called: "boom", Args: map[string]any{"x": 1}}, "", false, "called 2 times, never with the args; last input: {}"},
		{"not called", api.EvalCheck{Called: "weather"}, "", false, "not called"},
		{"notCalled holds", api.EvalCheck{NotCalled: "weather"}, "", true, ""},
		{"notCalled fails", api.EvalCheck{NotCalled: "boom"}, "", false, "called 2 times: c2, c3"},
		{"contains", api.EvalCheck{Contains: "cloudy"}, "", true, ""},
		{"contains another turn's answer", api.EvalCheck{Contains: "Which"}, "", false, `the final answer does not contain it: "Oslo: cloudy, 4 °C."`},
		{"contains, the first turn last", api.EvalCheck{Contains: "Which"}, "t1", true, ""},
		{"contains without an answer", api.EvalCheck{Contains: "x"}, "t9", false, "no final answer"},
		{"matches", api.EvalCheck{Matches: `^Oslo: \w+`}, "", true, ""},
		{"does not match", api.EvalCheck{Matches: `sunny`}, "", false, `the final answer does not match: "Oslo: cloudy, 4 °C."`},
		{"not a regular expression", api.EvalCheck{Matches: `(`}, "", false, "not a regular expression: error parsing regexp: missing closing ): `(`"},
		{"maxSteps over both turns", api.EvalCheck{MaxSteps: 3}, "", true, "3 model steps"},
		{"maxSteps exceeded", api.EvalCheck{MaxSteps: 2}, "", false, "3 model steps"},
		{"noError", api.EvalCheck{NoError: true}, "", false, "boom (c2) had an error: it broke"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			last := tc.last
			if last == "" {
				last = "t2"
			}
			got, err := evalChecks(context.Background(), []api.EvalCheck{tc.check}, evs, last)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("%d results", len(got))
			}
			if got[0].Pass != tc.pass || got[0].Detail != tc.detail {
				t.Errorf("pass=%v %q, want pass=%v %q", got[0].Pass, got[0].Detail, tc.pass, tc.detail)
			}
		})
	}
}

// A matches check runs under the case's deadline: one that runs past it
// fails the case at once, with an error naming the check, rather than
// holding it for as long as the match takes.
func TestEvalChecksDeadline(t *testing.T) {
	t.Parallel()
	evs := trajectory(t, "turn:t1",
		api.Message{Role: api.RoleAssistant, Text: strings.Repeat("a", 64<<10)},
		api.TurnCompleted{Steps: steps(1)})
	cause := errors.New("timed out after 50ms")
	ctx, cancel := context.WithTimeoutCause(context.Background(), 50*time.Millisecond, cause)
	defer cancel()
	start := time.Now()
	// Under the program limit, and still about a second on 64 KiB.
	_, err := evalChecks(ctx, []api.EvalCheck{{Contains: "a"}, {Matches: `(?:[ab]?){240}c`}}, evs, "t1")
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("the checks took %v past a 50ms deadline", took)
	}
	if !errors.Is(err, cause) || !strings.Contains(err.Error(), `checks[1] (matches "`) {
		t.Errorf("err = %v; want the case's deadline, naming checks[1] (matches)", err)
	}
}

// A failed turn counts its steps and fails noError; an input given as
// text is the detail's last input.
func TestEvalChecksFailedTurn(t *testing.T) {
	t.Parallel()
	evs := trajectory(t, "turn:t1",
		api.ActionsRequested{Actions: []api.Action{{CallID: "c1", Tool: "lookup", InputText: "not json"}}},
		api.TurnFailed{Reason: "provider error", Steps: steps(4)},
	)
	got, err := evalChecks(context.Background(), []api.EvalCheck{{NoError: true}, {MaxSteps: 4}, {Called: "lookup", Args: map[string]any{"city": "Oslo"}}}, evs, "t1")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		pass   bool
		detail string
	}{
		{false, "a turn failed: provider error"},
		{true, "4 model steps"},
		{false, "called once, never with the args; last input: not json"},
	}
	for i, w := range want {
		if got[i].Pass != w.pass || got[i].Detail != w.detail {
			t.Errorf("check %d: pass=%v %q, want pass=%v %q", i, got[i].Pass, got[i].Detail, w.pass, w.detail)
		}
	}
}

func TestHolds(t *testing.T) {
	t.Parallel()
	in := map[string]any{"city": "Oslo", "n": 2.0, "tags": []any{"a", "b"}, "opts": map[string]any{"x": true}}
	for _, tc := range []struct {
		name string
		want map[string]any
		ok   bool
	}{
		{"nothing", map[string]any{}, true},
		{"a field", map[string]any{"city": "Oslo"}, true},
		{"every field", in, true},
		{"a number", map[string]any{"n": 2.0}, true},
		{"a number of another type", map[string]any{"n": 2}, false},
		{"another value", map[string]any{"city": "Rome"}, false},
		{"a missing field", map[string]any{"units": "metric"}, false},
		{"a list", map[string]any{"tags": []any{"a", "b"}}, true},
		{"a shorter list", map[string]any{"tags": []any{"a"}}, false},
		{"a whole object", map[string]any{"opts": map[string]any{"x": true}}, true},
		{"part of an object", map[string]any{"opts": map[string]any{}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := holds(in, tc.want); got != tc.ok {
				t.Errorf("holds = %v, want %v", got, tc.ok)
			}
		})
	}
}

func TestAnswerDetail(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 150) // 300 bytes
	for _, tc := range []struct {
		name           string
		answered, pass bool
		answer, want   string
	}{
		{"no answer", false, false, "", "no final answer"},
		{"no answer, passing", false, true, "x", "no final answer"},
		{"passed", true, true, "x", ""},
		{"failed", true, false, "Hi", `the final answer fails: "Hi"`},
		{"cut at a rune", true, false, long, `the final answer fails: "` + strings.Repeat("é", 100) + `…"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := answerDetail(tc.answered, tc.pass, tc.answer, "fails"); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestResultText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`"text"`, "text"},
		{`{"a":1}`, `{"a":1}`},
		{`42`, `42`},
		{``, ``},
	} {
		if got := resultText(json.RawMessage(tc.in)); got != tc.want {
			t.Errorf("resultText(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if times(1) != "once" || times(3) != "3 times" {
		t.Errorf("times: %q %q", times(1), times(3))
	}
}

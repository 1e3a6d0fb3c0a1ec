package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// usage is a turn's or session's usage: its tokens, and its cost in
// micro-dollars (nil: the model has no price).
func usage(calls, in, out, reasoning, cacheRead, cacheWrite int64, cost *int64) *api.Usage {
	u := &api.Usage{ModelCalls: calls, InputTokens: in, OutputTokens: out, ReasoningTokens: reasoning,
		CacheReadTokens: cacheRead, CacheWriteTokens: cacheWrite}
	if cost != nil {
		d := float64(*cost) / 1e6
		u.CostMicroUsd, u.CostUsd = cost, &d
	}
	return u
}

func microUSD(n int64) *int64 { return &n }

// thought is the reasoning the usage stream's model streams; the view
// never shows it, only how long it is.
const thought = "The build target is checkout; I should run the tests first."

// usageTurns is a stream of what the view shows of cost and of the model
// itself: reasoning streamed and then recorded whole, reasoning streamed
// without its block, a redacted block, model calls tried again, turns'
// usage priced and unpriced, failure codes with and without usage, and a
// direct call's turn (none).
func usageTurns() []api.Event {
	s := newStream()
	s.add(api.SessionCreated{Channel: "http", Mode: api.ModeLocal, Principal: "bearer-token"})
	s.turn = "turn_1"
	s.add(
		api.TurnStarted{Kind: api.TurnModel},
		api.Message{Role: api.RoleUser, Text: "Build checkout."},
		api.ReasoningDelta{Text: thought[:20]}, api.ReasoningDelta{Text: thought[20:]},
		api.Reasoning{Text: thought, Signature: "sig_1"},
		api.MessageDelta{Text: "Building "}, api.MessageDelta{Text: "it."},
		api.Message{Role: api.RoleAssistant, Text: "Building it."},
		api.ModelUsage{Provider: "anthropic", Model: "claude-sonnet-4-5", InputTokens: 1000, OutputTokens: 300, ReasoningTokens: 120,
			CacheReadTokens: 3000, CacheWriteTokens: 100, CostMicroUsd: microUSD(9000), DurationMs: 900, Reported: true},
		api.ActionsRequested{Actions: []api.Action{{CallID: "tool_build_1", Tool: "build", Input: raw(`{"target":"checkout"}`)}}},
		api.ActionResult{CallID: "tool_build_1", Tool: "build", Result: raw(`"ok"`), DurationMs: 1200},
		api.ModelRetry{Attempt: 1, Code: api.FailureOverloaded, Status: 529, WaitMs: 2000, Message: "Overloaded"},
		api.ModelRetry{Attempt: 2, Code: api.FailureRateLimited, Status: 429, WaitMs: 500, Message: "rate limit exceeded\nretry later"},
		api.ReasoningDelta{Text: "Tests pass: say so."},
		api.MessageDelta{Text: "Built; the tests pass."},
		api.Message{Role: api.RoleAssistant, Text: "Built; the tests pass."},
		api.ModelUsage{Provider: "anthropic", Model: "claude-sonnet-4-5", InputTokens: 200, OutputTokens: 40, CostMicroUsd: microUSD(2475), Reported: true},
		api.TurnCompleted{Steps: intp(2), Usage: usage(2, 1200, 340, 120, 3000, 100, microUSD(11475))},
	)
	s.turn = "turn_2"
	s.add(
		api.TurnStarted{Kind: api.TurnModel},
		api.Message{Role: api.RoleUser, Text: "Deploy it."},
		api.Reasoning{Redacted: "ENCRYPTED", Signature: "sig_2"},
		api.ModelUsage{Provider: "openai", Model: "my-finetune", InputTokens: 1500, OutputTokens: 12, Reported: true},
		api.TurnFailed{Code: api.FailureBudgetExceeded, Reason: "the session's limit of $0.01 was reached: it spent $0.011475", Steps: intp(1),
			Usage: usage(1, 1500, 12, 0, 0, 0, nil)},
	)
	s.turn = "turn_3"
	s.add(
		api.TurnStarted{Kind: api.TurnCall, Tool: "hello"},
		api.ActionResult{CallID: "tool_hello_1", Tool: "hello", Result: raw(`"Hello!"`), DurationMs: 2, Direct: true},
		api.TurnCompleted{},
	)
	s.turn = "turn_4"
	s.add(
		api.TurnStarted{Kind: api.TurnModel},
		api.Message{Role: api.RoleUser, Text: "Again."},
		api.TurnFailed{Code: api.FailureInterrupted, Reason: "interrupted by host restart"},
	)
	return s.events
}

// usageSession is the session of usageTurns as GET /v1/session/{id}
// answers it: its usage, unpriced for the call of a model with no price.
func usageSession() api.Session {
	return api.Session{ID: "sess_demo", Usage: usage(3, 2700, 352, 120, 3000, 100, nil)}
}

// renderWithHeader is render with the session's header first.
func renderWithHeader(v *view, s api.Session, events []api.Event) string {
	var out bytes.Buffer
	v.w, v.loc = &out, time.UTC
	v.header(s)
	for _, e := range events {
		v.event(e)
	}
	v.end()
	return out.String()
}

// The view of usage, reasoning, retries and failure codes is compared
// with testdata/view/usage.golden (and -tty for a terminal's screen); it
// adds lines, and never shows the reasoning's text.
func TestViewUsageGolden(t *testing.T) {
	plain := renderWithHeader(&view{}, usageSession(), usageTurns())
	checkViewGolden(t, "usage", plain)
	for _, want := range []string{
		"Σ session sess_demo: 3 model calls · tokens 2,700 in, 352 out (120 reasoning), 3,000 cache read, 100 cache write · cost — (no price for the model)\n",
		"── turn completed after 2 steps ──\n  2 model calls · tokens 1,200 in, 340 out (120 reasoning), 3,000 cache read, 100 cache write · cost $0.011475\n",
		"✗ turn failed after 1 step: the session's limit of $0.01 was reached: it spent $0.011475\n  code budget_exceeded · 1 model call · tokens 1,500 in, 12 out · cost — (no price for the model)\n",
		"── turn completed ──\n── turn turn_4 ──", // a direct call's turn: no usage
		"✗ turn failed: interrupted by host restart\n  code interrupted\n",
		"∴ thinking… (59 chars)\nBuilding it.\n",
		"↻ model call retry 1 in 2.0s (overloaded, HTTP 529: Overloaded)\n",
		"↻ model call retry 2 in 500ms (rate_limited, HTTP 429: rate limit exceeded retry later)\n",
		"∴ thinking… (19 chars)\nBuilt; the tests pass.\n",
		"∴ thinking… (redacted)\n",
	} {
		if !strings.Contains(plain, want) {
			t.Errorf("the view lacks %q:\n%s", want, plain)
		}
	}
	if strings.Contains(plain, "I should run") || strings.Contains(plain, "Tests pass: say so") || strings.Contains(plain, "ENCRYPTED") {
		t.Errorf("the view shows the reasoning itself:\n%s", plain)
	}
	if n := strings.Count(plain, "∴ thinking"); n != 3 {
		t.Errorf("%d lines of reasoning, want 3 (one a block):\n%s", n, plain)
	}
	colored := renderWithHeader(&view{color: true}, usageSession(), usageTurns())
	if got := sgr.ReplaceAllString(colored, ""); got != plain {
		t.Errorf("without its colours, the coloured view is not the plain one:\n%s\n---\n%s", got, plain)
	}
	if !strings.Contains(colored, "\x1b[31m  code budget_exceeded\x1b[0m") || !strings.Contains(colored, "\x1b[2m∴ thinking… (59 chars)\x1b[0m") {
		t.Errorf("the code is not red or the reasoning not dim:\n%q", colored)
	}

	var out bytes.Buffer
	v := &view{w: &out, tty: true, color: true, width: func() int { return 160 }, loc: time.UTC}
	screen := &term{}
	v.header(usageSession())
	for _, e := range usageTurns() {
		v.event(e)
		screen.write(t, out.String())
		out.Reset()
	}
	v.end()
	screen.write(t, out.String())
	checkViewGolden(t, "usage-tty", screen.String()+"\n")
}

// On a terminal, reasoning as it streams is a live line saying how much
// the model has thought; once the answer begins it stays as one line.
func TestViewTTYThinking(t *testing.T) {
	var out bytes.Buffer
	v := &view{w: &out, tty: true, width: func() int { return 80 }, loc: time.UTC}
	screen := &term{}
	s := newStream()
	s.turn = "turn_1"
	steps := []struct {
		event  api.Payload
		screen string
	}{
		{api.TurnStarted{Kind: api.TurnModel}, "── turn turn_1 ──"},
		{api.ReasoningDelta{Text: "Let me "}, "── turn turn_1 ──\n∴ thinking… (7 chars)"},
		{api.ReasoningDelta{Text: "see: ünïcode"}, "── turn turn_1 ──\n∴ thinking… (19 chars)"},
		{api.MessageDelta{Text: "Here."}, "── turn turn_1 ──\n∴ thinking… (19 chars)\nHere."},
		{api.Reasoning{Text: "Let me see: ünïcode"}, "── turn turn_1 ──\n∴ thinking… (19 chars)\nHere."},
		{api.Message{Role: api.RoleAssistant, Text: "Here."}, "── turn turn_1 ──\n∴ thinking… (19 chars)\nHere."},
		{api.TurnCompleted{Steps: intp(1), Usage: usage(1, 10, 5, 0, 0, 0, microUSD(0))},
			"── turn turn_1 ──\n∴ thinking… (19 chars)\nHere.\n── turn completed after 1 step ──\n  1 model call · tokens 10 in, 5 out · cost $0.00"},
	}
	for _, step := range steps {
		s.add(step.event)
		out.Reset()
		v.event(s.events[len(s.events)-1])
		screen.write(t, out.String())
		if got := screen.String(); got != step.screen {
			t.Fatalf("after %s (wrote %q):\n%s\nwant:\n%s", step.event.EventKind(), out.String(), got, step.screen)
		}
	}
}

// The figures read as people read them: thousands apart, dollars to the
// micro-dollar, — for no price (never $0), no model calls said so.
func TestUsageText(t *testing.T) {
	for _, c := range []struct {
		name string
		u    api.Usage
		want string
	}{
		{"none", *usage(0, 0, 0, 0, 0, 0, microUSD(0)), "no model calls"},
		{"one call", *usage(1, 999, 1, 0, 0, 0, microUSD(5_000_000)), "1 model call · tokens 999 in, 1 out · cost $5.00"},
		{"unpriced", *usage(2, 1234567, 0, 0, 0, 0, nil), "2 model calls · tokens 1,234,567 in, 0 out · cost — (no price for the model)"},
		{"cached", *usage(3, 1, 2, 0, 1000, 0, microUSD(11475)), "3 model calls · tokens 1 in, 2 out, 1,000 cache read · cost $0.011475"},
	} {
		if got := usageText(c.u); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 123456789: "123,456,789", -1234: "-1,234"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
	if costText(nil) != "—" || costText(microUSD(0)) != "$0.00" || costText(microUSD(11475)) != "$0.011475" {
		t.Errorf("costText: %q %q %q", costText(nil), costText(microUSD(0)), costText(microUSD(11475)))
	}
}

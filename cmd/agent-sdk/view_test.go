package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentsdk/agentsdk/api"
)

// updateGolden says whether to rewrite the golden files: go test -run
// TestView -update. The flag is remote_e2e_test.go's (one test binary holds
// both packages, so it cannot be defined twice).
func updateGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// stream builds a session's events as a host would store them.
type stream struct {
	session, turn string
	start         time.Time
	events        []api.Event
}

func newStream() *stream {
	return &stream{session: "sess_demo", start: time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)}
}

// add appends events of the current turn, one second apart.
func (s *stream) add(ps ...api.Payload) *stream {
	for _, p := range ps {
		e := api.NewEvent(p)
		e.SessionID, e.TurnID, e.Seq = s.session, s.turn, int64(len(s.events)+1)
		e.Time = s.start.Add(time.Duration(e.Seq) * time.Second)
		s.events = append(s.events, e)
	}
	return s
}

// at returns the time of the stream's nth second.
func (s *stream) at(n int) time.Time { return s.start.Add(time.Duration(n) * time.Second) }

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func intp(n int) *int { return &n }

// modelTurn is a model turn: deltas and a message, two tool calls (one
// succeeds, one fails) with progress and output in between, a call parked
// for approval, approved and run, and the turn failing mid-answer.
func modelTurn() []api.Event {
	s := newStream()
	s.add(api.SessionCreated{Channel: "http", Mode: api.ModeLocal, Principal: "bearer-token"})
	s.turn = "turn_1"
	s.add(
		api.TurnStarted{Kind: api.TurnModel},
		api.Message{Role: api.RoleUser, Text: "Build and test the checkout service,\nthen deploy it."},
		api.MessageDelta{Text: "I'll build "}, api.MessageDelta{Text: "and test it "}, api.MessageDelta{Text: "first."},
		api.Message{Role: api.RoleAssistant, Text: "I'll build and test it first."},
		api.ActionsRequested{Actions: []api.Action{
			{CallID: "tool_build_1", Tool: "build", Input: raw(`{"target":"checkout","flags":["-trimpath"]}`)},
			{CallID: "tool_test_1", Tool: "test", Input: raw(`{"pkg":"./..."}`)},
		}},
		api.ActionProgress{CallID: "tool_build_1", Tool: "build", Done: 1, Total: 4, Message: "resolving modules"},
		api.ActionOutput{CallID: "tool_build_1", Tool: "build", Text: "go: downloading example.com/cart v1.2.0\n"},
		api.ActionOutput{CallID: "tool_test_1", Tool: "test", Text: "=== RUN   TestCheckout\n--- FAIL: TestCheckout (0.01s)\n    checkout_test.go:42: got 3 items, want 4\n"},
		api.ActionProgress{CallID: "tool_build_1", Tool: "build", Done: 4, Total: 4, Message: "linking"},
		api.ActionResult{CallID: "tool_build_1", Tool: "build", Result: raw(`{"binary":"bin/checkout","size":18234112}`), DurationMs: 1234},
		api.ActionResult{CallID: "tool_test_1", Tool: "test", IsError: true, DurationMs: 5210,
			Result: raw(`"1 test failed: TestCheckout (checkout_test.go:42: got 3 items, want 4)"`)},
		api.MessageDelta{Text: "One test fails; deploying anyway needs approval."},
		api.Message{Role: api.RoleAssistant, Text: "One test fails; deploying anyway needs approval."},
		api.ActionsRequested{Actions: []api.Action{
			{CallID: "tool_deploy_1", Tool: "deploy", Input: raw(`{"service":"checkout","environment":"production"}`)},
		}},
		api.ApprovalRequested{CallID: "tool_deploy_1", Tool: "deploy", Input: raw(`{"service":"checkout","environment":"production"}`),
			RequestedBy: "bearer-token", ExpiresAt: s.at(3600),
			HowToAnswer: api.HowToAnswer{
				CLI:  "agent-sdk approve tool_deploy_1   |   agent-sdk deny tool_deploy_1 --reason …",
				HTTP: `POST /<slug>/v1/session/sess_demo/approvals/tool_deploy_1 {"approved": true|false, "reason": "…"}`,
			}},
		api.ApprovalResolved{CallID: "tool_deploy_1", Tool: "deploy", Status: api.ApprovalApproved, By: "ops@example.com", Reason: "hotfix window", At: s.at(95)},
		api.ActionProgress{CallID: "tool_deploy_1", Tool: "deploy", Message: "rolling out"},
		api.ActionOutput{CallID: "tool_deploy_1", Tool: "deploy", Text: "replica 1/3 ready\nreplica 2/3 re"},
		api.ActionOutput{CallID: "tool_deploy_1", Tool: "deploy", Text: "ady\nreplica 3/3 ready\n"},
		api.ActionResult{CallID: "tool_deploy_1", Tool: "deploy", Result: raw(`{"url":"https://checkout.example.com/?a=1&b=<2>","version":"v1.4.2"}`), DurationMs: 42100},
		api.ArtifactCreated{CallID: "tool_deploy_1", Name: "deploy-report.md", ContentType: "text/markdown", Size: 2048, SHA256: "ab12"},
		api.MessageDelta{Text: "Deployed v1.4.2 to "}, api.MessageDelta{Text: "production, and "},
		api.TurnFailed{Reason: "model provider: 529 overloaded_error: Overloaded", Steps: intp(3)},
	)
	return s.events
}

// replayed is a stream read back with no deltas (as a store might hold
// one), with denied and expired calls, a direct call, chatty output and
// the other kinds.
func replayed() []api.Event {
	s := newStream()
	s.add(api.SessionCreated{Channel: "slack", Mode: api.ModeCloud, Principal: "alice"})
	s.turn = "turn_2"
	s.add(
		api.TurnStarted{Kind: api.TurnModel},
		api.ReminderFired{Key: "follow-up", At: s.at(0), Message: "Promote web & db to production."},
		api.WorkspaceMoved{From: "host-a (/var/lib/agent)", To: "host-b (/var/lib/agent)"},
		api.Message{Role: api.RoleUser, Text: "Promote web & db to production."},
		api.ChannelStarted{Channel: "slack", Context: []string{"thread: #deploys"}},
		api.ReminderSet{Key: "check-later", At: s.at(7200), Message: "Check the promotion went through"},
		api.Message{Role: api.RoleAssistant, Text: "Promoting both.\nThis needs approval."},
		api.ActionsRequested{Actions: []api.Action{
			{CallID: "tool_promote_a", Tool: "promote", Input: raw(`{"service":"web","environment":"production","notes":"a very long note that goes on and on past the preview's limit"}`)},
			{CallID: "tool_promote_b", Tool: "promote", InputText: `{"service":"db",`},
		}},
		api.ApprovalRequested{CallID: "tool_promote_a", Tool: "promote", Input: raw(`{"service":"web"}`), RequestedBy: "alice", ExpiresAt: s.at(90000),
			HowToAnswer: api.HowToAnswer{CLI: "agent-sdk approve tool_promote_a   |   agent-sdk deny tool_promote_a --reason …"}},
		api.ApprovalResolved{CallID: "tool_promote_a", Tool: "promote", Status: api.ApprovalDenied, By: "bob", Reason: "not on a Friday", At: s.at(20)},
		api.ActionResult{CallID: "tool_promote_a", Tool: "promote", IsError: true, Result: raw(`"denied by bob: not on a Friday"`), DurationMs: 3},
		api.ActionResult{CallID: "tool_promote_b", Tool: "promote", IsError: true, Result: raw(`"the input is not valid JSON"`)},
		api.Message{Role: api.RoleAssistant, Text: "Web was denied. I'll run the checks instead."},
		api.ActionsRequested{Actions: []api.Action{{CallID: "tool_checks_1", Tool: "checks"}}},
		api.ActionOutput{CallID: "tool_checks_1", Tool: "checks", Text: "check 1 ok\ncheck 2 ok\ncheck 3 ok\ncheck 4 ok\ncheck 5 ok\ncheck 6 ok\ncheck 7 ok\n"},
		api.ActionOutput{CallID: "tool_checks_1", Tool: "checks", Text: "downloading 10%\rdownloading 60%\rdownloading 100%\n", Truncated: true},
		api.ActionProgress{CallID: "tool_checks_1", Tool: "checks", Done: 7, Total: 7},
		api.ActionProgress{CallID: "tool_checks_1", Tool: "checks", Done: 7, Total: 7},
		api.ActionResult{CallID: "tool_checks_1", Tool: "checks", Result: raw(`null`), DurationMs: 65400},
		api.SessionTagged{Key: "ticket", Value: "OPS-12"},
		api.Message{Role: api.RoleAssistant, Text: "All checks pass."},
		api.TurnCompleted{Steps: intp(3)},
	)
	s.turn = "turn_3"
	s.add(
		api.TurnStarted{Kind: api.TurnCall, Tool: "hello"},
		api.ActionResult{CallID: "tool_hello_1", Tool: "hello", Result: raw(`"Hello, <Ada & Zoë>!"`), DurationMs: 2, Direct: true},
		api.TurnCompleted{},
	)
	s.turn = "turn_4"
	s.add(
		api.TurnStarted{Kind: api.TurnModel},
		api.Message{Role: api.RoleUser, Text: "promote again"},
		api.ActionsRequested{Actions: []api.Action{{CallID: "tool_promote_c", Tool: "promote", Input: raw(`{"service":"web"}`)}}},
		api.ApprovalRequested{CallID: "tool_promote_c", Tool: "promote", Input: raw(`{"service":"web"}`), RequestedBy: "alice", ExpiresAt: s.at(40)},
		api.ApprovalResolved{CallID: "tool_promote_c", Tool: "promote", Status: api.ApprovalExpired, At: s.at(40)},
		api.ActionResult{CallID: "tool_promote_c", Tool: "promote", IsError: true, DurationMs: 0,
			Result: raw(`"not run: nobody approved the call before it expired at 2026-03-14T09:30:40Z"`)},
		api.TurnFailed{Reason: "the step limit (1) was reached"},
	)
	return s.events
}

// render feeds events to a view and returns what it wrote.
func render(v *view, events []api.Event) string {
	var out bytes.Buffer
	v.w, v.loc = &out, time.UTC
	for _, e := range events {
		v.event(e)
	}
	v.end()
	return out.String()
}

func checkViewGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "view", name+".golden")
	if updateGolden() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestView -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: the view changed\n--- got:\n%s\n--- want:\n%s", name, got, want)
	}
}

// The view of a stream, not on a terminal and without colour, is compared
// with testdata/view/*.golden (go test -run TestView -update rewrites them).
func TestViewGolden(t *testing.T) {
	for _, c := range []struct {
		name   string
		url    string
		events []api.Event
	}{
		{"model-turn", "", modelTurn()},
		{"replayed", "http://127.0.0.1:3000/demo", replayed()},
		{"long-session", "", longSession()},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := render(&view{url: c.url}, c.events)
			if strings.ContainsAny(got, "\x1b\r") {
				t.Errorf("escape sequences or carriage returns off a terminal:\n%q", got)
			}
			checkViewGolden(t, c.name, got)
		})
	}
}

// On a terminal, what stays on screen once the turn is over is the
// conversation with each call on one line, its outcome (golden file
// testdata/view/*-tty.golden, the screen as a terminal shows it).
func TestViewTTYScreen(t *testing.T) {
	for name, events := range map[string][]api.Event{"model-turn": modelTurn(), "replayed": replayed()} {
		var out bytes.Buffer
		v := &view{w: &out, tty: true, color: true, width: func() int { return 100 }, loc: time.UTC}
		screen := &term{}
		for _, e := range events {
			v.event(e)
			screen.write(t, out.String())
			out.Reset()
		}
		v.end()
		screen.write(t, out.String())
		checkViewGolden(t, name+"-tty", screen.String()+"\n")
	}
}

// sgr matches the colour sequences the view writes.
var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// Colour only when asked: the same lines, styled.
func TestViewColor(t *testing.T) {
	for name, events := range map[string][]api.Event{"model-turn": modelTurn(), "replayed": replayed()} {
		plain := render(&view{}, events)
		colored := render(&view{color: true}, events)
		if strings.Contains(plain, "\x1b") {
			t.Errorf("%s: colour without color:\n%q", name, plain)
		}
		if !sgr.MatchString(colored) {
			t.Errorf("%s: no colour with color:\n%q", name, colored)
		}
		if got := sgr.ReplaceAllString(colored, ""); got != plain {
			t.Errorf("%s: without its colours, the coloured view is not the plain one:\n%s\n---\n%s", name, got, plain)
		}
	}
	for _, want := range []string{"\x1b[32m✓ \x1b[0m", "\x1b[31m✗ \x1b[0m", "\x1b[1mbuild\x1b[0m"} {
		if colored := render(&view{color: true}, modelTurn()); !strings.Contains(colored, want) {
			t.Errorf("the coloured view lacks %q:\n%q", want, colored)
		}
	}
}

// NO_COLOR (any non-empty value) turns colour off; only a terminal gets
// it at all.
func TestViewNoColor(t *testing.T) {
	t.Setenv("TERM", "xterm-256color")
	t.Setenv("NO_COLOR", "")
	if !colorWanted(true) || colorWanted(false) {
		t.Errorf("without NO_COLOR: colour on a terminal %v, elsewhere %v", colorWanted(true), colorWanted(false))
	}
	t.Setenv("NO_COLOR", "1")
	if colorWanted(true) {
		t.Error("NO_COLOR=1 still gets colour")
	}
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "dumb")
	if colorWanted(true) {
		t.Error("a dumb terminal gets colour")
	}
	// A file is not a terminal: plain and append-only.
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t.Setenv("TERM", "xterm-256color")
	if v := newView(f, ""); v.tty || v.color {
		t.Errorf("a file: tty %v, color %v", v.tty, v.color)
	}
	if line := (remoteCall{tool: "x"}).progressLine(f); line != nil {
		t.Error("a progress line on a file")
	}
}

// What a tool, the model or a person writes cannot drive the terminal:
// control characters (escape sequences, bells, carriage returns, C1
// controls) and bidirectional overrides are dropped everywhere.
func TestViewControlCharacters(t *testing.T) {
	const hostile = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\r\u009b1A\u202Egnp.exe\x00\x7f"
	s := newStream()
	s.turn = "turn_x"
	s.add(
		api.TurnStarted{Kind: api.TurnModel},
		api.Message{Role: api.RoleUser, Text: "hi " + hostile},
		api.MessageDelta{Text: "answer " + hostile},
		api.Message{Role: api.RoleAssistant, Text: "answer " + hostile},
		api.ActionsRequested{Actions: []api.Action{{CallID: "tool_evil_1", Tool: "evil", Input: raw(strconv.Quote(hostile))}}},
		api.ActionProgress{CallID: "tool_evil_1", Tool: "evil", Done: 1, Message: hostile},
		api.ActionOutput{CallID: "tool_evil_1", Tool: "evil", Text: "out " + hostile + "\nmore " + hostile},
		api.ApprovalRequested{CallID: "tool_evil_1", Tool: "evil", RequestedBy: hostile, HowToAnswer: api.HowToAnswer{CLI: "agent-sdk approve " + hostile}},
		api.ApprovalResolved{CallID: "tool_evil_1", Tool: "evil", Status: api.ApprovalApproved, By: hostile, Reason: hostile},
		api.ActionResult{CallID: "tool_evil_1", Tool: "evil", IsError: true, Result: raw(strconv.Quote("result " + hostile))},
		api.ArtifactCreated{Name: hostile, ContentType: hostile},
		api.SessionTagged{Key: hostile, Value: hostile},
		api.TurnFailed{Reason: hostile},
	)
	for _, v := range []*view{{}, {color: true}, {tty: true, color: true, width: func() int { return 200 }}} {
		got := render(v, s.events)
		ours := sgr.ReplaceAllString(got, "")
		ours = strings.NewReplacer("\r"+eraseLine, "", cursorUp+eraseLine, "").Replace(ours)
		for _, bad := range []string{"\x1b", "\x07", "\r", "\u009b", "\u202E", "\x00", "\x7f"} {
			if strings.Contains(ours, bad) {
				t.Errorf("tty %v, color %v: %q got through:\n%q", v.tty, v.color, bad, got)
			}
		}
		if !strings.Contains(ours, "]0;pwned[2J[31mred1Agnp.exe") {
			t.Errorf("tty %v, color %v: the printable rest should stay:\n%q", v.tty, v.color, got)
		}
	}
}

// term is a tiny terminal: enough of one to see what the view leaves on
// screen (text, \r, \n, erase-line, cursor-up, SGR).
type term struct {
	rows [][]rune
	row  int
	col  int
}

func (s *term) write(t *testing.T, b string) {
	t.Helper()
	for i := 0; i < len(b); {
		if b[i] == '\x1b' {
			m := regexp.MustCompile(`^\x1b\[([0-9;]*)([A-Za-z])`).FindStringSubmatch(b[i:])
			if m == nil {
				t.Fatalf("an escape sequence the view should not write: %q", b[i:])
			}
			i += len(m[0])
			switch m[2] + ":" + m[1] {
			case "K:2":
				s.line()
				s.rows[s.row] = nil
			case "A:1":
				if s.row--; s.row < 0 {
					t.Fatalf("the cursor went above the screen: %q", b)
				}
			default:
				if m[2] != "m" {
					t.Fatalf("an escape sequence the view should not write: %q", m[0])
				}
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(b[i:])
		i += n
		switch r {
		case '\r':
			s.col = 0
		case '\n':
			s.row, s.col = s.row+1, 0
		default:
			s.line()
			for len(s.rows[s.row]) <= s.col {
				s.rows[s.row] = append(s.rows[s.row], ' ')
			}
			s.rows[s.row][s.col] = r
			s.col++
		}
	}
}

func (s *term) line() {
	for len(s.rows) <= s.row {
		s.rows = append(s.rows, nil)
	}
}

func (s *term) String() string {
	var lines []string
	for _, r := range s.rows {
		lines = append(lines, strings.TrimRight(string(r), " "))
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// On a terminal the running calls are a live region, rewritten in place:
// each call's line fills in with its progress and output, then its outcome
// takes a line of its own above what still runs.
func TestViewTTY(t *testing.T) {
	var out bytes.Buffer
	v := &view{w: &out, tty: true, width: func() int { return 40 }, loc: time.UTC}
	screen := &term{}
	s := newStream()
	s.turn = "turn_1"
	steps := []struct {
		event  api.Payload
		screen string
	}{
		{api.TurnStarted{Kind: api.TurnModel}, "── turn turn_1 ──"},
		{api.MessageDelta{Text: "Building."}, "── turn turn_1 ──\nBuilding."},
		{api.Message{Role: api.RoleAssistant, Text: "Building."}, "── turn turn_1 ──\nBuilding."},
		{api.ActionsRequested{Actions: []api.Action{
			{CallID: "b", Tool: "build", Input: raw(`{"target":"all","verbose":true,"jobs":8}`)},
			{CallID: "t", Tool: "test", Input: raw(`{}`)},
		}}, "── turn turn_1 ──\nBuilding.\n▸ build({\"jobs\":8,\"target\":\"all\",\"verb…\n▸ test({})"},
		{api.ActionProgress{CallID: "b", Tool: "build", Done: 42, Total: 100, Message: "step 42"},
			"── turn turn_1 ──\nBuilding.\n⠿ build 42/100 step 42\n▸ test({})"},
		{api.ActionOutput{CallID: "t", Tool: "test", Text: "ok 1\nok 2\nok 3\nok 4\nrunning 5"},
			"── turn turn_1 ──\nBuilding.\n⠿ build 42/100 step 42\n▸ test({})\n  │ ok 2\n  │ ok 3\n  │ ok 4\n  │ running 5"},
		{api.ActionResult{CallID: "t", Tool: "test", IsError: true, DurationMs: 5, Result: raw(`"test 5 failed"`)},
			"── turn turn_1 ──\nBuilding.\n✗ test 5ms test 5 failed\n⠿ build 42/100 step 42"},
		{api.ActionProgress{CallID: "b", Tool: "build", Done: 100, Total: 100, Message: "linking"},
			"── turn turn_1 ──\nBuilding.\n✗ test 5ms test 5 failed\n⠿ build 100/100 linking"},
		{api.ActionResult{CallID: "b", Tool: "build", DurationMs: 120, Result: raw(`"ok"`)},
			"── turn turn_1 ──\nBuilding.\n✗ test 5ms test 5 failed\n✓ build 120ms ok"},
		{api.TurnCompleted{Steps: intp(1)},
			"── turn turn_1 ──\nBuilding.\n✗ test 5ms test 5 failed\n✓ build 120ms ok\n── turn completed after 1 step ──"},
	}
	rewrote := false
	for _, step := range steps {
		s.add(step.event)
		out.Reset()
		v.event(s.events[len(s.events)-1])
		rewrote = rewrote || strings.Contains(out.String(), "\r"+eraseLine)
		screen.write(t, out.String())
		if got := screen.String(); got != step.screen {
			t.Fatalf("after %s (wrote %q):\n%s\nwant:\n%s", step.event.EventKind(), out.String(), got, step.screen)
		}
	}
	if !rewrote {
		t.Error("the view never rewrote a line in place")
	}
	out.Reset()
	v.end()
	if out.String() != "" {
		t.Errorf("end with nothing running wrote %q", out.String())
	}
}

// An event that changes nothing on screen writes nothing: the live region
// is drawn again only when it changed.
func TestViewTTYQuiet(t *testing.T) {
	var out bytes.Buffer
	v := &view{w: &out, tty: true, width: func() int { return 80 }}
	s := newStream()
	s.add(
		api.ActionsRequested{Actions: []api.Action{{CallID: "b", Tool: "build"}}},
		api.ActionProgress{CallID: "b", Tool: "build", Done: 1, Total: 2},
		api.ActionOutput{CallID: "b", Tool: "build", Text: ""},
		api.ActionProgress{CallID: "b", Tool: "build", Done: 1, Total: 2},
		api.ActionProgress{CallID: "b", Tool: "build", Done: 2, Total: 2},
	)
	for i, e := range s.events {
		out.Reset()
		v.event(e)
		if quiet := i == 2 || i == 3; quiet != (out.Len() == 0) {
			t.Errorf("event %d (%s) wrote %q", i+1, e.Kind, out.String())
		}
	}
}

// A parked call stays in the live region, waiting, under the commands
// that decide it; the view ends on a new line even mid-call.
func TestViewTTYParked(t *testing.T) {
	var out bytes.Buffer
	v := &view{w: &out, tty: true, width: func() int { return 80 }, loc: time.UTC, url: "http://h/x"}
	s := newStream()
	s.turn = "turn_1"
	s.add(
		api.ActionsRequested{Actions: []api.Action{{CallID: "tool_deploy_1", Tool: "deploy", Input: raw(`{"env":"prod"}`)}}},
		api.ApprovalRequested{CallID: "tool_deploy_1", Tool: "deploy", RequestedBy: "bearer-token", ExpiresAt: s.at(3600),
			HowToAnswer: api.HowToAnswer{CLI: "agent-sdk approve tool_deploy_1   |   agent-sdk deny tool_deploy_1 --reason …"}},
	)
	screen := &term{}
	for _, e := range s.events {
		v.event(e)
	}
	v.end()
	screen.write(t, out.String())
	want := "⏸ deploy needs approval (requested by bearer-token, expires 10:30:00)\n" +
		"    agent-sdk approve tool_deploy_1 --url http://h/x\n" +
		"    agent-sdk deny tool_deploy_1 --reason … --url http://h/x\n" +
		"▸ deploy({\"env\":\"prod\"}) waiting for approval"
	if got := screen.String(); got != want {
		t.Errorf("screen:\n%s\nwant:\n%s", got, want)
	}
	if !strings.HasSuffix(out.String(), "\n") {
		t.Errorf("the view did not end its line: %q", out.String())
	}
}

// call's progress line: rewritten in place, cut to the terminal's width,
// cleared before the outcome.
func TestViewCallProgress(t *testing.T) {
	var out bytes.Buffer
	p := &callProgress{w: &out, tool: "build", width: func() int { return 30 }}
	screen := &term{}
	p.update(api.ActionProgress{CallID: "c", Tool: "build", Done: 42, Total: 100, Message: "step 42"})
	screen.write(t, out.String())
	if got := screen.String(); got != "⠿ build 42/100 step 42" {
		t.Errorf("progress: %q", got)
	}
	out.Reset()
	p.update(api.ActionOutput{CallID: "c", Tool: "build", Text: "compiling a very long package name\x1b[2J\n"})
	if !strings.HasPrefix(out.String(), "\r"+eraseLine) {
		t.Errorf("the line was not rewritten: %q", out.String())
	}
	screen.write(t, out.String())
	if got := screen.String(); got != "⠿ build 42/100 step 42 │ com…" {
		t.Errorf("progress and output: %q", got)
	}
	p.update(api.ActionProgress{Done: 3})
	screen.write(t, out.String())
	out.Reset()
	p.clear()
	screen.write(t, out.String())
	if got := screen.String(); got != "" || out.String() != "\r"+eraseLine {
		t.Errorf("after clear: %q (wrote %q)", got, out.String())
	}
	out.Reset()
	p.clear()
	var none *callProgress
	none.clear()
	if out.Len() != 0 {
		t.Errorf("clearing a cleared line wrote %q", out.String())
	}
}

// Previews: strings as they are, JSON compact without HTML escapes, cut
// to their width by columns.
func TestViewPreviews(t *testing.T) {
	for in, want := range map[string]string{
		`"Hello, <Ada & Zoë>!"`:         "Hello, <Ada & Zoë>!",
		`{"b":1.50,"a":"<x>"}`:          `{"a":"<x>","b":1.50}`,
		`null`:                          "",
		``:                              "",
		`not json`:                      "not json",
		`[1, 2,  3]`:                    "[1,2,3]",
		"\"line 1\\nline 2\\t\\u001b\"": "line 1\nline 2\t\x1b",
	} {
		if got := jsonPreview(raw(in)); got != want {
			t.Errorf("jsonPreview(%s) = %q, want %q", in, got, want)
		}
	}
	if got := fit("日本語のテキスト", 7); got != "日本語…" || textWidth(got) != 7 {
		t.Errorf("fit wide: %q (%d columns)", got, textWidth(got))
	}
	if got := fit("abc", 3); got != "abc" {
		t.Errorf("fit exact: %q", got)
	}
	for ms, want := range map[int64]string{0: "0ms", 999: "999ms", 1234: "1.2s", 65400: "1m5s"} {
		if got := duration(ms); got != want {
			t.Errorf("duration(%d) = %q, want %q", ms, got, want)
		}
	}
	if got := clean("a\tb\nc\x1b[0m\u202Ed"); got != "a b c[0md" {
		t.Errorf("clean: %q", got)
	}
}

// longSession is a turn that clears old results and compacts the
// conversation, a compact turn, and a turn resumed after its host died.
func longSession() []api.Event {
	s := newStream()
	s.turn = "turn_1"
	s.add(api.TurnStarted{Kind: api.TurnModel}, api.Message{Role: api.RoleUser, Text: "And now?"},
		api.ContextCleared{MinBytes: 2048, Results: 3, ThroughSeq: 410, TokensBefore: 165_000, TokensAfter: 158_000},
		api.ModelUsage{Provider: "anthropic", Model: "claude-haiku-4-5", Purpose: "compaction", InputTokens: 150_000, OutputTokens: 800, Reported: true},
		api.ContextCompacted{Summary: "The user is fixing the checkout tests.\nThree of five pass.", ThroughSeq: 410, TokensBefore: 158_000, TokensAfter: 9_200, Trigger: "auto"},
		api.Message{Role: api.RoleAssistant, Text: "Two to go."}, api.TurnCompleted{Steps: intp(1)})
	s.turn = "turn_2"
	s.add(api.TurnStarted{Kind: api.TurnCompact},
		api.ContextCompacted{Summary: "Checkout tests: three of five pass.", ThroughSeq: 430, TokensBefore: 12_000, TokensAfter: 2_100, Trigger: "manual"},
		api.TurnCompleted{})
	s.turn = "turn_3"
	s.add(api.TurnStarted{Kind: api.TurnModel}, api.Message{Role: api.RoleUser, Text: "Run them again."},
		api.TurnResumed{Attempt: 1, From: "host-a:/var/lib/agent"}, api.Message{Role: api.RoleAssistant, Text: "All pass."}, api.TurnCompleted{Steps: intp(1)})
	return s.events
}

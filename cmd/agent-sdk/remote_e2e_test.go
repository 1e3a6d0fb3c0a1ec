package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/remote")

// volatile are the parts of the CLI's output that change from run to run:
// ports, ids, times and durations. goldenText replaces them.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`http://127\.0\.0\.1:\d+`), "http://HOST"},
	{regexp.MustCompile(`\b(sess|turn)_[a-z2-7]{16}\b`), "${1}_ID"},
	{regexp.MustCompile(`\btool_([a-z0-9_]+)_[a-z2-7]{16}\b`), "tool_${1}_ID"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "TIME"},
	{regexp.MustCompile(`("durationMs": ?)\d+`), "${1}N"},
	{regexp.MustCompile(`(?m)^([✓✗] \S+) \d+(\.\d)?(ms|s)\b`), "${1} DURATION"}, // the view's call lines
}

// goldenText is what a golden file holds for one run of the CLI.
func goldenText(args []string, r result) string {
	text := fmt.Sprintf("$ agent-sdk %s\nexit %d\n-- stdout --\n%s-- stderr --\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	for _, v := range volatile {
		text = v.re.ReplaceAllString(text, v.with)
	}
	return text
}

// checkGolden compares a run with testdata/remote/<name>.golden, or
// rewrites the file with -update.
func checkGolden(t *testing.T, name string, args []string, r result) {
	t.Helper()
	path := filepath.Join("testdata", "remote", name+".golden")
	got := goldenText(args, r)
	if *update {
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
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: the output changed\n--- got:\n%s\n--- want:\n%s", name, got, want)
	}
}

// runUntil runs agent-sdk in dir until its standard output has n lines,
// then interrupts it, as a person following a stream would.
func runUntil(t *testing.T, dir string, n int, args ...string) result {
	t.Helper()
	cmd := exec.Command(cliBin, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer stop.Stop()
	var stdout strings.Builder
	sc := bufio.NewScanner(pipe)
	for lines := 0; sc.Scan(); {
		stdout.WriteString(sc.Text() + "\n")
		if lines++; lines == n {
			cmd.Process.Signal(os.Interrupt)
		}
	}
	err = cmd.Wait()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("running agent-sdk %v: %v", args, err)
	}
	return result{stdout.String(), stderr.String(), code}
}

// The CLI's --url commands against a real served agent: what each prints,
// and its exit code, is compared with testdata/remote/*.golden (go test
// -run TestRemoteGolden -update rewrites them). The CLI is a client of the
// HTTP API; these files pin what people and scripts see of it.
func TestRemoteGolden(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "golden")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "agent", "tools", "promote.go"), []byte(gatedTools["promote.go"]), 0o644)
	os.WriteFile(filepath.Join(dir, "agent", "agent.yaml"), []byte("model:\n  provider: anthropic\n  name: fake\n"), 0o644)
	fake := fakemodel.New(
		fakemodel.Reply{Text: []string{"Greeting <you> & ", "Zoë ✓"}, Calls: []fakemodel.Call{{ID: "m1", Name: "hello", Input: `{"name":"<Ada & Zoë>"}`}}},
		fakemodel.Reply{Text: []string{"Said hello."}},
		fakemodel.Reply{Text: []string{"Again."}},
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "m2", Name: "promote", Input: `{"service":"web","environment":"production"}`}}},
	)
	defer fake.Close()
	env := []string{"ANTHROPIC_BASE_URL=" + fake.AnthropicURL(), "ANTHROPIC_API_KEY=k"}
	s := startServerEnv(t, dir, env, "--approval-wait", "300ms")
	u := strings.TrimSuffix(s.base, "/v1")

	step := func(name string, args ...string) result {
		t.Helper()
		r := run(t, dir, "", args...)
		checkGolden(t, name, args, r)
		return r
	}
	lastSeq := func(sessionID string) int {
		t.Helper()
		_, v, _ := s.request(t, "GET", "/session/"+sessionID, s.token, "")
		return int(v["session"].(map[string]any)["lastSeq"].(float64))
	}

	// Tools and direct calls: results with markup and unicode, a tool
	// error, refused calls, a wrong token.
	step("tools", "tools", "--url", u)
	step("tools-json", "tools", "--url", u+"/v1/", "--json")
	step("call", "call", "hello", "--url", u, "--input", `{"name":"<b>Zoë & \"co\"</b> ✓"}`)
	step("call-tool-error", "call", "fail", "--url", u)
	step("call-unknown-tool", "call", "nope", "--url", u)
	step("call-invalid-input", "call", "hello", "--url", u, "--input", `{"nmae":"x","n":1.50}`)
	step("call-not-an-object", "call", "hello", "--url", u, "--input", `[1,2]`)
	step("call-wrong-token", "call", "hello", "--url", u, "--token", "wrong")

	// A gated call: 202 with --no-wait; one that waits until it is approved.
	r := step("call-no-wait", "call", "promote", "--url", u, "--no-wait", "--input", `{"service":"api","environment":"production"}`)
	var parked struct{ CallID string }
	if err := json.Unmarshal([]byte(r.stdout), &parked); err != nil || parked.CallID == "" {
		t.Fatalf("call --no-wait: %+v", r)
	}
	waiting := make(chan result, 1)
	waitArgs := []string{"call", "promote", "--url", u, "--input", `{"service":"db & <co>","environment":"production"}`}
	go func() { waiting <- run(t, dir, "", waitArgs...) }()
	var dbCall string
	for deadline := time.Now().Add(30 * time.Second); dbCall == ""; time.Sleep(20 * time.Millisecond) {
		_, v, _ := s.request(t, "GET", "/approvals?status=pending", s.token, "")
		for _, a := range v["approvals"].([]any) {
			if a := a.(map[string]any); a["callId"] != parked.CallID {
				dbCall = a["callId"].(string)
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiting call never parked")
		}
	}
	if status, v, _ := s.request(t, "POST", "/approvals/"+dbCall, s.token, `{"approved":true,"onBehalfOf":"golden"}`); status != 200 {
		t.Fatalf("approving %s: %d %v", dbCall, status, v)
	}
	checkGolden(t, "call-waits-for-approval", waitArgs, <-waiting)

	// Model turns: one followed as it runs, one followed as JSON, one that
	// parks a gated call.
	r = step("send-follow", "send", "new", "Say hello to <Ada> & Zoë", "--url", u, "--follow")
	first := strings.TrimSpace(strings.TrimPrefix(strings.Split(r.stderr, ",")[0], "session "))
	step("send-follow-json", "send", first, "again", "--url", u, "--follow", "--json")
	r = step("send", "send", "new", "promote web", "--url", u)
	second := strings.TrimSpace(r.stdout)
	waitEvent(t, s, second, func(kind, data string) bool { return kind == "action.approval_requested" })

	// Approvals: listed, denied, refused.
	step("approvals", "approvals", "--url", u)
	step("approvals-json", "approvals", "--url", u, "--json")
	step("deny", "deny", parked.CallID, "--reason", "not <on> a Friday & ✓", "--by", "ops", "--url", u)
	step("approve-after-deny", "approve", parked.CallID, "--url", u)
	step("approve-unknown", "approve", "tool_nope_x", "--url", u)
	step("deny-without-reason", "deny", parked.CallID, "--url", u)
	step("approvals-denied", "approvals", "--url", u, "--status", "denied")
	step("approvals-all-json", "approvals", "--url", u, "--status", "", "--json")
	step("approvals-bad-status", "approvals", "--url", u, "--status", "bogus")

	// Sessions and their events: stored, and followed until interrupted.
	step("sessions", "sessions", "--url", u)
	step("sessions-json", "sessions", "--url", u, "--json")
	step("sessions-limit", "sessions", "--url", u, "--limit", "1")
	step("events", "events", first, "--url", u, "--no-follow")
	step("events-json", "events", first, "--url", u, "--no-follow", "--json")
	step("events-json-after", "events", first, "--url", u, "--no-follow", "--json", "--after", "5")
	step("events-unknown-session", "events", "sess_nope", "--url", u, "--no-follow")
	step("events-follow-unknown-session", "events", "sess_nope", "--url", u)
	n := lastSeq(first)
	args := []string{"events", first, "--url", u}
	// The view has fewer lines than events: wait for those --no-follow prints.
	shown := strings.Count(run(t, dir, "", "events", first, "--url", u, "--no-follow").stdout, "\n")
	checkGolden(t, "events-follow", args, runUntil(t, dir, shown, args...))
	args = []string{"events", first, "--url", u, "--json", "--after", "3"}
	checkGolden(t, "events-follow-json", args, runUntil(t, dir, n-3, args...))

	// --url itself: malformed, without a slug, nobody there.
	step("url-malformed", "sessions", "--url", "ftp://127.0.0.1/golden")
	step("url-without-slug", "sessions", "--url", "http://127.0.0.1:3000/")
	step("unreachable-sessions", "sessions", "--url", "http://127.0.0.1:1/golden")
	step("unreachable-call", "call", "hello", "--url", "http://127.0.0.1:1/golden")
	step("unreachable-events", "events", first, "--url", "http://127.0.0.1:1/golden", "--no-follow")
}

// events follows a session's stream until the host shuts down, and then
// exits 0 with what it printed, as the CLI always has. (The Go client
// resumes across a restart instead; see package client's tests.)
func TestEventsUntilHostStops(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := startServer(t, shared, "--addr", addr)
	_, v, _ := s.request(t, "POST", "/session", s.token, `{}`)
	id := v["sessionId"].(string)
	call := func(s *server, name string) {
		t.Helper()
		if status, v, _ := s.request(t, "POST", "/tools/hello", s.token, `{"input":{"name":"`+name+`"},"sessionId":"`+id+`"}`); status != 200 {
			t.Fatalf("call in the session: %d %v", status, v)
		}
	}
	call(s, "before")

	cmd := exec.Command(cliBin, "events", id, "--url", strings.TrimSuffix(s.base, "/v1"))
	cmd.Dir = shared
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer stop.Stop()
	sc := bufio.NewScanner(pipe)
	var lines []string
	readTo := func(n int) {
		t.Helper()
		for len(lines) < n && sc.Scan() {
			lines = append(lines, sc.Text())
		}
		if len(lines) < n {
			t.Fatalf("events printed %d lines, want %d:\n%s\n%s", len(lines), n, strings.Join(lines, "\n"), stderr.String())
		}
	}
	readTo(5) // the session's usage, session.created, and the call's turn
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Wait()
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := cmd.Wait(); err != nil || len(lines) != 5 {
		t.Errorf("the host stopped: %v, %d lines\n%s\n%s", err, len(lines), strings.Join(lines, "\n"), stderr.String())
	}
	for i, prefix := range []string{"Σ session " + id + ": no model calls", "● session ", "── turn ", "✓ hello ", "── turn completed"} {
		if !strings.HasPrefix(lines[i], prefix) {
			t.Errorf("line %d: %q", i+1, lines[i])
		}
	}
}

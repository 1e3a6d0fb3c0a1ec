package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// waitLine reads sc until a line matches re, and returns its submatches
// and what was read; nil when the stream ended first.
func waitLine(sc *bufio.Scanner, re *regexp.Regexp) ([]string, string) {
	var seen strings.Builder
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			return m, seen.String()
		}
	}
	return nil, seen.String()
}

// parkedWithin is how soon agent-sdk call must say that a call waits for
// approval: generous for a loaded two-core machine, and well under the 30 s
// a direct call used to wait silently for its decision.
const parkedWithin = 10 * time.Second

// runPrinted runs a command agent-sdk printed (agent-sdk and its
// arguments, none quoted) with the CLI under test, the host at url
// standing for the one it names when url is not "".
func runPrinted(t *testing.T, dir, line, url string) result {
	t.Helper()
	args := strings.Fields(line)
	if len(args) < 2 || args[0] != "agent-sdk" {
		t.Fatalf("not an agent-sdk command: %q", line)
	}
	for i := range args {
		if url != "" && i > 0 && args[i-1] == "--url" {
			args[i] = url
		}
	}
	return run(t, dir, "", args[1:]...)
}

// promoteAgent makes an agent named name whose promote tool needs
// approval (gatedTools).
func promoteAgent(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent", "tools", "promote.go"), []byte(gatedTools["promote.go"]), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startParkedCall starts agent-sdk call of the gated promote tool in dir
// (with args: --url, say) and reads its stderr until it says the call
// waits for approval, which it must say at once (parkedWithin): the
// command, its stdout, the rest of its stderr, and the line's submatches
// (the call id).
func startParkedCall(t *testing.T, dir string, args ...string) (*exec.Cmd, *bytes.Buffer, *bufio.Scanner, []string) {
	t.Helper()
	cmd := exec.Command(cliBin, append([]string{"call", "promote", "--dir", dir, "--input", `{"service":"api","environment":"production"}`}, args...)...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(pipe)
	head, seen := waitLine(sc, regexp.MustCompile(`^call (tool_promote_\S+) is waiting for approval:$`))
	if head == nil {
		t.Fatalf("call ended without saying it waits:\n%s", seen)
	}
	latency := time.Since(start)
	t.Logf("call %s printed that the call waits %v after it started", strings.Join(args, " "), latency)
	if latency > parkedWithin {
		t.Errorf("call said the call waits only %v after it started, not at once (within %v)", latency, parkedWithin)
	}
	return cmd, &stdout, sc, head
}

// agent-sdk call --url of a gated call says at once that it waits, with
// the commands that decide it, though the host would hold the request for
// an hour (--approval-wait 1h): the approve line it prints, run as
// printed, ends the call it waits for, which could not be if the line came
// only after the call's wait. Then call prints the outcome once the call
// is approved.
func TestCallParkedSaysAtOnce(t *testing.T) {
	dir := promoteAgent(t, "gated")
	s := startServer(t, dir, "--approval-wait", "1h")
	url := strings.TrimSuffix(s.base, "/v1")

	cmd, stdout, sc, head := startParkedCall(t, dir, "--url", url)
	exited := make(chan error, 1)
	id := head[1]
	approve, deny := "agent-sdk approve "+id+" --url "+url, `agent-sdk deny `+id+` --reason "…" --url `+url
	for _, want := range []string{approve, deny} {
		if !sc.Scan() || sc.Text() != "  "+want {
			t.Fatalf("after %q: %q, want %q", head[0], sc.Text(), "  "+want)
		}
	}
	go func() {
		for sc.Scan() { // the rest of stderr, until call exits
		}
		exited <- cmd.Wait()
	}()
	// The call is parked, and call still waits for it.
	if r := run(t, dir, "", "approvals", "--url", url); !strings.Contains(r.stdout, id+"  promote  pending  direct call") {
		t.Fatalf("approvals while call waits: %+v", r)
	}
	select {
	case err := <-exited:
		t.Fatalf("call exited before the decision: %v\n%s", err, stdout.String())
	default:
	}
	if r := runPrinted(t, dir, approve, ""); r.code != 0 {
		t.Fatalf("%s: %+v", approve, r)
	}
	if err := <-exited; err != nil {
		t.Fatalf("call after approval: %v\n%s", err, stdout.String())
	}
	// An approved call prints the outcome a call that ran prints.
	var out struct {
		OK       bool              `json:"ok"`
		ToolName string            `json:"toolName"`
		CallID   string            `json:"callId"`
		Result   map[string]string `json:"result"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || !out.OK || out.ToolName != "promote" || out.CallID != id || out.Result["promoted"] != "api" || out.Result["to"] != "production" {
		t.Errorf("call's outcome: %v\n%s", err, stdout.String())
	}
}

// agent-sdk call --dir (no host: the agent's binary runs the call on the
// serve host's store) of a gated call says at once that it waits, in the
// lines call --url prints (README.md's sample), naming the serve host at
// its default address; the deny line it prints, run against this agent's
// serve host, ends the call it waits for with the denial.
func TestCallDirParked(t *testing.T) {
	dir := promoteAgent(t, "myagent")
	s := startServer(t, dir) // builds the agent, and decides what the call parks
	url := strings.TrimSuffix(s.base, "/v1")

	cmd, stdout, sc, head := startParkedCall(t, dir) // the agent built already
	id, defaultURL := head[1], "http://127.0.0.1:3000/myagent"
	deny := `agent-sdk deny ` + id + ` --reason "…" --url ` + defaultURL
	for _, want := range []string{
		"  agent-sdk approve " + id + " --url " + defaultURL,
		"  " + deny,
		"  (through this agent's serve host, agent-sdk serve, which shares this call's store)",
	} {
		if !sc.Scan() || sc.Text() != want {
			t.Fatalf("after %q: %q, want %q", head[0], sc.Text(), want)
		}
	}
	exited := make(chan error, 1)
	go func() {
		for sc.Scan() {
		}
		exited <- cmd.Wait()
	}()
	if r := run(t, dir, "", "approvals", "--url", url); !strings.Contains(r.stdout, id+"  promote  pending  direct call") {
		t.Fatalf("the serve host's approvals while call --dir waits: %+v", r)
	}
	if r := runPrinted(t, dir, deny, url); r.code != 0 {
		t.Fatalf("%s: %+v", deny, r)
	}
	if err := <-exited; err == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Errorf("call after the denial: %v, want exit 1 (its result an error)\n%s", err, stdout.String())
	}
	var out struct {
		CallID  string `json:"callId"`
		Status  string `json:"status"`
		IsError bool   `json:"isError"`
		Result  string `json:"result"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || out.CallID != id || !out.IsError || !strings.Contains(out.Result, "denied") {
		t.Errorf("call's outcome after the denial: %v\n%s", err, stdout.String())
	}
}

// handoffTool hands its message to a session of its own with call.Send,
// and returns the session at once.
const handoffTool = `package tools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

type HandoffInput struct {
	Message string ` + "`" + `json:"message"` + "`" + `
}

var _ = tool.Define(tool.Config{Description: "Hand a message to a session of its own."}, func(ctx context.Context, call *tool.Call, in HandoffInput) (any, error) {
	id, _, err := call.Send(ctx, "handoff", in.Message, nil)
	return id, err
})
`

// A tool that starts a model turn with call.Send, run by agent-sdk call
// --dir, gets a turn of agent.yaml's model (not "no model is
// configured"); the call's host waits for that turn to end before it
// exits, saying so, and says how it ended.
func TestCallDirSend(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "handoff")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent", "tools", "handoff.go"), []byte(handoffTool), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent", "agent.yaml"), []byte("model:\n  provider: anthropic\n  name: fake\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	fake := fakemodel.New(fakemodel.Reply{Text: []string{"Handed over."}, Until: release})
	defer fake.Close()

	cmd := exec.Command(cliBin, "call", "handoff", "--dir", dir, "--input", `{"message":"Review acme/checkout#42"}`)
	cmd.Env = append(os.Environ(), "ANTHROPIC_BASE_URL="+fake.AnthropicURL(), "ANTHROPIC_API_KEY=k")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(pipe)
	m, seen := waitLine(sc, regexp.MustCompile(`^the call started a model turn in session (sess_\S+): waiting for it to end \(Ctrl-C interrupts it\)$`))
	if m == nil {
		t.Fatalf("call did not wait for the turn it started:\n%s\nstdout:\n%s", seen, stdout.String())
	}
	close(release) // the model answers now
	end, seen := waitLine(sc, regexp.MustCompile(`^session (sess_\S+): (.*)$`))
	if end == nil || end[1] != m[1] || end[2] != "the turn completed" {
		t.Fatalf("how the turn ended: %q\n%s", end, seen)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("call: %v\n%s", err, stdout.String())
	}
	if !strings.Contains(stdout.String(), `"result": "`+m[1]+`"`) {
		t.Errorf("call's outcome:\n%s", stdout.String())
	}
	if !fake.Contains(0, "Review acme/checkout#42") {
		t.Errorf("the model was not asked: %s", fake.Requests())
	}
}

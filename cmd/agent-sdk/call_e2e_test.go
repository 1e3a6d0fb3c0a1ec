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

// agent-sdk call --url of a gated call says at once that it waits, with
// the commands that decide it, though the host would hold the request for
// an hour (--approval-wait 1h): without that, the line would come after
// the hour, and the test's timeout would fail it. Then it waits, and
// prints the outcome once the call is approved.
func TestCallParkedSaysAtOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gated")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent", "tools", "promote.go"), []byte(gatedTools["promote.go"]), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir, "--approval-wait", "1h")
	url := strings.TrimSuffix(s.base, "/v1")

	cmd := exec.Command(cliBin, "call", "promote", "--url", url, "--dir", dir, "--input", `{"service":"api","environment":"production"}`)
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
	head, seen := waitLine(sc, regexp.MustCompile(`^call (tool_promote_\S+) is waiting for approval:$`))
	if head == nil {
		t.Fatalf("call ended without saying it waits:\n%s", seen)
	}
	id := head[1]
	for _, want := range []string{
		"  agent-sdk approve " + id + " --url " + url,
		`  agent-sdk deny ` + id + ` --reason "…" --url ` + url,
	} {
		if !sc.Scan() || sc.Text() != want {
			t.Fatalf("after %q: %q, want %q", head[0], sc.Text(), want)
		}
	}
	// The call is parked, and call still waits for it.
	if r := run(t, dir, "", "approvals", "--url", url); !strings.Contains(r.stdout, id+"  promote  pending  direct call") {
		t.Fatalf("approvals while call waits: %+v", r)
	}
	if r := run(t, dir, "", "approve", id, "--url", url); r.code != 0 {
		t.Fatalf("approve: %+v", r)
	}
	for sc.Scan() { // the rest of stderr, until call exits
	}
	if err := cmd.Wait(); err != nil {
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

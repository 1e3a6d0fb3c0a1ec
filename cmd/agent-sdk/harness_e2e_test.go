package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/harnesstest"
)

// harnessAgent makes an agent whose sessions run on Claude Code (from the
// npm test cache) against the fake, and the environment to serve it with.
func harnessAgent(t *testing.T, fake *fakemodel.Server) (dir string, env []string) {
	t.Helper()
	spec := harnesstest.Claude(t, fake)
	dir = filepath.Join(t.TempDir(), "harness")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf("model:\n  provider: anthropic\n  name: fake-model\nruntime: claude-code\nharnesses:\n  claude-code:\n    command: %s\n", strconv.Quote(spec.Command))
	if err := os.WriteFile(filepath.Join(dir, "agent", "agent.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, []string{"ANTHROPIC_BASE_URL=" + fake.AnthropicURL(), "ANTHROPIC_API_KEY=test-key"}
}

// harnessProcs are the processes whose HOME is a session's harness home.
func harnessProcs(sessionID string) []int {
	return harnesstest.Procs(func(home string) bool {
		return strings.HasSuffix(home, filepath.Join("sessions", sessionID, "harness-home"))
	})
}

// A host SIGKILLed while its Claude Code turn waits for approval: the
// harness processes it leaves are killed by the next host to start on the
// state directory, the turn is ended interrupted, saying its harness died
// with it, and the call it waited on is decided denied by the host.
func TestHarnessSIGKILLWhileAwaitingApproval(t *testing.T) {
	t.Parallel()
	fake := fakemodel.New()
	defer fake.Close()
	fake.SetDefault(fakemodel.Reply{Text: []string{"done"}})
	dir, env := harnessAgent(t, fake)
	fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "toolu_1", Name: "Bash", Input: `{"command":"echo made > made.txt","description":"make a file"}`}}})
	s := startServerEnv(t, dir, env, "--lease-ttl", "1s")
	_, v, _ := s.request(t, "POST", "/session", s.token, `{"message":"make a file"}`)
	sid, _ := v["sessionId"].(string)
	if sid == "" {
		t.Fatalf("create: %v", v)
	}
	var callID string
	waitEvent(t, s, sid, func(kind, data string) bool {
		if kind != "action.approval_requested" {
			return false
		}
		m := regexp.MustCompile(`"callId":"([^"]+)"`).FindStringSubmatch(data)
		if m != nil {
			callID = m[1]
		}
		return m != nil
	})
	if len(harnessProcs(sid)) == 0 {
		t.Fatal("no harness process while the call waits")
	}
	s.sigkill(t)
	s = startServerEnv(t, dir, env, "--lease-ttl", "1s")
	var failed string
	waitEvent(t, s, sid, func(kind, data string) bool {
		failed = data
		return kind == "turn.failed"
	})
	if !strings.Contains(failed, `"code":"interrupted"`) || !strings.Contains(failed, "claude-code") {
		t.Errorf("turn.failed: %s", failed)
	}
	for deadline := time.Now().Add(15 * time.Second); len(harnessProcs(sid)) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("harness processes outlived their host: %v", harnessProcs(sid))
		}
	}
	// The call its harness waited on is decided denied by the host, with
	// its result: an approval afterwards is refused, and nothing runs.
	var result string
	waitEvent(t, s, sid, func(kind, data string) bool {
		result = data
		return kind == "action.result" && strings.Contains(data, callID)
	})
	if !strings.Contains(result, "not run") || !strings.Contains(result, "harness turn ended") {
		t.Errorf("the parked call of a dead harness: %s", result)
	}
	if status, body, _ := s.request(t, "POST", "/session/"+sid+"/approvals/"+callID, s.token, `{"approved":true}`); status != 409 {
		t.Fatalf("approving the call of a dead harness: %d %v", status, body)
	}
	if _, err := os.Stat(filepath.Join(dir, ".agent-sdk", "sessions", sid, "workspace", "made.txt")); err == nil {
		t.Error("the command ran")
	}
}

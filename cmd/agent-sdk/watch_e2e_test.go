package main_test

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// versionTool answers with its version: the test edits it.
const versionTool = `package tools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

var _ = tool.Define(tool.Config{Description: "Say which build answers."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
	return "VERSION", nil
})
`

// serve --watch: an edit of a tool while a session exists and a call is
// parked swaps in a host of the new build on the same port; the session
// and the parked call are there, and the new host runs the call once it
// is approved. A broken edit is reported and the host keeps serving the
// last build; a change that leaves the binary the same swaps nothing,
// unless it is of a file the host reads (agent.yaml).
// SIGTERM stops the watcher and its host.
func TestServeWatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "watched")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	tools := filepath.Join(dir, "agent", "tools")
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(tools, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("promote.go", gatedTools["promote.go"])
	write("version.go", strings.Replace(versionTool, "VERSION", "v1", 1))
	s := startServer(t, dir, "--watch", "--approval-wait", "0", "--drain-timeout", "5s")
	version := func() string {
		status, v, _ := s.request(t, "POST", "/tools/version", s.token, `{"input":{}}`)
		if status != 200 {
			return ""
		}
		r, _ := v["result"].(string)
		return r
	}
	if got := version(); got != "v1" {
		t.Fatalf("version before the edit: %q\n%s", got, s.logs())
	}
	_, v, _ := s.request(t, "POST", "/session", s.token, `{}`)
	sess, _ := v["sessionId"].(string)
	status, v, _ := s.request(t, "POST", "/tools/promote", s.token, `{"input":{"service":"api","environment":"production"}}`)
	parked, _ := v["callId"].(string)
	if status != 202 || parked == "" {
		t.Fatalf("the gated call: %d %v", status, v)
	}

	edited := time.Now()
	write("version.go", strings.Replace(versionTool, "VERSION", "v2", 1))
	watchWait(t, s, func() bool { return version() == "v2" })
	t.Logf("a changed file to the new code answering: %.1fs", time.Since(edited).Seconds())
	if !strings.Contains(s.logs(), "agent-sdk: changed: agent/tools/version.go; rebuilding") || !strings.Contains(s.logs(), "the new host serves") {
		t.Errorf("the swap is not reported:\n%s", s.logs())
	}
	if status, v, _ := s.request(t, "GET", "/session/"+sess, s.token, ""); status != 200 {
		t.Errorf("the session after the swap: %d %v", status, v)
	}
	_, v, _ = s.request(t, "GET", "/approvals?status=pending", s.token, "")
	if !strings.Contains(toJSON(v), parked) {
		t.Fatalf("the parked call after the swap: %v", v)
	}

	// A broken edit: the build error, and the last build keeps answering.
	write("version.go", strings.Replace(versionTool, `"VERSION", nil`, `"v3" nil`, 1))
	watchWait(t, s, func() bool { return strings.Contains(s.logs(), "the running host keeps serving the last build") })
	if !strings.Contains(s.logs(), "the agent's files do not parse:\n  agent/tools/version.go:10:14: expected ';', found nil") {
		t.Errorf("the build error does not name the file:\n%s", s.logs())
	}
	if got := version(); got != "v2" {
		t.Errorf("version after a broken edit: %q", got)
	}
	// The new host decides and runs the call parked on the old one.
	if status, v, _ := s.request(t, "POST", "/approvals/"+parked, s.token, `{"approved":true}`); status != 200 {
		t.Fatalf("approving after the swap: %d %v", status, v)
	}
	waitFile(t, filepath.Join(dir, ".agent-sdk", "promote-runs"), 1)

	// A test file changes nothing the host runs.
	before := strings.Count(s.logs(), "the new host serves")
	write("version_test.go", "package tools\n")
	write("version.go", strings.Replace(versionTool, "VERSION", "v2", 1)) // fixed again: the v2 binary, cached
	watchWait(t, s, func() bool {
		return strings.Count(s.logs(), "rebuilding") >= 3 && strings.Contains(s.logs(), "binary is the same")
	})
	if n := strings.Count(s.logs(), "the new host serves"); n != before {
		t.Errorf("a swap with the binary unchanged:\n%s", s.logs())
	}
	// agent.yaml is read by the host as it starts: a new host, the same binary.
	yaml := filepath.Join(dir, "agent", "agent.yaml")
	data, err := os.ReadFile(yaml)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(yaml, append(data, "\n# edited\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	watchWait(t, s, func() bool { return strings.Count(s.logs(), "the new host serves") == before+1 })

	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("serve --watch after SIGTERM: %v\n%s", err, s.logs())
	}
	if c, err := net.Dial("tcp", strings.SplitN(s.base, "/", 4)[2]); err == nil {
		c.Close()
		t.Errorf("the port is still open after the watcher stopped")
	}
}

// watchWait waits for cond, failing with the watcher's log after a build's
// time.
func watchWait(t *testing.T, s *server, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Minute); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5 minutes:\n%s", s.logs())
		}
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

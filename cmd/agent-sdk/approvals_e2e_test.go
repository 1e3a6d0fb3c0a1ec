package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

var gatedTools = map[string]string{
	"promote.go": `package tools

import (
	"context"
	"os"
	"path/filepath"

	"github.com/agentsdk/agentsdk/tool"
)

type PromoteInput struct {
	Service     string ` + "`" + `json:"service"` + "`" + `
	Environment string ` + "`" + `json:"environment"` + "`" + `
}

var _ = tool.Define(tool.Config{
	Description:   "Promote a build.",
	NeedsApproval: tool.When(func(in PromoteInput) bool { return in.Environment == "production" }),
}, func(ctx context.Context, call *tool.Call, in PromoteInput) (any, error) {
	f, err := os.OpenFile(filepath.Join(call.StateRoot, "promote-runs"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	f.WriteString(call.ID + " " + in.Service + " " + in.Environment + "\n")
	return map[string]string{"promoted": in.Service, "to": in.Environment}, nil
})
`,
	"expiring.go": `package tools

import (
	"context"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

var _ = tool.Define(tool.Config{Description: "Expires fast.", NeedsApproval: tool.Always, ApprovalTimeout: 2 * time.Second},
	func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "ran", nil })
`,
	"slowgate.go": `package tools

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

var _ = tool.Define(tool.Config{Description: "Approved, then slow.", NeedsApproval: tool.Always},
	func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
		f, _ := os.OpenFile(filepath.Join(call.StateRoot, "slowgate-runs"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		f.WriteString(call.ID + "\n")
		f.Close()
		select {
		case <-time.After(time.Minute):
			return "finished", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
`,
}

func lines(path string) []string {
	b, _ := os.ReadFile(path)
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func waitFile(t *testing.T, path string, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); len(lines(path)) < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d lines, want %d", path, len(lines(path)), n)
		}
	}
}

func TestApprovalsEndToEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gated")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	for name, src := range gatedTools {
		os.WriteFile(filepath.Join(dir, "agent", "tools", name), []byte(src), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "agent", "agent.yaml"), []byte("model:\n  provider: anthropic\n  name: fake\n"), 0o644)
	fake := fakemodel.New(
		fakemodel.Reply{Calls: []fakemodel.Call{
			{ID: "m1", Name: "promote", Input: `{"service":"api","environment":"production"}`},
			{ID: "m2", Name: "promote", Input: `{"service":"web","environment":"staging"}`},
		}},
		fakemodel.Reply{Text: []string{"Promoted after approval."}},
	)
	defer fake.Close()
	env := []string{"ANTHROPIC_BASE_URL=" + fake.AnthropicURL(), "ANTHROPIC_API_KEY=k"}
	args := []string{"--lease-ttl", "1s", "--approval-wait", "300ms"}
	s := startServerEnv(t, dir, env, args...)
	url := strings.TrimSuffix(s.base, "/v1")
	state := filepath.Join(dir, ".agent-sdk")
	runs := filepath.Join(state, "promote-runs")

	// Predicate false: runs at once. Predicate true: 202, then fetched.
	status, v, _ := s.request(t, "POST", "/tools/promote", s.token, `{"input":{"service":"db","environment":"staging"}}`)
	if status != 200 || v["isError"] != false {
		t.Fatalf("ungated: %d %v", status, v)
	}
	status, v, _ = s.request(t, "POST", "/tools/promote", s.token, `{"input":{"service":"db","environment":"production"}}`)
	if status != 202 || v["status"] != "approval_pending" {
		t.Fatalf("gated direct call: %d %v", status, v)
	}
	direct := v["callId"].(string)
	if _, v, _ := s.request(t, "GET", "/calls/"+direct, s.token, ""); v["status"] != "approval_pending" {
		t.Errorf("pending call: %v", v)
	}
	r := run(t, dir, "", "approvals", "--url", url)
	if r.code != 0 || !strings.Contains(r.stdout, direct) || !strings.Contains(r.stdout, `"environment":"production"`) {
		t.Errorf("approvals: %+v", r)
	}
	// Twenty approvers at once: one wins, the rest get 409 with the first decision.
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := range 20 {
		wg.Go(func() {
			status, v, _ := s.request(t, "POST", "/approvals/"+direct, s.token, fmt.Sprintf(`{"approved":true,"onBehalfOf":"approver%d"}`, i))
			mu.Lock()
			defer mu.Unlock()
			codes[status]++
			if status == 409 {
				e := v["error"].(map[string]any)
				if e["code"] != "already_resolved" || e["approval"].(map[string]any)["status"] != "approved" {
					t.Errorf("409 without the first decision: %v", v)
				}
			}
		})
	}
	wg.Wait()
	if codes[200] != 1 || codes[409] != 19 {
		t.Fatalf("decisions: %v", codes)
	}
	waitFile(t, runs, 2)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, v, _ = s.request(t, "GET", "/calls/"+direct, s.token, "")
		if v["status"] == "approved" || time.Now().After(deadline) {
			break
		}
	}
	if v["status"] != "approved" || v["isError"] != false || v["toolName"] != "promote" {
		t.Errorf("fetched outcome: %v", v)
	}
	// Deny from the CLI; the refusal is the outcome.
	r = run(t, dir, "", "call", "promote", "--url", url, "--no-wait", "--input", `{"service":"x","environment":"production"}`)
	var p struct{ CallID string }
	json.Unmarshal([]byte(r.stdout), &p)
	if r.code != 0 || p.CallID == "" || !strings.Contains(r.stderr, "agent-sdk approve "+p.CallID) {
		t.Fatalf("call --no-wait: %+v", r)
	}
	if r := run(t, dir, "", "deny", p.CallID, "--reason", "frozen", "--by", "ops", "--url", url); r.code != 0 || !strings.Contains(r.stdout, "denied by bearer-token:ops") {
		t.Errorf("deny: %+v", r)
	}
	if r := run(t, dir, "", "approve", p.CallID, "--url", url); r.code != 2 || !strings.Contains(r.stderr, "already_resolved") {
		t.Errorf("approve after deny: %+v", r)
	}
	if r := run(t, dir, "", "approve", "tool_nope_x", "--url", url); r.code != 2 || !strings.Contains(r.stderr, "HTTP 404") {
		t.Errorf("approve an unknown call: %+v", r)
	}

	// A model turn parks one call and runs the other; a direct call parks;
	// an expiring call parks; then the host is killed.
	_, v, _ = s.request(t, "POST", "/session", s.token, `{"message":"promote api and web"}`)
	sess := v["sessionId"].(string)
	waitEvent(t, s, sess, func(kind, data string) bool { return kind == "action.approval_requested" })
	waitFile(t, runs, 3) // web to staging ran
	_, v, _ = s.request(t, "POST", "/tools/promote", s.token, `{"input":{"service":"cache","environment":"production"}}`)
	parkedDirect := v["callId"].(string)
	_, v, _ = s.request(t, "POST", "/tools/expiring", s.token, `{"input":{}}`)
	expiring := v["callId"].(string)
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.cmd.Wait()
	time.Sleep(2500 * time.Millisecond) // the expiring call's lifetime runs out while the host is down

	s2 := startServerEnv(t, dir, env, args...)
	url2 := strings.TrimSuffix(s2.base, "/v1")
	_, v, _ = s2.request(t, "GET", "/approvals?status=pending", s2.token, "")
	var pending []string
	for _, a := range v["approvals"].([]any) {
		pending = append(pending, a.(map[string]any)["callId"].(string))
	}
	if len(pending) != 2 || !strings.Contains(strings.Join(pending, " "), parkedDirect) {
		t.Fatalf("pending after the restart: %v", pending)
	}
	if status, v, _ := s2.request(t, "POST", "/approvals/"+expiring, s2.token, `{"approved":true}`); status != 410 || v["error"].(map[string]any)["code"] != "approval_expired" {
		t.Errorf("approving an expired call: %d %v", status, v)
	}
	if _, v, _ := s2.request(t, "GET", "/calls/"+expiring, s2.token, ""); v["status"] != "expired" || v["isError"] != true {
		t.Errorf("expired call outcome: %v", v)
	}
	var turnCall string
	for _, id := range pending {
		if id != parkedDirect {
			turnCall = id
		}
	}
	if r := run(t, dir, "", "approve", turnCall, "--url", url2); r.code != 0 {
		t.Fatalf("approve after restart: %+v", r)
	}
	if r := run(t, dir, "", "approve", parkedDirect, "--url", url2); r.code != 0 {
		t.Fatalf("approve the direct call after restart: %+v", r)
	}
	waitEvent(t, s2, sess, func(kind, data string) bool { return kind == "turn.completed" })
	kinds := storedKinds(t, s2, sess)
	want := "session.created turn.started message model.usage actions.requested"
	if got := strings.Join(kinds, " "); !strings.HasPrefix(got, want) || strings.Count(got, "action.result") != 2 ||
		!strings.HasSuffix(got, "action.approval_resolved action.result message.delta message model.usage turn.completed") {
		t.Errorf("the turn after the restart: %s", got)
	}
	waitFile(t, runs, 5)
	if got := lines(runs); len(got) != 5 {
		t.Errorf("promote ran %d times, want 5 (nothing twice): %v", len(got), got)
	}
	if !fake.Contains(1, `promoted`) {
		t.Errorf("the model did not get the approved result")
	}

	// An approved call running when the host dies is not run again.
	_, v, _ = s2.request(t, "POST", "/tools/slowgate", s2.token, `{"input":{}}`)
	slow := v["callId"].(string)
	if r := run(t, dir, "", "approve", slow, "--url", url2); r.code != 0 {
		t.Fatal(r)
	}
	slowRuns := filepath.Join(state, "slowgate-runs")
	waitFile(t, slowRuns, 1)
	s2.cmd.Process.Signal(syscall.SIGKILL)
	s2.cmd.Wait()
	s3 := startServerEnv(t, dir, env, args...)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, v, _ = s3.request(t, "GET", "/calls/"+slow, s3.token, "")
		if v["isError"] != nil || time.Now().After(deadline) {
			break
		}
	}
	if v["isError"] != true || v["result"] != "interrupted by host restart; not retried" {
		t.Errorf("interrupted approved call: %v", v)
	}
	if got := lines(slowRuns); len(got) != 1 {
		t.Errorf("the interrupted call ran %d times", len(got))
	}
}

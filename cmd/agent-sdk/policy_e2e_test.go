package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// policyTool is README's worked example: deployers approve production
// deploys, never their own, two of them.
const policyTool = `package tools

import (
	"context"
	"os"
	"path/filepath"

	"github.com/agentsdk/agentsdk/tool"
)

type DeployInput struct {
	Env     string ` + "`" + `json:"env"` + "`" + `
	Version string ` + "`" + `json:"version"` + "`" + `
}

var _ = tool.Define(tool.Config{
	Description:   "Deploy a version of the service to an environment.",
	NeedsApproval: tool.When(func(in DeployInput) bool { return in.Env == "production" }),
	Approval:      &tool.ApprovalPolicy{Roles: []string{"deployer"}, NotRequester: true, Quorum: 2},
}, func(ctx context.Context, call *tool.Call, in DeployInput) (any, error) {
	f, err := os.OpenFile(filepath.Join(call.StateRoot, "deploy-runs"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	f.WriteString(in.Env + " " + in.Version + "\n")
	return "deployed " + in.Version, nil
})
`

var keySecret = regexp.MustCompile(`(?m)^ask_[a-z2-7]+_[a-z2-7]+$`)

// The worked example through the CLI, with a key per deployer: the
// requester's approval is refused (exit 2, requester_cannot_approve), the
// first deployer's is one of two, a second by the same key is refused, an
// edit that breaks the schema is refused and leaves the call parked, and
// the second deployer's approval with an edited version runs the edited
// input, once.
func TestApproverPolicyCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "policy")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent", "tools", "deploy.go"), []byte(policyTool), 0o644); err != nil {
		t.Fatal(err)
	}
	yaml := "model:\n  provider: anthropic\n  name: fake\nauth:\n  roles:\n    deployer: [read, message, call, approve]\n"
	if err := os.WriteFile(filepath.Join(dir, "agent", "agent.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir)
	url := strings.TrimSuffix(s.base, "/v1")
	key := func(name string) string {
		r := run(t, dir, "", "keys", "create", name, "--roles", "deployer", "--url", url, "--token", s.token)
		k := keySecret.FindString(r.stdout)
		if r.code != 0 || k == "" {
			t.Fatalf("keys create %s: %d %s %s", name, r.code, r.stdout, r.stderr)
		}
		return k
	}
	alice, bob, carol := key("alice"), key("bob"), key("carol")
	r := run(t, dir, "", "call", "deploy", "--url", url, "--no-wait", "--token", alice, "--input", `{"env":"production","version":"v42"}`)
	var parked struct{ CallID string }
	json.Unmarshal([]byte(r.stdout), &parked)
	if r.code != 0 || parked.CallID == "" {
		t.Fatalf("call --no-wait: %+v", r)
	}
	call := parked.CallID
	approve := func(token string, args ...string) result {
		return run(t, dir, "", append([]string{"approve", call, "--url", url, "--token", token}, args...)...)
	}
	if r := approve(alice); r.code != 2 || !strings.Contains(r.stderr, "requester_cannot_approve") || !strings.Contains(r.stderr, "HTTP 403") {
		t.Errorf("alice approving her own call: %+v", r)
	}
	if r := approve(bob); r.code != 0 || r.stdout != call+" pending: 1 of 2 approvals; it runs on the last\n" {
		t.Errorf("bob's approval: %+v", r)
	}
	if r := approve(bob); r.code != 2 || !strings.Contains(r.stderr, "already_approved_by_you") {
		t.Errorf("bob again: %+v", r)
	}
	if r := approve(carol, "--input", `{"env":"production","version":41}`); r.code != 2 || !strings.Contains(r.stderr, "input.version: must be a string") || !strings.Contains(r.stderr, "HTTP 400") {
		t.Errorf("carol's invalid edit: %+v", r)
	}
	if r := approve(carol, "--input", `not json`); r.code != 2 || !strings.Contains(r.stderr, "--input") {
		t.Errorf("carol's --input that is not JSON: %+v", r)
	}
	_, v, _ := s.request(t, "GET", "/calls/"+call, s.token, "")
	if v["status"] != "approval_pending" {
		t.Fatalf("after the refused edits the call is %v", v["status"])
	}
	// The edit drops bob's approval (he approved v42): carol's is then the
	// only one, and bob approves the edited input.
	if r := approve(carol, "--input", `{"env":"production","version":"v41"}`); r.code != 0 || !strings.Contains(r.stdout, "pending: 1 of 2") {
		t.Errorf("carol's edit: %+v", r)
	}
	if r := approve(bob); r.code != 0 || !strings.Contains(r.stdout, call+" approved by key:") {
		t.Errorf("bob approving the edit: %+v", r)
	}
	runs := filepath.Join(dir, ".agent-sdk", "deploy-runs")
	waitFile(t, runs, 1)
	if got := lines(runs); len(got) != 1 || got[0] != "production v41" {
		t.Errorf("deploy ran %q, want the edited input once", got)
	}
}

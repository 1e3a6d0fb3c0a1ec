package tool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/tool"
)

// A policy is the tool's own copy, shown in its Info; a quorum out of
// range is refused when the tool is defined; MayDecide reads Roles (admin
// always may); the default quorum is one.
func TestApprovalPolicy(t *testing.T) {
	handler := func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return nil, nil }
	roles := []string{"deployer"}
	tl, err := tool.New("deploy", tool.Config{Description: "d", NeedsApproval: tool.Always,
		Approval: &tool.ApprovalPolicy{Roles: roles, NotRequester: true, Quorum: 2}}, handler)
	if err != nil {
		t.Fatal(err)
	}
	roles[0] = "changed"
	p := tl.ApprovalPolicy()
	if p.Roles[0] != "deployer" || p.QuorumOrDefault() != 2 || !p.NotRequester {
		t.Errorf("the policy: %+v", p)
	}
	b, _ := json.Marshal(tl.Info())
	if !strings.Contains(string(b), `"approvalPolicy":{"roles":["deployer"],"notRequester":true,"quorum":2}`) {
		t.Errorf("Info: %s", b)
	}
	for _, c := range []struct {
		name  string
		roles []string
		admin bool
		want  bool
	}{{"a deployer", []string{"reader", "deployer"}, false, true}, {"an operator", []string{"operator"}, false, false}, {"an admin", nil, true, true}, {"no roles", nil, false, false}} {
		if got := p.MayDecide(c.roles, c.admin); got != c.want {
			t.Errorf("%s may decide: %v, want %v", c.name, got, c.want)
		}
	}
	var none *tool.ApprovalPolicy
	if none.QuorumOrDefault() != 1 || !none.MayDecide(nil, false) || (&tool.ApprovalPolicy{}).QuorumOrDefault() != 1 {
		t.Error("no policy: one decision by anyone")
	}
	plain, _ := tool.New("plain", tool.Config{Description: "d"}, handler)
	if plain.ApprovalPolicy() != nil || strings.Contains(mustJSON(t, plain.Info()), "approvalPolicy") {
		t.Errorf("a tool without a policy shows one: %s", mustJSON(t, plain.Info()))
	}
	for _, q := range []int{-1, 101} {
		if _, err := tool.New("bad", tool.Config{Description: "d", Approval: &tool.ApprovalPolicy{Quorum: q}}, handler); err == nil || !strings.Contains(err.Error(), "Quorum") {
			t.Errorf("quorum %d: %v", q, err)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

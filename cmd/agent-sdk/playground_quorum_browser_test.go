package main_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// pgReleaseTool needs two approvals from distinct principals.
const pgReleaseTool = `package tools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

// ReleaseInput is release's input.
type ReleaseInput struct {
	Service string ` + "`json:\"service\"`" + `
}

// release needs two approvers.
var _ = tool.Define(tool.Config{
	Description:   "Release a service to everyone (needs two approvals).",
	NeedsApproval: tool.Always,
	Approval:      &tool.ApprovalPolicy{Quorum: 2},
}, func(ctx context.Context, call *tool.Call, in ReleaseInput) (any, error) {
	return map[string]string{"released": in.Service}, nil
})
`

// A quorum of two in the playground, in a real browser: the call's card
// shows the first approval (the signed-in host token's, from Approve) as
// "1 of 2" with who gave it and keeps Approve and Deny; the second, by
// an API key over the API, comes on the stream and the card shows "2 of
// 2", the decision, and the result.
func TestPlaygroundQuorumVotes(t *testing.T) {
	p, env, _, _ := pgParkedCall(t, "quorum", map[string]string{"release.go": pgReleaseTool},
		fakemodel.Call{ID: "toolu_release_q", Name: "release", Input: `{"service":"web"}`}, "Released.")
	callID := pgJS[string](p, pgCallID, "release")
	call := `#trajectory > li.call[data-call-id="` + callID + `"]`

	p.do("the first approval", chromedp.Click(chromedp.CSS(call+" .approval .approve")))
	p.waitText(call+" .approval .approval-votes .vote-count", "1 of 2")
	p.waitText(call+" .approval .approval-votes", "(bearer-token)")
	if n := p.count(call + " .approval .decide .approve"); n != 1 {
		t.Fatalf("after 1 of 2 approvals the card has %d Approve buttons, want it still to take the second", n)
	}
	p.shot("quorum-1-of-2")

	status, key, _ := env.s.request(t, "POST", "/keys", env.s.token, `{"name":"bob","roles":["operator"]}`)
	if status != 201 {
		t.Fatalf("creating bob's key: %d %v", status, key)
	}
	secret, _ := key["secret"].(string)
	bob := "key:" + key["key"].(map[string]any)["id"].(string)
	if status, v, _ := env.s.request(t, "POST", "/approvals/"+callID, secret, `{"approved":true}`); status != 200 {
		t.Fatalf("bob's approval: %d %v", status, v)
	}
	p.waitText(call+" .approval .approval-votes .vote-count", "2 of 2")
	p.waitCount(call+" .approval.resolved.approved", 1)
	p.waitText(call+" .approval .approval-decision", bob)
	p.waitText(call+" .call-result pre", `"released": "web"`)
	p.shot("quorum-2-of-2")
}

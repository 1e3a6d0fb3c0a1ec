package tool

import (
	"fmt"
	"slices"
)

// ApprovalPolicy says who may decide a tool's parked calls, and how many
// of them ([Config.Approval]). Nil (the default) is the host's behaviour
// without a policy: one decision, by anyone whose roles have the approve
// permission.
//
// The decider is always the authenticated principal (an API key's holder,
// the host token's, or a channel's user mapped to a principal by
// agent.yaml's auth.slack); a principal is counted once, whatever it
// says it acts for.
type ApprovalPolicy struct {
	// Roles are the roles (agent.yaml's auth.roles) whose principals may
	// decide; empty: anyone with the approve permission. An admin may
	// always decide.
	Roles []string `json:"roles,omitempty"`
	// NotRequester is four-eyes: the principal who started the call, or
	// opened its session, may not decide it (requester_cannot_approve).
	NotRequester bool `json:"notRequester,omitempty"`
	// Quorum is how many distinct principals must approve before the call
	// runs; it runs once, on the Quorum-th approval. Any single deny
	// denies. Zero means 1.
	Quorum int `json:"quorum,omitempty"`
	// NoEdit refuses an approval that changes the call's input
	// (edit_not_allowed). Without it an approver may send a changed input
	// with an approval: it is validated against the tool's schema, the
	// tool's NeedsApproval is asked again of it, and what runs is the
	// edited input.
	NoEdit bool `json:"noEdit,omitempty"`
}

// QuorumOrDefault returns the approvals the policy needs: Quorum, or 1.
// A nil policy needs 1.
func (p *ApprovalPolicy) QuorumOrDefault() int {
	if p == nil || p.Quorum < 1 {
		return 1
	}
	return p.Quorum
}

// MayDecide reports whether a principal with roles may decide under the
// policy: admin always; otherwise one of Roles, when it names some.
func (p *ApprovalPolicy) MayDecide(roles []string, admin bool) bool {
	if p == nil || len(p.Roles) == 0 || admin {
		return true
	}
	for _, r := range roles {
		if slices.Contains(p.Roles, r) {
			return true
		}
	}
	return false
}

func (p *ApprovalPolicy) check() error {
	if p == nil {
		return nil
	}
	if p.Quorum < 0 || p.Quorum > 100 {
		return fmt.Errorf("Config.Approval.Quorum must be 0 to 100, not %d", p.Quorum)
	}
	for _, r := range p.Roles {
		if r == "" {
			return fmt.Errorf("Config.Approval.Roles has an empty role")
		}
	}
	return nil
}

// clone copies the policy, so that the tool's is its own.
func (p *ApprovalPolicy) clone() *ApprovalPolicy {
	if p == nil {
		return nil
	}
	c := *p
	c.Roles = slices.Clone(p.Roles)
	return &c
}

// ApprovalPolicy returns the tool's approver policy ([Config.Approval]),
// or nil without one. It is the tool's own: do not change it.
func (t *Tool) ApprovalPolicy() *ApprovalPolicy { return t.policy }

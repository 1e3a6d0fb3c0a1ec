package host

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// rule is what a tool's approver policy makes of one decision: the
// approvals the call needs, and the edited input to store (nil: none).
type rule struct {
	quorum int
	input  json.RawMessage
}

// policyFor checks a decision against the parked call's tool's approver
// policy (tool.Config.Approval) and an approver's edit, and says how it
// counts. A call whose tool is gone is decided as without a policy (its
// approval then reports that the tool no longer exists), but not edited.
func (h *Host) policyFor(ctx context.Context, parked api.Approval, d *Decision) (rule, error) {
	t, ok := h.tools.Lookup(parked.Tool)
	if !ok {
		t, ok = h.builtinTool(parked.Tool)
	}
	var pol *tool.ApprovalPolicy
	if ok {
		pol = t.ApprovalPolicy()
	}
	r := rule{quorum: pol.QuorumOrDefault()}
	if pol != nil {
		if !pol.MayDecide(d.Roles, d.Admin) {
			return r, api.Errorf(api.CodeNotAnApprover, "not_an_approver: calls of %s are decided by the roles %s; %s has %s",
				parked.Tool, strings.Join(pol.Roles, ", "), d.Principal, rolesText(d.Roles))
		}
		if pol.NotRequester {
			if err := h.fourEyes(ctx, parked, d); err != nil {
				return r, err
			}
		}
	}
	if !d.Approved || d.Input == nil {
		return r, nil
	}
	switch {
	case !ok:
		return r, api.Errorf(api.CodeBadRequest, "the tool %s no longer exists on this host: its call cannot be edited", parked.Tool)
	case pol != nil && pol.NoEdit:
		in, err := t.Validate(d.Input)
		if err == nil && sameInput(in.JSON(), parked.Input) {
			return r, nil // the input as asked: no edit
		}
		return r, api.Errorf(api.CodeEditNotAllowed, "edit_not_allowed: the approver policy of %s forbids changing a call's input; approve it as asked, or deny it", parked.Tool)
	}
	in, err := t.Validate(d.Input)
	if err != nil {
		return r, api.AsError(err) // invalid_input: the call stays parked
	}
	if sameInput(in.JSON(), parked.Input) {
		return r, nil
	}
	r.input = in.JSON()
	if !h.needsApproval(t, in) {
		r.quorum = 1 // the edit no longer needs approval: it runs now
	}
	return r, nil
}

// fourEyes refuses a decider who started the call or opened its session.
func (h *Host) fourEyes(ctx context.Context, parked api.Approval, d *Decision) error {
	deciders := []string{d.Principal, d.By}
	refuse := func(whose string) error {
		return api.Errorf(api.CodeRequesterCannotApprove, "requester_cannot_approve: %s %s, and the approver policy of %s says another principal must decide it",
			d.Principal, whose, parked.Tool)
	}
	if slices.Contains(deciders, parked.RequestedBy) {
		return refuse("started call " + parked.CallID)
	}
	if parked.SessionID != "" {
		sess, err := h.session(ctx, parked.SessionID)
		if err != nil {
			return storeError(err, nil)
		}
		if sess.Principal != "" && slices.Contains(deciders, sess.Principal) {
			return refuse("opened its session " + sess.ID)
		}
	}
	return nil
}

// sameInput reports whether two inputs are the same JSON.
func sameInput(a, b json.RawMessage) bool {
	return len(api.DiffInput(a, b)) == 0
}

func rolesText(roles []string) string {
	if len(roles) == 0 {
		return "no roles"
	}
	return "the roles " + strings.Join(roles, ", ")
}

// decisionEvents are what a decision under a quorum or with an edit
// streams, from the call as it stands after it: action.approval_voted for
// an approval short of the quorum, else action.approval_resolved with the
// count and the edited input.
func decisionEvents(a api.Approval, quorum int, d Decision) []api.Event {
	at := time.Now().UTC()
	if a.DecidedAt != nil {
		at = a.DecidedAt.UTC()
	}
	var input json.RawMessage
	var changes []api.InputChange
	if a.OriginalInput != nil {
		input, changes = a.Input, api.DiffInput(a.OriginalInput, a.Input)
	}
	if a.Status == api.ApprovalPending {
		v := api.ApprovalVoted{CallID: a.CallID, Tool: a.Tool, By: d.By, At: at, Approvals: len(a.Approvals), Quorum: quorum}
		if len(a.Approvals) > 0 && a.Approvals[len(a.Approvals)-1].Edited {
			v.Input, v.Changes = input, changes
		}
		return events(a.TurnID, v)
	}
	r := api.ApprovalResolved{CallID: a.CallID, Tool: a.Tool, Status: a.Status, By: d.By, Reason: d.Reason, At: at, Input: input, Changes: changes}
	if quorum > 1 {
		r.Approvals, r.Quorum = len(a.Approvals), quorum
	}
	return events(a.TurnID, r)
}

// withQuorum sets a call's Quorum from its tool's approver policy, when it
// needs more than one approval.
func (h *Host) withQuorum(a *api.Approval) {
	if t, ok := h.tools.Lookup(a.Tool); ok {
		if q := t.ApprovalPolicy().QuorumOrDefault(); q > 1 {
			a.Quorum = q
		}
	}
}

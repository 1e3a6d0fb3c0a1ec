package host

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/harnessturn"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// Harness turns on runners. A cloud session whose runtime is a harness
// has its turns run by a runner on its own installation of the harness
// (internal/harnessturn, as the host runs a local one): the claim carries
// the harness's spec (RunnerClaim.Harness), the harness reaches the
// server tools over this host's MCP endpoint with a harness runner token
// (the host announces, gates and records those calls, InTurn.Harness),
// the runner reports the harness's events as any runner's, and the
// harness's permission requests come here (Permission): parked as calls of
// harness_<kind>, waited on while the runner's harness waits, an approval
// claimed for the runner (runnerExecutor) whose report then carries the
// call's result, recorded with the approval (harnessResults).

// runnerHarness is what a runner needs to run sess's turns on its
// harness, or nil for a native session.
func (h *Host) runnerHarness(sess api.Session) *api.RunnerHarness {
	if sess.Runtime == "" {
		return nil
	}
	spec, ok := h.Harness(sess.Runtime)
	if !ok {
		return &api.RunnerHarness{Name: sess.Runtime} // the runner fails it, naming it
	}
	return &api.RunnerHarness{Name: spec.Name, Command: spec.Command, Args: spec.Args, Env: spec.Env, Model: spec.Model,
		Permissions:   api.HarnessPermissions{Allow: spec.Permissions.Allow, Ask: spec.Permissions.Ask, Deny: spec.Permissions.Deny, Always: spec.Permissions.Always},
		HangTimeoutMs: spec.HangTimeout.Milliseconds()}
}

// runnerExecutor is the executor lease of a harness call approved for the
// runner of a turn: its reports renew it (RunnerReport.Running).
func (h *Host) runnerExecutor(turnID string) store.Lease {
	return store.Lease{Holder: "runner:" + turnID, TTL: h.opts.LeaseTTL}
}

// Permission takes a runner's harness's request to run one of its own
// calls: parked for a person the first time (action.approval_requested,
// as a local harness turn's), then waited on for up to req.WaitMs. The
// answer is pending (ask again), approved (claimed for the runner: its
// harness runs the call, and its report carries the result), denied or
// expired (the decision recorded the result). With req.Withdraw the call
// is decided denied by the host, unless it was decided first. The error
// is lease_lost when the claim no longer holds the turn.
func (r Runners) Permission(ctx context.Context, sessionID, turnID string, req api.RunnerPermission) (api.RunnerDecision, error) {
	h := r.h
	if !r.Holds(ctx, sessionID, turnID, req.Token) {
		return api.RunnerDecision{}, api.Errorf(api.CodeLeaseLost, "turn %s of session %s: %s", turnID, sessionID, api.CodeLeaseLost.Description())
	}
	if !callIDPattern.MatchString(req.CallID) || !strings.HasPrefix(req.Tool, "harness_") {
		return api.RunnerDecision{}, api.Errorf(api.CodeBadRequest, "call %q of tool %q: a harness call has a host-made id (tool_<kind>_<random>) and a harness_<kind> tool", req.CallID, req.Tool)
	}
	sess, err := h.Sessions().Get(ctx, sessionID)
	if err != nil {
		return api.RunnerDecision{}, err
	}
	a, err := h.log.Approval(ctx, req.CallID)
	switch {
	case errors.Is(err, store.ErrNotFound) && req.Withdraw:
		return api.RunnerDecision{OK: true, Status: api.ApprovalDenied, By: "host"}, nil
	case errors.Is(err, store.ErrNotFound):
		if err := h.parkHarnessCall(ctx, sess, turnID, harnessturn.Request{CallID: req.CallID, ModelCallID: req.ModelCallID, Tool: req.Tool, Input: req.Input}); err != nil {
			return api.RunnerDecision{}, api.AsError(err)
		}
	case err != nil:
		return api.RunnerDecision{}, storeError(err, nil)
	case a.SessionID != sessionID || a.TurnID != turnID || a.Tool != req.Tool:
		return api.RunnerDecision{}, api.Errorf(api.CodeBadRequest, "call %s is not a %s call of turn %s", req.CallID, req.Tool, turnID)
	}
	if req.Withdraw {
		h.abandon(ctx, req.CallID, "its harness turn ended before a decision")
		a, err := h.log.Approval(ctx, req.CallID)
		if err != nil {
			return api.RunnerDecision{}, storeError(err, nil)
		}
		return decisionOf(a), nil
	}
	a, decided := h.waitApproval(ctx, req.CallID, time.Duration(req.WaitMs)*time.Millisecond+time.Millisecond,
		func(a api.Approval) bool { return a.Status != api.ApprovalPending })
	if !decided {
		return api.RunnerDecision{OK: true, Status: api.ApprovalPending}, nil
	}
	if a.Status == api.ApprovalApproved && a.Outcome == nil {
		// Claimed for this turn's runner; a second ask (the answer was
		// lost) finds it claimed already and is answered the same.
		_, err := h.log.ClaimApproval(context.WithoutCancel(ctx), a.CallID, h.runnerExecutor(turnID))
		if err != nil {
			return api.RunnerDecision{}, storeError(err, nil)
		}
	}
	return decisionOf(a), nil
}

// decisionOf is a decided call's answer to a runner: an approved call
// that has its outcome already (run, or given up) is not run again.
func decisionOf(a api.Approval) api.RunnerDecision {
	d := api.RunnerDecision{OK: true, Status: a.Status, By: a.DecidedBy, Reason: a.Reason}
	if a.Status == api.ApprovalApproved && a.Outcome != nil {
		d.Status, d.Reason = api.ApprovalDenied, "it has an outcome already: "+string(a.Outcome.Result)
	}
	return d
}

// harnessResults takes out of a runner's report the results of the
// harness calls approved for it, which are recorded with their approval
// (record) rather than appended; it returns the other events and the
// calls' recording.
func (h *Host) harnessResults(ctx context.Context, sessionID, turnID string, evs []api.Event) ([]api.Event, func() error) {
	var rest []api.Event
	var approved []api.Approval
	var outs []tool.Output
	var took []time.Duration
	for _, e := range evs {
		if e.Kind == api.KindActionResult {
			r, err := api.Decode[api.ActionResult](e)
			if err == nil && strings.HasPrefix(r.Tool, "harness_") {
				a, err := h.log.Approval(ctx, r.CallID)
				if err == nil && a.SessionID == sessionID && a.TurnID == turnID && a.Tool == r.Tool && a.Status == api.ApprovalApproved && a.Outcome == nil {
					approved = append(approved, a)
					outs = append(outs, tool.Output{Result: r.Result, IsError: r.IsError})
					took = append(took, time.Duration(r.DurationMs)*time.Millisecond)
					continue
				}
			}
		}
		rest = append(rest, e)
	}
	return rest, func() error {
		for i, a := range approved {
			if _, err := h.record(ctx, h.log, a, outs[i], took[i]); err != nil {
				return storeError(err, nil)
			}
			h.waiters.notify(a.CallID)
		}
		return nil
	}
}

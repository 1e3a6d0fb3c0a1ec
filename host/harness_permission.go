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

// harnessSink takes what a harness turn this host runs reports: its
// events go to the session's stream, and its permission requests are
// parked as calls of harness_<kind> that the harness waits on, its
// process alive, until a person decides over HTTP, the CLI, the
// playground or a channel. An approval is claimed here, so it is carried
// out once (by the harness, whose result is recorded with the approval);
// if the turn ends first (a cancel, the harness gone), the call is decided
// denied by the host.
type harnessSink struct {
	h      *Host
	sess   api.Session
	turnID string
	ctx    context.Context // the turn's
}

// Emit records the harness's events; what it says a prompt consumed is
// priced with the host's table.
func (s *harnessSink) Emit(ctx context.Context, p ...api.Payload) error {
	for i, x := range p {
		if u, ok := x.(api.ModelUsage); ok {
			s.h.priceUsage(&u)
			p[i] = u
		}
	}
	return s.h.emit(ctx, s.sess.ID, s.turnID, p...)
}

func (s *harnessSink) Ask(ctx context.Context, q harnessturn.Request) (harnessturn.Decision, error) {
	h := s.h
	if err := h.parkHarnessCall(s.ctx, s.sess, s.turnID, q); err != nil {
		return harnessturn.Decision{}, err
	}
	a, ok := h.awaitDecision(s.ctx, ctx, q.CallID)
	switch {
	case !ok:
		return harnessturn.Decision{Verdict: harnessturn.Withdrawn}, nil
	case a.Status != api.ApprovalApproved:
		return harnessturn.Decision{Verdict: harnessturn.Rejected}, nil
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(s.ctx))
	go func() {
		defer guard(h.logger, "renewing a harness call's executor lease", "call", a.CallID)
		h.leases.keepAlive(rctx, func(ctx context.Context) bool {
			h.log.RenewExecutor(ctx, a.CallID, h.leases.lease())
			return true
		})
	}()
	return harnessturn.Decision{Verdict: harnessturn.Approved, Record: func(out tool.Output, took time.Duration) error {
		stop()
		_, err := h.record(context.WithoutCancel(s.ctx), h.log, a, out, took)
		h.waiters.notify(a.CallID)
		return err
	}}, nil
}

// parkHarnessCall parks a harness's permission request as a call of its
// harness_<kind> tool in the turn.
func (h *Host) parkHarnessCall(ctx context.Context, sess api.Session, turnID string, q harnessturn.Request) error {
	t, ok := harnessTools()[q.Tool]
	if !ok {
		return api.Errorf(api.CodeBadRequest, "tool %q is not a harness's (harness_<kind>)", q.Tool)
	}
	in, err := t.Validate(q.Input)
	if err != nil {
		return err
	}
	_, err = h.park(ctx, t, in, parkSpec{callID: q.CallID, sessionID: sess.ID, turnID: turnID, modelCallID: q.ModelCallID, by: sess.Principal})
	return err
}

// awaitDecision waits for a parked call of a running turn (tctx) to be
// decided, and claims an approval for this host (which the call's runner,
// here the harness, then carries out). ok is false if the turn or the
// request (rctx) ended first: the call is then decided denied by the host,
// with its result, so that it never runs without the one who asked.
func (h *Host) awaitDecision(tctx, rctx context.Context, callID string) (api.Approval, bool) {
	ctx, cancel := context.WithCancel(tctx)
	defer cancel()
	defer context.AfterFunc(rctx, cancel)()
	a, decided := h.waitApproval(ctx, callID, 0, func(a api.Approval) bool { return a.Status != api.ApprovalPending })
	if !decided {
		reason := "the harness withdrew the request before a decision"
		if tctx.Err() != nil {
			reason = "its harness turn ended (" + causeText(tctx) + ") before a decision"
		}
		h.abandon(context.WithoutCancel(tctx), callID, reason)
		return api.Approval{}, false
	}
	if a.Status != api.ApprovalApproved {
		return a, true
	}
	if won, err := h.log.ClaimApproval(context.WithoutCancel(tctx), callID, h.leases.lease()); err == nil && won {
		return a, true
	}
	return a, false // claimed by another: it carries it out
}

// causeText says why ctx ended.
func causeText(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil {
		return c.Error()
	}
	return "ended"
}

// abandon decides a parked call nobody will carry out (its harness turn
// ended) denied by the host, with its result, unless a decision came
// first: an approval nobody claimed is then answered not run.
func (h *Host) abandon(ctx context.Context, callID, reason string) {
	parked, err := h.log.Approval(ctx, callID)
	if err != nil {
		return
	}
	a, _, err := h.log.ResolveApproval(ctx, store.ResolveApprovalParams{CallID: callID, Approved: false, By: "host", Reason: reason,
		Events: events(parked.TurnID, api.ApprovalResolved{CallID: callID, Tool: parked.Tool, Status: api.ApprovalDenied, By: "host", Reason: reason, At: time.Now().UTC()})})
	switch {
	case err == nil:
		won, err := h.record(ctx, h.log, a, tool.ErrorOutput("not run: "+reason), 0)
		if err == nil {
			h.settled(ctx, a, won)
		}
	case errors.Is(err, store.ErrAlreadyResolved) && a.Status == api.ApprovalApproved:
		if won, err := h.log.ClaimApproval(ctx, callID, h.leases.lease()); err == nil && won {
			if _, err := h.record(ctx, h.log, a, tool.ErrorOutput("not run: "+reason), 0); err == nil {
				h.waiters.notify(callID)
			}
		}
	}
}

// abandonHarnessCalls decides the parked harness calls of a harness turn
// that is no longer running (its host or runner died) denied by the host:
// the harness that asked is gone, so none of them can run.
func (h *Host) abandonHarnessCalls(ctx context.Context, sessionID, turnID string) {
	if t, err := h.log.Turn(ctx, sessionID, turnID); err != nil || t.Status == api.TurnStatusRunning {
		return
	}
	open, err := openCalls(ctx, h.log, sessionID, turnID, true)
	if err != nil {
		h.logger.Error("listing a dead harness turn's parked calls", "session", sessionID, "turn", turnID, "err", err)
		return
	}
	for _, c := range open {
		if strings.HasPrefix(c.Tool, "harness_") {
			h.abandon(ctx, c.CallID, "its harness turn ended when its host died")
		}
	}
}

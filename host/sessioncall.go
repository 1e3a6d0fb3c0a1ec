package host

import (
	"context"
	"errors"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// callInSession runs a direct call inside a session, as a turn of its own.
func (h *Host) callInSession(ctx context.Context, t *tool.Tool, in *tool.Input, o CallOptions, start time.Time) (*api.Outcome, error) {
	sessionID := o.SessionID
	sess, err := h.session(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	hold, err := h.beginTurn(ctx, sessionID, api.TurnStarted{Kind: api.TurnCall, Tool: t.Name()})
	if err != nil {
		return nil, err
	}
	turnID := hold.TurnID
	tctx := h.leases.track(h.ctx, h.log, h.logger, hold.Fence)
	defer h.leases.untrack(sessionID, turnID)
	// The caller's cancellation reaches the handler too.
	tctx, cancel := context.WithCancel(tctx)
	stopAfter := context.AfterFunc(ctx, cancel)
	defer stopAfter()
	defer cancel()

	id := tool.NewCallID(t.Name())
	out := h.run(tctx, callSpec{id: id, tool: t, in: in, session: &sess, turnID: turnID, observe: o.Progress, held: true})
	outcome := outcomeOf(t.Name(), id, out, time.Since(start))
	if err := h.emit(ctx, sessionID, turnID, api.ActionResult{
		CallID: id, Tool: t.Name(), IsError: out.IsError, Result: out.Result, DurationMs: outcome.DurationMs, Direct: true,
	}); err != nil {
		h.logger.Error("recording a session call", "session", sessionID, "err", err)
	}
	var end api.Payload = api.TurnCompleted{}
	if cause := context.Cause(tctx); errors.Is(cause, errLeaseLost) || errors.Is(cause, errStopping) {
		end = api.TurnFailed{Reason: cause.Error()}
	}
	if err := h.endTurn(ctx, hold.Fence, end); err != nil {
		h.logger.Error("ending a session call's turn", "session", sessionID, "err", err)
	}
	return outcome, nil
}

// callGated parks a direct call of a gated tool (in its session, as a turn
// of its own, when it has one) and waits up to o.Wait for the decision.
func (h *Host) callGated(ctx context.Context, t *tool.Tool, in *tool.Input, o CallOptions) (*api.Outcome, error) {
	p := parkSpec{callID: tool.NewCallID(t.Name()), sessionID: o.SessionID, by: o.Principal}
	var hold store.Hold
	if o.SessionID != "" {
		sess, err := h.session(ctx, o.SessionID)
		if err != nil {
			return nil, err
		}
		if p.by == "" {
			p.by = sess.Principal
		}
		if hold, err = h.beginTurn(ctx, sess.ID, api.TurnStarted{Kind: api.TurnCall, Tool: t.Name()}); err != nil {
			return nil, err
		}
		p.turnID = hold.TurnID
	}
	a, err := h.park(ctx, t, in, p)
	if err != nil {
		return nil, storeError(err, nil)
	}
	if p.turnID != "" {
		if err := h.log.ParkTurn(context.WithoutCancel(ctx), hold.Fence); err != nil {
			return nil, storeError(err, nil)
		}
		// A decision may have come before the turn parked.
		h.drive(ctx, o.SessionID, p.turnID)
	}
	if o.Wait > 0 {
		if out, ok := h.waitOutcome(ctx, p.callID, o.Wait); ok {
			return out, nil
		}
	}
	return nil, &ApprovalPendingError{CallID: p.callID, Approval: a}
}

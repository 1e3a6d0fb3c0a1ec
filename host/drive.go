package host

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// drive moves a parked turn on. When there is something to do (approved
// calls nobody has claimed, or every call the turn waits for has its
// result) it takes the session's lease, runs those calls here, and then
// goes on with the turn (a model turn runs again from its history, a
// direct call's turn ends) or parks it again. Any host may call it at any
// time: the lease decides which one does the work, the claim which one runs
// each call, so an approved call runs once, on the host that holds its
// session. A host running the turn when a decision comes calls it as the
// turn parks.
func (h *Host) drive(ctx context.Context, sessionID, turnID string) {
	ctx = context.WithoutCancel(ctx)
	turn, err := h.log.Turn(ctx, sessionID, turnID)
	if err != nil {
		return
	}
	toRun, err := h.log.ApprovalsToRun(ctx, sessionID, turnID)
	if err != nil {
		h.logger.Error("listing approved calls to run", "session", sessionID, "turn", turnID, "err", err)
		return
	}
	if turn.Status != api.TurnStatusRunning {
		// The turn ended without them (its host died): a person approved
		// them, so they run, outside it.
		for _, a := range toRun {
			h.runClaimed(ctx, h.ctx, a)
		}
		return
	}
	done, err := h.allAnswered(ctx, sessionID, turnID)
	if err != nil || (!done && len(toRun) == 0) || h.ctx.Err() != nil {
		return // nothing to do yet; or shutting down: the next host does it
	}
	hold, err := h.log.ResumeTurn(ctx, sessionID, turnID, h.leases.lease())
	if err != nil {
		return // not parked: the host running it drives it when it parks
	}
	h.moved(ctx, hold)
	tctx := h.leases.track(h.ctx, h.log, h.logger, hold.Fence)
	if len(toRun) > 0 {
		if toRun, err = h.log.ApprovalsToRun(ctx, sessionID, turnID); err == nil {
			h.runAll(ctx, tctx, toRun)
			done, err = h.allAnswered(ctx, sessionID, turnID)
		}
	}
	switch {
	case err != nil || !done || tctx.Err() != nil:
		h.leases.untrack(sessionID, turnID)
		if err := h.log.ParkTurn(ctx, hold.Fence); err != nil {
			return // the lease was lost: another host has the session
		}
		if h.cancelledParking(tctx, sessionID, turnID) {
			return
		}
		h.drive(ctx, sessionID, turnID) // decisions may have come meanwhile
	case turn.Kind != api.TurnModel:
		defer h.leases.untrack(sessionID, turnID)
		if err := h.endTurn(ctx, hold.Fence, api.TurnCompleted{}); err != nil {
			h.logger.Error("ending a direct call's turn", "session", sessionID, "turn", turnID, "err", err)
		}
	default:
		sess, err := h.log.Session(ctx, sessionID)
		if err != nil {
			h.leases.untrack(sessionID, turnID) // its watch job closes it
			return
		}
		if sess.Mode == api.ModeCloud {
			// A runner goes on with it: it is ready to claim.
			h.leases.untrack(sessionID, turnID)
			h.readyForRunner(ctx, hold)
			return
		}
		h.goTurn(tctx, sess, hold.Fence)
	}
}

// cancelledParking ends a turn this host has just parked if it was
// cancelled while this host held it (tctx is the turn's context): a
// cancel that came as it parked, or while it ran approved calls, ends it
// rather than leave it parked. It reports whether it did.
func (h *Host) cancelledParking(tctx context.Context, sessionID, turnID string) bool {
	if !errors.Is(context.Cause(tctx), errCancelled) {
		return false
	}
	if err := h.cancelTurn(tctx, sessionID, turnID, false); err != nil && !errors.Is(err, api.ErrNoRunningTurn) {
		h.logger.Error("cancelling a parked turn", "session", sessionID, "turn", turnID, "err", err)
	}
	return true
}

// runAll runs approved calls of a turn this host holds, at most
// ToolConcurrency at a time.
func (h *Host) runAll(ctx, tctx context.Context, calls []api.Approval) {
	sem := make(chan struct{}, h.opts.ToolConcurrency)
	var wg sync.WaitGroup
	for _, a := range calls {
		wg.Go(func() {
			defer guard(h.logger, "running an approved call", "call", a.CallID)
			sem <- struct{}{}
			defer func() { <-sem }()
			h.runClaimed(ctx, tctx, a)
		})
	}
	wg.Wait()
}

// runClaimed claims an approved call and, if this host won it, runs it
// under parent and records its outcome.
func (h *Host) runClaimed(ctx, parent context.Context, a api.Approval) {
	won, err := h.log.ClaimApproval(ctx, a.CallID, h.leases.lease())
	if err != nil || !won {
		return
	}
	start := time.Now()
	out := h.runApproved(ctx, parent, a)
	if _, err := h.record(ctx, h.log, a, out, time.Since(start)); err != nil {
		h.logger.Error("recording a call's outcome", "call", a.CallID, "err", err)
	}
	h.waiters.notify(a.CallID)
}

// unclaimed is what the watch of an approved call does while nobody has
// claimed it: drive its turn (its approver may have died before it did).
func (h *Host) unclaimed(a api.Approval) {
	if a.SessionID == "" {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer guard(h.logger, "driving a parked turn", "session", a.SessionID, "turn", a.TurnID)
		h.drive(h.ctx, a.SessionID, a.TurnID)
	}()
}

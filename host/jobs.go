package host

import (
	"context"
	"errors"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// The host's timers, on a store that runs durable jobs (store.Jobs: the
// SQL stores, on River). The store schedules each in the transaction that
// writes what it watches; whichever host's worker runs it writes its
// effects in the transaction that completes it, so that a job River runs
// twice (its host died) applies them once.

// jobHandlers are the host's handlers, by kind.
func (h *Host) jobHandlers() map[string]store.JobHandler {
	return map[string]store.JobHandler{
		store.JobExpireApproval: h.expireJob,
		store.JobWatchCall:      h.watchCallJob,
		jobSweepTurns:           h.sweepTurnsJob,
		jobFireReminder:         h.fireReminderJob,
		jobScheduleTick:         h.scheduleTickJob,
		jobPruneKeys: func(ctx context.Context, tx store.Tx, job store.Job) error {
			_, err := tx.PruneIdempotent(ctx, time.Now())
			return err
		},
	}
}

// jobPruneKeys deletes the expired answers kept for Idempotency-Keys,
// hourly.
const jobPruneKeys = "idempotency.prune"

// jobSweepTurns resumes or closes the turns whose host died. Each host sweeps every
// LeaseTTL/2 itself (Start), in a transaction of its own, so that failover
// does not wait for River's leader; the kind stays for the periodic jobs
// that earlier versions enqueued.
const jobSweepTurns = "turn.sweep"

// runJobs starts working jobs (catchUp has scheduled what state written
// before the store ran jobs lacked).
func (h *Host) runJobs(ctx context.Context, j store.Jobs) error {
	stop, err := j.RunJobs(context.WithoutCancel(ctx), store.RunJobsParams{
		Handlers: h.allJobHandlers(), ID: h.leases.holder, Logger: h.logger,
		Periodic: []store.Periodic{{Kind: jobPruneKeys, Every: time.Hour}},
	})
	if err != nil {
		return err
	}
	h.stopJobs = stop
	return nil
}

// txWriter writes a decision, an outcome or a turn's events in a job's
// transaction, and tells the subscribers once it has committed.
type txWriter struct {
	store.Tx
	log *eventLog
}

func (w txWriter) Append(ctx context.Context, sessionID string, events ...api.Event) ([]api.Event, error) {
	stored, err := w.Tx.Append(ctx, sessionID, events...)
	if err == nil {
		w.AfterCommit(func() { w.log.publish(sessionID, stored) })
	}
	return stored, err
}

func (w txWriter) AppendTurn(ctx context.Context, f store.Fence, events ...api.Event) ([]api.Event, error) {
	stored, err := w.Tx.AppendTurn(ctx, f, events...)
	if err == nil {
		w.AfterCommit(func() { w.log.publish(f.SessionID, stored) })
	}
	return stored, err
}

func (w txWriter) EndTurn(ctx context.Context, p store.EndTurnParams) ([]api.Event, error) {
	stored, err := w.Tx.EndTurn(ctx, p)
	if err == nil {
		w.AfterCommit(func() { w.log.publish(p.SessionID, stored) })
	}
	return stored, err
}

func (w txWriter) FinishApproval(ctx context.Context, callID string, outcome api.Outcome, events ...api.Event) (bool, []api.Event, error) {
	won, stored, err := w.Tx.FinishApproval(ctx, callID, outcome, events...)
	if err == nil && len(stored) > 0 {
		w.AfterCommit(func() { w.log.publish(stored[0].SessionID, stored) })
	}
	return won, stored, err
}

// expireJob expires a parked call nobody decided in time: the decision,
// the outcome and its result on the stream, in the job's transaction.
func (h *Host) expireJob(ctx context.Context, tx store.Tx, job store.Job) error {
	a, err := tx.ExpireApproval(ctx, job.Key, time.Now())
	switch {
	case errors.Is(err, store.ErrBusy):
		return store.Snooze(time.Until(a.ExpiresAt))
	case errors.Is(err, store.ErrAlreadyResolved), errors.Is(err, store.ErrNotFound):
		return nil // decided in time, or gone
	case err != nil:
		return err
	}
	w := txWriter{tx, h.log}
	if err := h.announceDecision(ctx, w, a); err != nil {
		return err
	}
	won, err := h.record(ctx, w, a, expiredOutput(a), 0)
	if err != nil {
		return err
	}
	tx.AfterCommit(func() { h.settled(ctx, a, won) })
	return nil
}

// expireNow expires one call whose expiry has passed, at once: an approver
// came too late.
func (h *Host) expireNow(ctx context.Context, callID string) {
	j, ok := h.log.Store.(store.Jobs)
	if !ok {
		if err := h.expire(ctx); err != nil {
			h.logger.Warn("expiring approvals", "err", err)
		}
		return
	}
	err := j.InTx(ctx, func(tx store.Tx) error {
		return h.expireJob(ctx, tx, store.Job{Kind: store.JobExpireApproval, Key: callID})
	})
	if _, snoozed := store.Snoozed(err); err != nil && !snoozed {
		h.logger.Warn("expiring an approval", "call", callID, "err", err)
	}
}

// sweepTurnsJob resumes or closes the turns whose lease ran out (their
// host died), all in the job's transaction (see sweepDeadTurns).
func (h *Host) sweepTurnsJob(ctx context.Context, tx store.Tx, job store.Job) error {
	return h.sweepDeadTurns(ctx, txWriter{tx, h.log})
}

// closeDeadTurn ends a dead turn with end, records its claimed calls as
// interrupted, and then streams the end: the results of every call it left
// unanswered come first.
func (h *Host) closeDeadTurn(ctx context.Context, w sweepStore, t api.Turn, claimed []api.Approval, end api.TurnFailed) error {
	_, err := w.EndTurn(ctx, store.EndTurnParams{SessionID: t.SessionID, TurnID: t.ID, Expired: true,
		Status: api.TurnStatusFailed, Reason: end.Reason})
	switch {
	case errors.Is(err, store.ErrBusy), errors.Is(err, store.ErrNotRunning), errors.Is(err, store.ErrLeaseLost):
		return nil // renewed, parked or ended meanwhile
	case err != nil:
		return err
	}
	notify, err := h.interruptClaimed(ctx, w, t, claimed)
	if err != nil {
		return err
	}
	// The calls the dead host was running get a result too, so that every
	// call the stream announced is answered. (Parked ones are answered by
	// their decision or expiry.)
	open, err := openCalls(ctx, w, t.SessionID, t.ID, false)
	if err != nil {
		return err
	}
	if _, err := w.Append(ctx, t.SessionID, events(t.ID, append(interruptedResults(open), end)...)...); err != nil {
		return err
	}
	w.AfterCommit(func() {
		for _, id := range notify {
			h.waiters.notify(id)
		}
		h.logger.Info("closed a turn whose host died", "session", t.SessionID, "turn", t.ID)
	})
	return nil
}

// interruptedResults are the results of calls whose host died running
// them.
func interruptedResults(calls []api.Action) []api.Payload {
	out := make([]api.Payload, 0, len(calls)+1)
	for _, a := range calls {
		out = append(out, api.ActionResult{CallID: a.CallID, ModelCallID: a.ModelCallID, Tool: a.Tool, IsError: true, Result: interrupted.Result})
	}
	return out
}

// watchCallJob records an approved call whose host died running it as
// interrupted (it is not run again), and lets its turn go on.
func (h *Host) watchCallJob(ctx context.Context, tx store.Tx, job store.Job) error {
	a, err := tx.OrphanedApproval(ctx, job.Key, time.Now())
	switch {
	case errors.Is(err, store.ErrBusy):
		h.unclaimed(a) // in the background: it waits for this transaction
		return store.Snooze(h.opts.LeaseTTL / 2)
	case errors.Is(err, store.ErrNotRunning), errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	won, err := h.record(ctx, txWriter{tx, h.log}, a, interrupted, 0)
	if err != nil {
		return err
	}
	tx.AfterCommit(func() {
		h.logger.Info("recorded an approved call whose host died running it", "call", a.CallID)
		h.settled(ctx, a, won)
	})
	return nil
}

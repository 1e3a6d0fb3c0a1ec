package host

import (
	"context"
	"errors"
	"fmt"
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
		store.JobWatchTurn:      h.watchTurnJob,
		store.JobWatchCall:      h.watchCallJob,
	}
}

// runJobs starts working jobs, after a reconciliation: the timers of
// state written before the store ran jobs get their jobs (a no-op for
// those that have them).
func (h *Host) runJobs(ctx context.Context, j store.Jobs) error {
	for cursor := ""; ; {
		pending, next, err := h.log.ListApprovals(ctx, store.ListApprovalsParams{Status: api.ApprovalPending, Page: store.Page{Limit: 1000, Cursor: cursor}})
		if err != nil {
			return fmt.Errorf("scheduling approval expiries: %w", err)
		}
		for _, a := range pending {
			if err := j.Schedule(ctx, store.JobSpec{Kind: store.JobExpireApproval, Key: a.CallID, At: a.ExpiresAt}); err != nil {
				return err
			}
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	stop, err := j.RunJobs(context.WithoutCancel(ctx), store.RunJobsParams{
		Handlers: h.jobHandlers(), ID: h.leases.holder, Logger: h.logger,
	})
	if err != nil {
		return err
	}
	h.stopJobs = stop
	return nil
}

// txWriter writes a decision and an outcome in a job's transaction, and
// tells the subscribers once it has committed.
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

// watchTurnJob ends a turn whose lease ran out (its host died) with
// turn.failed, and puts itself off while the lease is renewed. The store is
// the judge: a turn of this very host whose renewals stalled past the TTL
// is ended too, and its next write finds its fence gone.
func (h *Host) watchTurnJob(ctx context.Context, tx store.Tx, job store.Job) error {
	f, err := store.ParseTurnJobKey(job.Key)
	if err != nil {
		h.logger.Warn("dropping a job", "kind", job.Kind, "err", err)
		return nil
	}
	// Its approved calls whose executor died with it are recorded first,
	// so that the stream reads in order: their results, then the end.
	var settle []func()
	orphans, err := tx.OrphanedApprovals(ctx, time.Now())
	if err != nil {
		return err
	}
	for _, a := range orphans {
		if a.SessionID != f.SessionID || a.TurnID != f.TurnID {
			continue
		}
		won, err := h.record(ctx, txWriter{tx, h.log}, a, interrupted, 0)
		if err != nil {
			return err
		}
		if won {
			settle = append(settle, func() { h.waiters.notify(a.CallID) })
		}
	}
	evs, err := tx.EndTurn(ctx, store.EndTurnParams{
		SessionID: f.SessionID, TurnID: f.TurnID, Token: f.Token, Expired: true,
		Status: api.TurnStatusFailed, Reason: reasonRestart, Events: events(f.TurnID, api.TurnFailed{Reason: reasonRestart}),
	})
	switch {
	case errors.Is(err, store.ErrBusy):
		return store.Snooze(h.opts.LeaseTTL / 2) // rolls the records back too
	case errors.Is(err, store.ErrNotRunning), errors.Is(err, store.ErrLeaseLost):
		evs = nil // ended, parked, or resumed (and watched afresh)
	case err != nil:
		return err
	}
	tx.AfterCommit(func() {
		for _, fn := range settle {
			fn()
		}
		if evs != nil {
			h.log.publish(f.SessionID, evs)
			h.logger.Info("closed a turn whose host died", "session", f.SessionID, "turn", f.TurnID)
		}
	})
	return nil
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

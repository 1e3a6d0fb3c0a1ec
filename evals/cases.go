package evals

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/store"
)

// jobCase runs a case of a batch (Key: caseKey).
const jobCase = "eval.case"

const (
	// evalSnooze is how long a case's job waits while its batch runs as
	// many cases as it may.
	evalSnooze    = 500 * time.Millisecond
	evalSnoozeMax = 5 * time.Second
)

// evalInterrupted is the error of a case whose host stopped (or died)
// while it ran: it is not run again, since its session's side effects
// may have happened.
const evalInterrupted = "interrupted: its host stopped; not run again"

// errEvalLapsed ends a case whose hold another host's sweep ended.
var errEvalLapsed = errors.New("the case's hold lapsed: it was recorded as interrupted")

func caseKey(batchID string, index int) string { return batchID + "/" + strconv.Itoa(index) }

func parseCaseKey(key string) (string, int, error) {
	i := strings.LastIndexByte(key, '/')
	if i <= 0 {
		return "", 0, fmt.Errorf("eval case key %q has no /", key)
	}
	n, err := strconv.Atoi(key[i+1:])
	if err != nil || n < 0 {
		return "", 0, fmt.Errorf("eval case key %q: no index after the /", key)
	}
	return key[:i], n, nil
}

// caseJob starts a queued case (Key: caseKey): see startCase. A case
// started already (by this job run before, or by a host that started it
// itself) leaves the job nothing to do.
func (s *Service) caseJob(ctx context.Context, tx store.Tx, job store.Job) error {
	batchID, index, err := parseCaseKey(job.Key)
	if err != nil {
		s.logger.Warn("dropped a malformed eval case job", "key", job.Key, "err", err)
		return nil
	}
	bc, err := s.cache.batch(ctx, tx, batchID)
	if errors.Is(err, store.ErrNotFound) {
		s.logger.Warn("dropped the job of an eval case whose batch is gone", "batch", batchID, "case", index)
		return nil
	}
	if err != nil {
		return err
	}
	if index >= len(bc.cases) {
		s.logger.Warn("dropped the job of an eval case its batch does not have", "batch", batchID, "case", index)
		return nil
	}
	front := bc.queued()
	if index < front {
		return nil // started already
	}
	// While the batch is full, a case waits, the longer the further back
	// it is in the queue: the host that ends a case starts the next
	// itself, and every host looks at the batches at its sweeps; the jobs
	// are for the hosts that start after a crash.
	running, err := tx.RunningEvalCases(ctx, batchID)
	if err != nil {
		return err
	}
	if n := bc.concurrency; running >= n {
		return store.Snooze(min(evalSnooze*time.Duration(1+(index-front)/n), evalSnoozeMax))
	}
	started, err := s.startCase(ctx, tx, batchID, index, bc)
	if err == nil && !started {
		bc.taken(index)
	}
	return err
}

// startCase marks a queued case running in tx, in a session whose id it
// reserves, held by a lease, and runs it here once tx commits; false if
// the case was not queued (started already, or gone). While the batch
// runs as many cases as it may, it snoozes (rolling back). StartEvalCase
// takes the batch's row, so that the count after it sees every case
// started before: the batch never runs more than it may.
func (s *Service) startCase(ctx context.Context, tx store.Tx, batchID string, index int, bc *batchCases) (bool, error) {
	if s.h.Closing() {
		// A closing host starts no case (its job worker may still run a
		// job while the cases it ran are being interrupted): the case
		// waits for another host, or the next start.
		return false, store.Snooze(evalSnooze)
	}
	sessionID := host.NewSessionID()
	started := time.Now()
	err := tx.StartEvalCase(ctx, batchID, index, sessionID, started, started.Add(s.h.LeaseTTL()))
	if errors.Is(err, store.ErrNotRunning) || errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	running, err := tx.RunningEvalCases(ctx, batchID)
	if err != nil {
		return false, err
	}
	if running > bc.concurrency {
		return false, store.Snooze(evalSnooze)
	}
	tx.AfterCommit(func() {
		s.goCase(batchID, index, bc.cases[index], bc.principal, sessionID, started)
	})
	return true, nil
}

// startQueued starts a batch's queued cases here, in index order, as
// many as the batch may run, each in a transaction of its own as its job
// would. ctx is the host's: it ends as the host closes.
func (s *Service) startQueued(ctx context.Context, batchID string) {
	if ctx.Err() != nil {
		return
	}
	bc, err := s.cache.batch(ctx, s.evals, batchID)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, store.ErrNotFound) {
			s.logger.Warn("reading an eval batch", "batch", batchID, "err", err)
		}
		return
	}
	for {
		i := bc.queued()
		if i >= len(bc.cases) || ctx.Err() != nil {
			return
		}
		err := s.jobs.InTx(ctx, func(tx store.Tx) error {
			_, err := s.startCase(ctx, tx, batchID, i, bc)
			return err
		})
		if _, snoozed := store.Snoozed(err); snoozed {
			return // the batch runs as many as it may
		}
		if err != nil {
			if ctx.Err() == nil {
				s.logger.Warn("starting an eval case", "batch", batchID, "case", i, "err", err)
			}
			return
		}
		bc.taken(i) // started here, or elsewhere before
	}
}

// goCase runs a started case in the background on the host, in a
// session of principal's (the batch's), renewing its hold, and records
// its result; then it starts the batch's next queued cases.
func (s *Service) goCase(batchID string, index int, c api.EvalCase, principal, sessionID string, started time.Time) {
	ran := s.h.Go("running an eval case", func(hostCtx context.Context) {
		ctx, cancel := context.WithCancelCause(hostCtx)
		defer cancel(nil)
		go s.keepHold(ctx, cancel, batchID, index)
		r := s.runCase(ctx, c, principal, sessionID)
		r.Index, r.Case, r.SessionID, r.Started = index, c, sessionID, &started
		if errors.Is(context.Cause(ctx), errEvalLapsed) {
			s.logger.Warn("an eval case's hold lapsed while it ran; another host recorded it as interrupted", "batch", batchID, "case", index)
			return
		}
		if r.Status == api.EvalFailed && hostCtx.Err() != nil {
			// The host is stopping: like a host that died, not run again.
			r.Error = evalInterrupted
		}
		done, err := s.finishCase(context.WithoutCancel(ctx), batchID, r)
		switch {
		case errors.Is(err, store.ErrNotRunning):
			s.logger.Warn("an eval case ended after another host recorded it as interrupted", "batch", batchID, "case", index)
		case err != nil:
			s.logger.Error("recording an eval case's result", "batch", batchID, "case", index, "err", err)
		case done:
			s.cache.forget(batchID)
			s.logger.Info("an eval batch completed", "batch", batchID)
		}
		cancel(nil)
		if err == nil && !done {
			s.startQueued(hostCtx, batchID)
		}
	})
	if !ran {
		// The host is closing: the case is interrupted before it began,
		// as it would be had it begun.
		r := api.EvalCaseResult{Index: index, Case: c, SessionID: sessionID, Started: &started, Status: api.EvalFailed, Error: evalInterrupted}
		if done, err := s.finishCase(context.Background(), batchID, r); err != nil && !errors.Is(err, store.ErrNotRunning) {
			s.logger.Error("recording an eval case's result", "batch", batchID, "case", index, "err", err)
		} else if done {
			s.cache.forget(batchID)
			s.logger.Info("an eval batch completed", "batch", batchID)
		}
	}
}

// keepHold renews a running case's hold every LeaseTTL/3 until ctx ends;
// if another host's sweep ended the hold, it cancels the case with
// errEvalLapsed. A renewal under way is not cancelled with ctx.
func (s *Service) keepHold(ctx context.Context, cancel context.CancelCauseFunc, batchID string, index int) {
	defer func() {
		if p := recover(); p != nil {
			s.logger.Error("renewing an eval case's hold panicked", "batch", batchID, "case", index, "panic", p, "stack", string(debug.Stack()))
		}
	}()
	ttl := s.h.LeaseTTL()
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := s.evals.RenewEvalCase(context.WithoutCancel(ctx), batchID, index, time.Now().Add(ttl))
		switch {
		case errors.Is(err, store.ErrNotRunning), errors.Is(err, store.ErrNotFound):
			cancel(errEvalLapsed)
			return
		case err != nil:
			s.logger.Warn("renewing an eval case's hold", "batch", batchID, "case", index, "err", err)
		}
	}
}

// finishCase records a case's result, trying again for a while if the
// store fails (else the case's hold runs out, and the sweep records it as
// interrupted).
func (s *Service) finishCase(ctx context.Context, batchID string, r api.EvalCaseResult) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for wait := 100 * time.Millisecond; ; wait *= 2 {
		done, err := s.evals.FinishEvalCase(ctx, batchID, r)
		if err == nil || errors.Is(err, store.ErrNotRunning) || errors.Is(err, store.ErrNotFound) {
			return done, err
		}
		select {
		case <-ctx.Done():
			return false, err
		case <-time.After(wait):
		}
	}
}

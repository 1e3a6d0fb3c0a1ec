package evals

import (
	"context"
	"errors"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// evalSweepBatches is how many of the newest batches a sweep looks at for
// queued cases to start.
const evalSweepBatches = 50

// sweep records the cases whose host died (their hold ran out) as
// failed, never to run again, and starts the queued cases of the newest
// batches that are not completed (their jobs may wait for River's
// worker, or for a job a dead host was working when it died): the
// service's round of the host's sweep (host.Subsystem.Sweep).
func (s *Service) sweep(ctx context.Context) {
	if s.ready() != nil {
		return
	}
	expired, err := s.evals.ExpiredEvalCases(ctx, time.Now())
	if err != nil {
		if ctx.Err() == nil {
			s.logger.Warn("listing interrupted eval cases", "err", err)
		}
		return
	}
	for _, ref := range expired {
		done, err := s.evals.FinishEvalCase(ctx, ref.BatchID, api.EvalCaseResult{Index: ref.Index, Status: api.EvalFailed, Error: evalInterrupted})
		switch {
		case errors.Is(err, store.ErrNotRunning), errors.Is(err, store.ErrNotFound):
		case err != nil:
			if ctx.Err() == nil {
				s.logger.Warn("recording an interrupted eval case", "batch", ref.BatchID, "case", ref.Index, "err", err)
			}
			return
		default:
			s.logger.Info("recorded an eval case whose host died as interrupted", "batch", ref.BatchID, "case", ref.Index)
			if done {
				s.cache.forget(ref.BatchID)
				s.logger.Info("an eval batch completed", "batch", ref.BatchID)
			}
		}
	}
	batches, _, err := s.evals.ListEvalBatches(ctx, store.Page{Limit: evalSweepBatches})
	if err != nil {
		if ctx.Err() == nil {
			s.logger.Warn("listing eval batches", "err", err)
		}
		return
	}
	for _, b := range batches {
		if b.Status == api.EvalCompleted {
			s.cache.forget(b.ID)
		} else {
			s.startQueued(ctx, b.ID)
		}
	}
}

package turnloop

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/model"
)

// The backoff of a model call's retries when the provider names no wait:
// a random wait up to RetryBase for the first retry, doubling for each
// next one up to RetryCap ("full jitter").
const (
	RetryBase = 500 * time.Millisecond
	RetryCap  = 30 * time.Second
)

// backoff is the wait before retry n (1 for the first) when the provider
// named none.
func backoff(n int) time.Duration {
	ceiling := RetryCap
	if n < 16 {
		ceiling = min(RetryBase<<(n-1), RetryCap)
	}
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}

// retryAfter records retry n of a call that failed with merr and waits
// for it: the provider's RetryAfter, or else the backoff. mctx is the
// call's context (the model timeout), ctx the turn's. A wait that would
// end past the model timeout is not waited: the call fails with merr.
func retryAfter(ctx, mctx context.Context, env Env, batch *deltas, n int, merr *model.Error) error {
	wait := merr.RetryAfter
	if wait <= 0 {
		wait = backoff(n)
	}
	if deadline, ok := mctx.Deadline(); ok && time.Until(deadline) <= wait {
		return fmt.Errorf("model: %w (not retried: the wait of %s would outlast the model timeout)", merr, wait.Round(time.Millisecond))
	}
	if err := batch.flush(); err != nil {
		return err
	}
	if err := env.Emit(ctx, api.ModelRetry{
		Attempt: n, Code: api.FailureCode(merr.Reason), Status: merr.Status, WaitMs: wait.Milliseconds(), Message: merr.Message,
	}); err != nil {
		return err
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-mctx.Done():
		if ctx.Err() != nil {
			return fmt.Errorf("model: %w", context.Cause(ctx))
		}
		return fmt.Errorf("model: %w", context.Cause(mctx))
	}
}

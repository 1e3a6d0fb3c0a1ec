package store

import (
	"context"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// Evals keeps eval batches and their cases' results: the stores that run
// durable jobs (the SQL stores) implement it, and so does every [Tx] of
// theirs, so that a batch and its cases' jobs are written in one
// transaction.
type Evals interface {
	// CreateEvalBatch stores a batch (b.ID, Name, Created, Total set by
	// the caller; Status queued) and its cases (b.Cases: Index 0..n-1,
	// Case, Status queued). ErrExists if the id is taken.
	CreateEvalBatch(ctx context.Context, b api.EvalBatch) error
	// EvalBatch returns a batch with its cases, in index order;
	// ErrNotFound without it.
	EvalBatch(ctx context.Context, id string) (api.EvalBatch, error)
	// ListEvalBatches lists batches, newest first, without their cases,
	// and the cursor of the next page ("" after the last).
	ListEvalBatches(ctx context.Context, p Page) ([]api.EvalBatch, string, error)
	// RunningEvalCases counts a batch's running cases.
	RunningEvalCases(ctx context.Context, batchID string) (int, error)
	// StartEvalCase marks a queued case running in sessionID, held until
	// leaseUntil, and the batch running; ErrNotRunning if the case is not
	// queued (another host took it), ErrNotFound without it.
	StartEvalCase(ctx context.Context, batchID string, index int, sessionID string, started, leaseUntil time.Time) error
	// RenewEvalCase extends a running case's hold; ErrNotRunning if it is
	// no longer running.
	RenewEvalCase(ctx context.Context, batchID string, index int, leaseUntil time.Time) error
	// FinishEvalCase records a running case's result (r.Status completed
	// or failed, Checks, Score, Pass, Error; r.Ended set if nil). When it
	// was the batch's last case to finish, the batch is completed in the
	// same write: Ended, Score (the mean of its cases' scores), Passed.
	// done says so. ErrNotRunning if the case is not running (finished
	// already).
	FinishEvalCase(ctx context.Context, batchID string, r api.EvalCaseResult) (done bool, err error)
	// PrincipalEvals counts a principal's batches that are not completed
	// (b.Principal as CreateEvalBatch stored it) and their cases still
	// queued: what the principal has asked for and not yet run.
	PrincipalEvals(ctx context.Context, principal string) (EvalLoad, error)
	// ExpiredEvalCases lists the running cases whose hold ran out before
	// now (their host died), as batch id and index.
	ExpiredEvalCases(ctx context.Context, now time.Time) ([]EvalCaseRef, error)
}

// EvalCaseRef names one case of a batch.
type EvalCaseRef struct {
	BatchID string
	Index   int
}

// EvalLoad is what [Evals.PrincipalEvals] counts of a principal's batches.
type EvalLoad struct {
	// Batches are the principal's batches that are not completed.
	Batches int
	// Queued are their cases not yet started.
	Queued int
}

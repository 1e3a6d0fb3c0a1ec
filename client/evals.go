package client

import (
	"context"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// RunEval runs an eval's cases as a batch, each in a session of its own on
// the channel "eval", and returns the batch as it started (queued, with
// its cases); it runs in the background as durable jobs: poll
// [Client.Eval] (or call [Client.WaitEval]) until its Status is
// [api.EvalCompleted]. The request is sent with an Idempotency-Key, and
// again with it if the connection fails: the host starts one batch (the
// route is [api.Route.Idempotent]).
//
// The host refuses, as a [*StatusError] whose code errors.Is matches
// against an [api.Error] with that code: [api.CodeInvalidEval] (400) for
// an eval with no cases, a case with neither message nor conversation, a
// check that is not exactly one kind, and the like (its Violations list
// every problem), [api.CodeNoJobs] (503) on a host whose store runs no
// durable jobs.
func (c *Client) RunEval(ctx context.Context, req api.EvalRunRequest) (api.EvalBatch, error) {
	var ans api.EvalBatchResponse
	if err := c.call(ctx, "runEval", nil, nil, req, &ans); err != nil {
		return api.EvalBatch{}, err
	}
	return ans.EvalBatch, nil
}

// EvalsOptions page a listing of eval batches. Nil means defaults.
type EvalsOptions struct {
	Limit  int    // at most this many (0: the host's default, 50; at most 1000)
	Cursor string // from the previous page; "" for the first
}

// Evals returns a page of eval batches, newest first, without their cases,
// and the cursor of the next page ("" after the last).
func (c *Client) Evals(ctx context.Context, opts *EvalsOptions) ([]api.EvalBatch, string, error) {
	var o EvalsOptions
	if opts != nil {
		o = *opts
	}
	var ans api.EvalList
	q := query{}.add("limit", limitParam(o.Limit)).add("cursor", o.Cursor)
	if err := c.call(ctx, "listEvals", nil, q, nil, &ans); err != nil {
		return nil, "", err
	}
	return ans.Batches, ans.Next, nil
}

// Eval returns an eval batch with each case's result: its status, session,
// checks, score and error. An unknown id is [api.CodeEvalNotFound] (404).
func (c *Client) Eval(ctx context.Context, id string) (api.EvalBatch, error) {
	var ans api.EvalBatchResponse
	if err := c.call(ctx, "getEval", []string{id}, nil, nil, &ans); err != nil {
		return api.EvalBatch{}, err
	}
	return ans.EvalBatch, nil
}

// WaitEval polls a batch every interval (0 means a second) until it is
// completed, and returns it; progress, if not nil, is called with the
// batch after each poll that finds it still running. It returns ctx's
// error if ctx ends first (the batch goes on), with the batch as last
// read.
func (c *Client) WaitEval(ctx context.Context, id string, interval time.Duration, progress func(api.EvalBatch)) (api.EvalBatch, error) {
	if interval <= 0 {
		interval = time.Second
	}
	var last api.EvalBatch
	for {
		b, err := c.Eval(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return last, ctx.Err() // ended during a poll
			}
			return api.EvalBatch{}, err
		}
		last = b
		if b.Status == api.EvalCompleted {
			return b, nil
		}
		if progress != nil {
			progress(b)
		}
		select {
		case <-ctx.Done():
			return b, ctx.Err()
		case <-time.After(interval):
		}
	}
}

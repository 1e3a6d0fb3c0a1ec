package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/client"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// The client runs an eval, waits for its batch, reads it and lists the
// batches a page at a time; the host's refusals come back with their
// codes: invalid_eval with every problem, eval_not_found, no_jobs.
func TestEvals(t *testing.T) {
	t.Parallel()
	b := setup(t) // the model answers "done" to everything
	ctx := context.Background()
	req := api.EvalRunRequest{Name: "smoke", Cases: []api.EvalCase{
		{Name: "answers", Message: "Hi", Checks: []api.EvalCheck{{Contains: "done"}, {NoError: true}}},
		{Conversation: []string{"Hi", "Greet Ada"}, Checks: []api.EvalCheck{{Called: "greet", Args: map[string]any{"name": "Ada"}}, {MaxSteps: 2}}},
	}}
	started, err := b.client.RunEval(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(started.ID, "eval_") || started.Status != api.EvalQueued || started.Total != 2 || len(started.Cases) != 2 || started.Cases[1].Case.Name != "case-2" {
		t.Fatalf("started: %+v", started)
	}
	polls := 0
	done, err := b.client.WaitEval(ctx, started.ID, 20*time.Millisecond, func(api.EvalBatch) { polls++ })
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != api.EvalCompleted || done.Ended == nil || done.Passed != 1 || done.Score != 0.75 || len(done.Cases) != 2 {
		t.Fatalf("done: %+v", done)
	}
	second := done.Cases[1]
	if second.Status != api.EvalCompleted || second.Pass || second.SessionID == "" || len(second.Checks) != 2 ||
		second.Checks[0].Pass || second.Checks[0].Detail != "not called" || !second.Checks[1].Pass || second.Checks[1].Detail != "2 model steps" {
		t.Errorf("the second case: %+v", second)
	}
	if got, err := b.client.Eval(ctx, started.ID); err != nil || got.Score != done.Score || len(got.Cases) != 2 {
		t.Errorf("Eval: %+v %v", got, err)
	}
	// Its sessions are on the eval channel.
	sess, err := b.client.Session(ctx, second.SessionID)
	if err != nil || sess.Channel != "eval" {
		t.Errorf("the case's session: %+v %v", sess, err)
	}

	// Pages, newest first, without cases.
	var ids []string
	for range 2 {
		s, err := b.client.RunEval(ctx, api.EvalRunRequest{Cases: []api.EvalCase{{Message: "Hi"}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append([]string{s.ID}, ids...)
	}
	ids = append(ids, started.ID)
	page, next, err := b.client.Evals(ctx, &client.EvalsOptions{Limit: 2})
	if err != nil || len(page) != 2 || next == "" || page[0].ID != ids[0] || page[1].ID != ids[1] || page[0].Cases != nil || page[0].Name != "eval" {
		t.Fatalf("first page: %+v %q %v", page, next, err)
	}
	page, next, err = b.client.Evals(ctx, &client.EvalsOptions{Limit: 2, Cursor: next})
	if err != nil || len(page) != 1 || next != "" || page[0].ID != ids[2] || page[0].Status != api.EvalCompleted || page[0].Passed != 1 || page[0].Total != 2 {
		t.Fatalf("second page: %+v %q %v", page, next, err)
	}
	if all, _, err := b.client.Evals(ctx, nil); err != nil || len(all) != 3 {
		t.Errorf("all: %d %v", len(all), err)
	}

	// Refusals.
	_, err = b.client.RunEval(ctx, api.EvalRunRequest{Cases: []api.EvalCase{{}, {Message: "x", Checks: []api.EvalCheck{{Contains: "a", NoError: true}}}}})
	wantCode(t, "an invalid eval", err, api.CodeInvalidEval, http.StatusBadRequest)
	var se *client.StatusError
	if errors.As(err, &se) && (len(se.Err.Violations) != 2 || se.Err.Violations[0].Path != "cases[0]" || se.Err.Violations[1].Path != "cases[1].checks[0]") {
		t.Errorf("violations: %+v", se.Err.Violations)
	}
	_, err = b.client.Eval(ctx, "eval_nope")
	wantCode(t, "an unknown batch", err, api.CodeEvalNotFound, http.StatusNotFound)
	_, _, err = b.client.Evals(ctx, &client.EvalsOptions{Cursor: "bogus"})
	wantCode(t, "a bad cursor", err, api.CodeBadCursor, http.StatusBadRequest)
	if _, err := b.client.WaitEval(ctx, "eval_nope", 0, nil); !errors.Is(err, &api.Error{Code: api.CodeEvalNotFound}) {
		t.Errorf("WaitEval of an unknown batch: %v", err)
	}

	mem := startScheduleHost(t, nil) // the in-memory store: no jobs
	_, err = mem.RunEval(ctx, req)
	wantCode(t, "an eval on the memory store", err, api.CodeNoJobs, http.StatusServiceUnavailable)
	_, _, err = mem.Evals(ctx, nil)
	wantCode(t, "listing evals on the memory store", err, api.CodeNoJobs, http.StatusServiceUnavailable)
}

// WaitEval returns when its context ends, with the batch as last read.
func TestWaitEvalCancelled(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	b := setup(t, fakemodel.Reply{Until: release})
	ctx := context.Background()
	started, err := b.client.RunEval(ctx, api.EvalRunRequest{Cases: []api.EvalCase{{Message: "Hang"}}})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	polls := 0
	got, err := b.client.WaitEval(wctx, started.ID, 50*time.Millisecond, func(api.EvalBatch) { polls++ })
	if !errors.Is(err, context.DeadlineExceeded) || polls == 0 || got.ID != started.ID || got.Status == api.EvalCompleted {
		t.Errorf("WaitEval: %+v %v", got, err)
	}
}

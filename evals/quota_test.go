package evals_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/evals"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// quotaExceeded fails the test unless err is quota_exceeded containing
// want.
func quotaExceeded(t *testing.T, what string, err error, want string) {
	t.Helper()
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeQuotaExceeded || !strings.Contains(ae.Message, want) {
		t.Errorf("%s: %v; want quota_exceeded with %q", what, err, want)
	}
}

// Eval cases' sessions are the sessions of the principal who ran the
// batch: they count against its MaxSessions, the cases still queued of
// its batches too; a batch that would take it past the quota is refused
// whole, and other principals are not.
func TestEvalSessionQuota(t *testing.T) {
	m := newEvalModel(t)
	release := make(chan struct{})
	defer close(release)
	m.Default.SetDefault(fakemodel.Reply{Until: release})
	h := evalHost(t, openStore(t, "sqlite"), evalTools(t), m, host.Options{MaxSessions: 4})
	ctx := context.Background()
	for range 2 {
		if _, _, err := h.Sessions().Create(ctx, host.SessionOptions{Principal: "ana"}); err != nil {
			t.Fatal(err)
		}
	}
	cases := func(n int) []api.EvalCase {
		var cs []api.EvalCase
		for i := range n {
			cs = append(cs, api.EvalCase{Message: fmt.Sprintf("case %d", i)})
		}
		return cs
	}
	_, err := h.RunEval(ctx, api.EvalRunRequest{Cases: cases(3)}, "ana")
	quotaExceeded(t, "3 cases with 2 of 4 sessions used", err, "ana has created 2 sessions in the last hour and asks for 3 more; this host allows 4 an hour")
	b, err := h.RunEval(ctx, api.EvalRunRequest{Cases: cases(2), Concurrency: 1}, "ana")
	if err != nil {
		t.Fatalf("2 cases with 2 of 4 sessions used: %v", err)
	}
	if b.Principal != "ana" {
		t.Errorf("the batch's principal is %q, want ana", b.Principal)
	}
	// One of its cases runs in a session of ana's (which one is a race of
	// the host and its job worker); the other, queued, counts all the same.
	deadline := time.Now().Add(30 * time.Second)
	var sessionID string
	for sessionID == "" {
		got, err := h.GetEval(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		sessionID = got.Cases[0].SessionID + got.Cases[1].SessionID
		if time.Now().After(deadline) {
			t.Fatal("no case started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		sess, err := h.Sessions().Get(ctx, sessionID)
		if err == nil {
			if sess.Principal != "ana" || sess.Channel != host.EvalChannel {
				t.Errorf("the case's session: %+v; want ana's, on the eval channel", sess)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the case's session: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, err = h.RunEval(ctx, api.EvalRunRequest{Cases: cases(1)}, "ana")
	quotaExceeded(t, "1 case with 3 of 4 sessions used and 1 queued", err, "ana has created 3 sessions in the last hour and asks for 2 more")
	if _, _, err := h.Sessions().Create(ctx, host.SessionOptions{Principal: "ana"}); err != nil {
		t.Errorf("ana's fourth session: %v", err)
	}
	if _, err := h.RunEval(ctx, api.EvalRunRequest{Cases: cases(4)}, "bob"); err != nil {
		t.Errorf("bob's batch: %v", err)
	}
}

// A principal runs at most MaxRunningBatches batches at once; the next
// is refused with quota_exceeded naming the limit, and another
// principal's is not.
func TestEvalRunningBatches(t *testing.T) {
	m := newEvalModel(t)
	release := make(chan struct{})
	defer close(release)
	m.Default.SetDefault(fakemodel.Reply{Until: release})
	h := evalHost(t, openStore(t, "sqlite"), evalTools(t), m, host.Options{})
	ctx := context.Background()
	one := api.EvalRunRequest{Cases: []api.EvalCase{{Message: "hi"}}}
	for i := range evals.MaxRunningBatches {
		if _, err := h.RunEval(ctx, one, "ana"); err != nil {
			t.Fatalf("batch %d: %v", i+1, err)
		}
	}
	_, err := h.RunEval(ctx, one, "ana")
	quotaExceeded(t, "one batch more", err, fmt.Sprintf("ana already runs %d eval batches, the most a principal may run at once (%d)", evals.MaxRunningBatches, evals.MaxRunningBatches))
	if _, err := h.RunEval(ctx, one, "bob"); err != nil {
		t.Errorf("bob's batch: %v", err)
	}
}

// Options.MaxRunningBatches (serve's --max-eval-batches) sets the bound;
// negative, there is none.
func TestEvalRunningBatchesOption(t *testing.T) {
	m := newEvalModel(t)
	release := make(chan struct{})
	defer close(release)
	m.Default.SetDefault(fakemodel.Reply{Until: release})
	ctx := context.Background()
	one := api.EvalRunRequest{Cases: []api.EvalCase{{Message: "hi"}}}
	for _, tt := range []struct {
		max, accepted int
	}{{1, 1}, {-1, evals.MaxRunningBatches + 2}} {
		h, err := host.New(evalTools(t), &host.Options{StateRoot: t.TempDir(), Store: openStore(t, "sqlite"), Model: mustFake(t, m)})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		ev, err := evals.New(h, &evals.Options{MaxRunningBatches: tt.max})
		if err != nil {
			t.Fatal(err)
		}
		for i := range tt.accepted {
			if _, err := ev.Run(ctx, one, "ana"); err != nil {
				t.Fatalf("max %d: batch %d: %v", tt.max, i+1, err)
			}
		}
		if tt.max > 0 {
			_, err := ev.Run(ctx, one, "ana")
			quotaExceeded(t, "one batch more", err, fmt.Sprintf("ana already runs %d eval batches, the most a principal may run at once (%d)", tt.max, tt.max))
		}
	}
}

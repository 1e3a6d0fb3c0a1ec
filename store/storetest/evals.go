package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// testEvals keeps eval batches in a store that has them (store.Evals): a
// batch is created once with its cases, queued; a case is started by one
// host only, held by its lease while running, and finished once; the last
// case to finish completes the batch with its cases' mean score, exactly
// once even when cases finish at once; batches are listed newest first, a
// page at a time; and what a store.Tx wrote rolls back with it.
func testEvals(t *testing.T, s store.Store) {
	es, ok := s.(store.Evals)
	if !ok {
		t.Skip("the store keeps no evals")
	}
	t.Run("Batch", func(t *testing.T) { testEvalBatch(t, es) })
	t.Run("StartOnce", func(t *testing.T) { testEvalStartOnce(t, es) })
	t.Run("FinishTogether", func(t *testing.T) { testEvalFinishTogether(t, es) })
	t.Run("List", func(t *testing.T) { testEvalList(t, es) })
	t.Run("RollBack", func(t *testing.T) { testEvalsRollBack(t, s, es) })
	t.Run("Principal", func(t *testing.T) { testEvalPrincipal(t, es) })
}

// testEvalPrincipal: a batch keeps who ran it, and PrincipalEvals counts
// that principal's batches not completed and their queued cases.
func testEvalPrincipal(t *testing.T, es store.Evals) {
	load := func(principal string, want store.EvalLoad) {
		t.Helper()
		if got, err := es.PrincipalEvals(ctx, principal); err != nil || got != want {
			t.Errorf("PrincipalEvals(%q) = %+v, %v; want %+v", principal, got, err, want)
		}
	}
	load("ana", store.EvalLoad{})
	for _, b := range []struct {
		id, principal string
		n             int
	}{{"pa1", "ana", 3}, {"pa2", "ana", 2}, {"pb1", "bob", 1}} {
		eb := evalBatch(b.id, evalAt(time.Duration(b.n)*time.Second), b.n)
		eb.Principal = b.principal
		if err := es.CreateEvalBatch(ctx, eb); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := es.EvalBatch(ctx, "pa1"); err != nil || b.Principal != "ana" {
		t.Errorf("EvalBatch(pa1).Principal = %q, %v; want ana", b.Principal, err)
	}
	load("ana", store.EvalLoad{Batches: 2, Queued: 5})
	load("bob", store.EvalLoad{Batches: 1, Queued: 1})
	if err := es.StartEvalCase(ctx, "pa1", 0, "sess-pa1-0", evalAt(time.Minute), evalAt(time.Hour)); err != nil {
		t.Fatal(err)
	}
	load("ana", store.EvalLoad{Batches: 2, Queued: 4})
	for i := range 2 {
		if err := es.StartEvalCase(ctx, "pa2", i, fmt.Sprintf("sess-pa2-%d", i), evalAt(time.Minute), evalAt(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if _, err := es.FinishEvalCase(ctx, "pa2", api.EvalCaseResult{Index: i, Status: api.EvalCompleted}); err != nil {
			t.Fatal(err)
		}
	}
	load("ana", store.EvalLoad{Batches: 1, Queued: 2}) // pa2 completed
}

var evalBase = time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)

func evalAt(d time.Duration) time.Time { return evalBase.Add(d) }

func evalPtr(d time.Duration) *time.Time { t := evalAt(d); return &t }

// evalBatch is a new batch of n cases, as CreateEvalBatch takes it.
func evalBatch(id string, created time.Time, n int) api.EvalBatch {
	b := api.EvalBatch{ID: id, Name: "eval " + id, Status: api.EvalQueued, Created: created, Total: n, Concurrency: 2}
	for i := range n {
		b.Cases = append(b.Cases, api.EvalCaseResult{Index: i, Status: api.EvalQueued, Case: api.EvalCase{
			Name:    fmt.Sprintf("case-%d", i),
			Message: fmt.Sprintf("question %d", i),
			Checks:  []api.EvalCheck{{Contains: "answer"}, {Called: "read", Args: map[string]any{"path": "a.go", "n": 2.0}}, {NoError: true}},
		}})
	}
	return b
}

// evalJSON shows a value as JSON, to compare batches and cases (times in
// UTC, to the microsecond).
func evalJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func testEvalBatch(t *testing.T, es store.Evals) {
	check := func(want api.EvalBatch) {
		t.Helper()
		got, err := es.EvalBatch(ctx, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := evalJSON(got), evalJSON(want); g != w {
			t.Errorf("EvalBatch(%s) =\n%s\nwant\n%s", want.ID, g, w)
		}
	}
	running := func(id string, want int) {
		t.Helper()
		if n, err := es.RunningEvalCases(ctx, id); err != nil || n != want {
			t.Errorf("RunningEvalCases(%s) = %d, %v; want %d", id, n, err, want)
		}
	}
	expired := func(now time.Time, want ...store.EvalCaseRef) {
		t.Helper()
		got, err := es.ExpiredEvalCases(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("ExpiredEvalCases(%s) = %v; want %v", now, got, want)
		}
	}

	if _, err := es.EvalBatch(ctx, "b1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("EvalBatch of a missing batch: %v", err)
	}
	b1 := evalBatch("b1", evalAt(0), 3)
	b1.Cases[2].Case = api.EvalCase{Conversation: []string{"hello", "and then?"}, Scorer: "judge", Checks: []api.EvalCheck{{MaxSteps: 4}}}
	if err := es.CreateEvalBatch(ctx, b1); err != nil {
		t.Fatal(err)
	}
	check(b1)
	other := evalBatch("other", evalAt(time.Minute), 1)
	if err := es.CreateEvalBatch(ctx, other); err != nil {
		t.Fatal(err)
	}
	// An id is taken once; the batch that has it is left as it was.
	if err := es.CreateEvalBatch(ctx, evalBatch("b1", evalAt(time.Hour), 1)); !errors.Is(err, store.ErrExists) {
		t.Errorf("creating a batch twice: %v", err)
	}
	check(b1)
	running("b1", 0)
	running("nope", 0)
	expired(evalAt(time.Hour))

	// Starting a case: it runs in its session, held until its lease, and
	// its batch runs.
	if err := es.StartEvalCase(ctx, "b1", 0, "sess-0", evalAt(time.Second), evalAt(time.Minute)); err != nil {
		t.Fatal(err)
	}
	b1.Status = api.EvalRunning
	b1.Cases[0].Status, b1.Cases[0].SessionID, b1.Cases[0].Started = api.EvalRunning, "sess-0", evalPtr(time.Second)
	check(b1)
	running("b1", 1)
	if err := es.StartEvalCase(ctx, "b1", 0, "sess-x", evalAt(2*time.Second), evalAt(time.Hour)); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("starting a running case: %v", err)
	}
	if err := es.StartEvalCase(ctx, "b1", 3, "sess-x", evalAt(2*time.Second), evalAt(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("starting a missing case: %v", err)
	}
	if err := es.StartEvalCase(ctx, "nope", 0, "sess-x", evalAt(2*time.Second), evalAt(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("starting a case of a missing batch: %v", err)
	}
	check(b1)
	if err := es.StartEvalCase(ctx, "b1", 1, "sess-1", evalAt(2*time.Second), evalAt(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	b1.Cases[1].Status, b1.Cases[1].SessionID, b1.Cases[1].Started = api.EvalRunning, "sess-1", evalPtr(2*time.Second)
	if err := es.StartEvalCase(ctx, "other", 0, "sess-o", evalAt(3*time.Second), evalAt(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	running("b1", 2)
	running("other", 1)

	// The running cases whose hold ran out, before now (not at it).
	expired(evalAt(30 * time.Second))
	expired(evalAt(31*time.Second), store.EvalCaseRef{BatchID: "other", Index: 0})
	expired(evalAt(90*time.Second), store.EvalCaseRef{BatchID: "b1", Index: 0}, store.EvalCaseRef{BatchID: "other", Index: 0})
	// A renewal moves a running case's hold, and only a running case's.
	if err := es.RenewEvalCase(ctx, "b1", 0, evalAt(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	expired(evalAt(90*time.Second), store.EvalCaseRef{BatchID: "other", Index: 0})
	expired(evalAt(6*time.Minute), store.EvalCaseRef{BatchID: "b1", Index: 0}, store.EvalCaseRef{BatchID: "b1", Index: 1},
		store.EvalCaseRef{BatchID: "other", Index: 0})
	if err := es.RenewEvalCase(ctx, "b1", 2, evalAt(time.Hour)); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("renewing a queued case: %v", err)
	}
	if err := es.RenewEvalCase(ctx, "b1", 7, evalAt(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("renewing a missing case: %v", err)
	}
	check(b1) // the lease is not part of the result

	// Finishing: only a running case, once.
	r0 := api.EvalCaseResult{Index: 0, Status: api.EvalCompleted, Score: 1, Pass: true, Ended: evalPtr(10 * time.Second),
		Checks: []api.EvalCheckResult{{Check: api.EvalCheck{Contains: "answer"}, Pass: true, Detail: "found"},
			{Check: api.EvalCheck{Called: "read", Args: map[string]any{"path": "a.go"}}, Pass: true}}}
	if _, err := es.FinishEvalCase(ctx, "b1", api.EvalCaseResult{Index: 2, Status: api.EvalCompleted}); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("finishing a queued case: %v", err)
	}
	if _, err := es.FinishEvalCase(ctx, "b1", api.EvalCaseResult{Index: 9, Status: api.EvalCompleted}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("finishing a missing case: %v", err)
	}
	if _, err := es.FinishEvalCase(ctx, "b1", api.EvalCaseResult{Index: 0, Status: api.EvalRunning}); err == nil {
		t.Errorf("finishing a case as running: no error")
	}
	if done, err := es.FinishEvalCase(ctx, "b1", r0); err != nil || done {
		t.Fatalf("FinishEvalCase of the first case = %t, %v; want false", done, err)
	}
	b1.Cases[0].Status, b1.Cases[0].Score, b1.Cases[0].Pass, b1.Cases[0].Ended, b1.Cases[0].Checks = api.EvalCompleted, 1, true, r0.Ended, r0.Checks
	check(b1)
	if _, err := es.FinishEvalCase(ctx, "b1", r0); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("finishing a case twice: %v", err)
	}
	if err := es.RenewEvalCase(ctx, "b1", 0, evalAt(time.Hour)); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("renewing a finished case: %v", err)
	}
	if err := es.StartEvalCase(ctx, "b1", 0, "sess-x", evalAt(time.Minute), evalAt(time.Hour)); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("starting a finished case: %v", err)
	}
	running("b1", 1)
	expired(evalAt(6*time.Minute), store.EvalCaseRef{BatchID: "b1", Index: 1}, store.EvalCaseRef{BatchID: "other", Index: 0})

	// A failed case keeps its error; the batch still has a queued case.
	r1 := api.EvalCaseResult{Index: 1, Status: api.EvalFailed, Error: "the turn failed", Ended: evalPtr(20 * time.Second)}
	if done, err := es.FinishEvalCase(ctx, "b1", r1); err != nil || done {
		t.Fatalf("FinishEvalCase of the second case = %t, %v; want false", done, err)
	}
	b1.Cases[1].Status, b1.Cases[1].Error, b1.Cases[1].Ended = api.EvalFailed, "the turn failed", r1.Ended
	check(b1)
	running("b1", 0)

	// The last case to finish completes the batch: its score the mean of
	// the cases', passed the cases that passed, ended now (r.Ended nil).
	if err := es.StartEvalCase(ctx, "b1", 2, "sess-2", evalAt(30*time.Second), evalAt(time.Hour)); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	r2 := api.EvalCaseResult{Index: 2, Status: api.EvalCompleted, Score: 0.5,
		Checks: []api.EvalCheckResult{{Check: api.EvalCheck{MaxSteps: 4}, Pass: false, Detail: "6 steps"}, {Check: api.EvalCheck{}, Pass: true, Detail: "judge: fine"}}}
	done, err := es.FinishEvalCase(ctx, "b1", r2)
	if err != nil || !done {
		t.Fatalf("FinishEvalCase of the last case = %t, %v; want true", done, err)
	}
	after := time.Now().Add(time.Second)
	got, err := es.EvalBatch(ctx, "b1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Ended == nil || got.Ended.Before(before) || got.Ended.After(after) {
		t.Fatalf("the completed batch ended at %v; want now", got.Ended)
	}
	if c := got.Cases[2]; c.Ended == nil || !c.Ended.Equal(*got.Ended) {
		t.Errorf("the last case ended at %v, the batch at %v", c.Ended, got.Ended)
	}
	b1.Status, b1.Ended, b1.Score, b1.Passed = api.EvalCompleted, got.Ended, 0.5, 1
	b1.Cases[2].Status, b1.Cases[2].SessionID, b1.Cases[2].Started = api.EvalCompleted, "sess-2", evalPtr(30*time.Second)
	b1.Cases[2].Score, b1.Cases[2].Checks, b1.Cases[2].Ended = 0.5, r2.Checks, got.Ended
	check(b1)
	if _, err := es.FinishEvalCase(ctx, "b1", r2); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("finishing the last case twice: %v", err)
	}
	check(b1)
	expired(evalAt(time.Hour), store.EvalCaseRef{BatchID: "other", Index: 0})

	// The other batch is untouched by all this; its case finishes it.
	if got, err := es.EvalBatch(ctx, "other"); err != nil || got.Status != api.EvalRunning || got.Cases[0].Status != api.EvalRunning {
		t.Errorf("the other batch = %s, %v", evalJSON(got), err)
	}
	if done, err := es.FinishEvalCase(ctx, "other", api.EvalCaseResult{Index: 0, Status: api.EvalFailed, Error: "its host died",
		Ended: evalPtr(time.Minute)}); err != nil || !done {
		t.Errorf("FinishEvalCase of the other batch's one case = %t, %v; want true", done, err)
	}
	if got, err := es.EvalBatch(ctx, "other"); err != nil || got.Status != api.EvalCompleted || got.Score != 0 || got.Passed != 0 ||
		got.Ended == nil || !got.Ended.Equal(evalAt(time.Minute)) {
		t.Errorf("the other batch, completed = %s, %v", evalJSON(got), err)
	}
	expired(evalAt(time.Hour))
}

// testEvalStartOnce starts one case from several hosts at once: exactly
// one does.
func testEvalStartOnce(t *testing.T, es store.Evals) {
	if err := es.CreateEvalBatch(ctx, evalBatch("race", evalAt(0), 2)); err != nil {
		t.Fatal(err)
	}
	const hosts = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []string
	lost := 0
	for i := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			session := fmt.Sprintf("sess-%d", i)
			err := es.StartEvalCase(ctx, "race", 1, session, evalAt(time.Second), evalAt(time.Minute))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, session)
			case errors.Is(err, store.ErrNotRunning):
				lost++
			default:
				t.Errorf("StartEvalCase: %v", err)
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 || lost != hosts-1 {
		t.Fatalf("of %d hosts starting one case, %v did and %d found it taken; want 1 and %d", hosts, won, lost, hosts-1)
	}
	got, err := es.EvalBatch(ctx, "race")
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Cases[1]; got.Status != api.EvalRunning || c.Status != api.EvalRunning || c.SessionID != won[0] {
		t.Errorf("after the race: batch %s, case %s; want both running in %s", got.Status, evalJSON(c), won[0])
	}
	if c := got.Cases[0]; c.Status != api.EvalQueued || c.SessionID != "" || c.Started != nil {
		t.Errorf("the other case = %s; want it queued", evalJSON(c))
	}
	if n, err := es.RunningEvalCases(ctx, "race"); err != nil || n != 1 {
		t.Errorf("RunningEvalCases = %d, %v; want 1", n, err)
	}
}

// testEvalFinishTogether finishes a batch's last cases at once: exactly
// one of them completes the batch, which counts them all.
func testEvalFinishTogether(t *testing.T, es store.Evals) {
	const cases = 4
	for round := range 5 {
		id := fmt.Sprintf("together-%d", round)
		if err := es.CreateEvalBatch(ctx, evalBatch(id, evalAt(0), cases)); err != nil {
			t.Fatal(err)
		}
		for i := range cases {
			if err := es.StartEvalCase(ctx, id, i, fmt.Sprintf("sess-%d", i), evalAt(time.Second), evalAt(time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		dones := 0
		for i := range cases {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Scores 0, 0.25, 0.5, 0.75: the mean 0.375; two pass.
				done, err := es.FinishEvalCase(ctx, id, api.EvalCaseResult{Index: i, Status: api.EvalCompleted, Score: float64(i) / 4,
					Pass: i%2 == 0, Ended: evalPtr(time.Duration(i+2) * time.Second)})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("FinishEvalCase(%s, %d): %v", id, i, err)
				}
				if done {
					dones++
				}
			}()
		}
		wg.Wait()
		if dones != 1 {
			t.Fatalf("of %d cases finishing at once, %d completed the batch; want 1", cases, dones)
		}
		got, err := es.EvalBatch(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != api.EvalCompleted || got.Ended == nil || got.Score < 0.375-1e-9 || got.Score > 0.375+1e-9 || got.Passed != 2 || got.Total != cases {
			t.Errorf("the batch completed together = %s; want completed, score 0.375, passed 2", evalJSON(got))
		}
	}
}

// testEvalList lists batches newest first (ties by id, descending), a page
// at a time, without their cases.
func testEvalList(t *testing.T, es store.Evals) {
	// Newer than the other subtests' batches, so listed first.
	base := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 25
	for i := range n {
		// Two batches share each time, so the cursor must break ties.
		b := evalBatch(fmt.Sprintf("list-%02d", i), base.Add(time.Duration(i/2)*time.Second), 2)
		if err := es.CreateEvalBatch(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	var all []api.EvalBatch
	cursor := ""
	pages := 0
	for {
		page, next, err := es.ListEvalBatches(ctx, store.Page{Limit: 10, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page) > 10 {
			t.Fatalf("a page of %d batches, limit 10", len(page))
		}
		all = append(all, page...)
		if next == "" {
			break
		}
		if pages > 100 {
			t.Fatal("the listing does not end")
		}
		cursor = next
	}
	if len(all) < n {
		t.Fatalf("listed %d batches, want at least %d", len(all), n)
	}
	if pages != (len(all)+9)/10 {
		t.Errorf("%d batches in %d pages of 10", len(all), pages)
	}
	seen := map[string]bool{}
	for i, b := range all {
		if i < n {
			want := evalBatch(fmt.Sprintf("list-%02d", n-1-i), base.Add(time.Duration((n-1-i)/2)*time.Second), 2)
			want.Cases = nil
			if g, w := evalJSON(b), evalJSON(want); g != w {
				t.Errorf("listed #%d = %s; want %s", i, g, w)
			}
		}
		if b.Cases != nil {
			t.Errorf("batch %s listed with its cases", b.ID)
		}
		if seen[b.ID] {
			t.Errorf("%s listed twice", b.ID)
		}
		seen[b.ID] = true
		if i > 0 {
			prev := all[i-1]
			if b.Created.After(prev.Created) || (b.Created.Equal(prev.Created) && b.ID > prev.ID) {
				t.Errorf("%s (%s) listed after %s (%s)", b.ID, b.Created, prev.ID, prev.Created)
			}
		}
	}
	if page, next, err := es.ListEvalBatches(ctx, store.Page{Limit: 3}); err != nil || len(page) != 3 || page[0].ID != "list-24" || next == "" {
		t.Errorf("the first page of 3 = %v, %q, %v", page, next, err)
	}
	if _, _, err := es.ListEvalBatches(ctx, store.Page{Cursor: "not a cursor!"}); !errors.Is(err, store.ErrBadCursor) {
		t.Errorf("listing from a bad cursor: %v", err)
	}
}

// testEvalsRollBack writes evals through a store.Tx: what a function that
// fails wrote is gone, what one that succeeds wrote is there, and within
// the transaction its own writes are seen.
func testEvalsRollBack(t *testing.T, s store.Store, es store.Evals) {
	j, ok := s.(store.Jobs)
	if !ok {
		t.Skip("the store runs no jobs")
	}
	write := func(tx store.Tx, id string) error {
		if err := tx.CreateEvalBatch(ctx, evalBatch(id, evalAt(0), 2)); err != nil {
			return err
		}
		if err := tx.StartEvalCase(ctx, id, 0, "sess", evalAt(time.Second), evalAt(time.Minute)); err != nil {
			return err
		}
		if b, err := tx.EvalBatch(ctx, id); err != nil || b.Status != api.EvalRunning || len(b.Cases) != 2 {
			return fmt.Errorf("reading what the transaction wrote: %s, %v", evalJSON(b), err)
		}
		if n, err := tx.RunningEvalCases(ctx, id); err != nil || n != 1 {
			return fmt.Errorf("counting what the transaction wrote: %d, %v", n, err)
		}
		return nil
	}
	rolledBack := errors.New("rolled back")
	if err := j.InTx(ctx, func(tx store.Tx) error {
		if err := write(tx, "lost"); err != nil {
			return err
		}
		return rolledBack
	}); !errors.Is(err, rolledBack) {
		t.Fatalf("InTx = %v", err)
	}
	if _, err := es.EvalBatch(ctx, "lost"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the batch of a rolled back transaction: %v", err)
	}
	if n, err := es.RunningEvalCases(ctx, "lost"); err != nil || n != 0 {
		t.Errorf("running cases of a rolled back transaction: %d, %v", n, err)
	}

	if err := j.InTx(ctx, func(tx store.Tx) error { return write(tx, "kept") }); err != nil {
		t.Fatalf("InTx = %v", err)
	}
	if b, err := es.EvalBatch(ctx, "kept"); err != nil || b.Status != api.EvalRunning || b.Cases[0].Status != api.EvalRunning {
		t.Errorf("the batch of a committed transaction: %s, %v", evalJSON(b), err)
	}

	// Finishing the batch in a transaction that rolls back leaves it
	// running, its case too.
	if err := es.StartEvalCase(ctx, "kept", 1, "sess", evalAt(time.Second), evalAt(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := es.FinishEvalCase(ctx, "kept", api.EvalCaseResult{Index: 0, Status: api.EvalCompleted, Score: 1, Pass: true}); err != nil {
		t.Fatal(err)
	}
	if err := j.InTx(ctx, func(tx store.Tx) error {
		done, err := tx.FinishEvalCase(ctx, "kept", api.EvalCaseResult{Index: 1, Status: api.EvalCompleted, Score: 1, Pass: true})
		if err != nil {
			return err
		}
		if !done {
			return errors.New("the last case did not complete the batch")
		}
		return rolledBack
	}); !errors.Is(err, rolledBack) {
		t.Fatalf("InTx = %v", err)
	}
	if b, err := es.EvalBatch(ctx, "kept"); err != nil || b.Status != api.EvalRunning || b.Ended != nil || b.Cases[1].Status != api.EvalRunning {
		t.Errorf("the batch after a rolled back finish: %s, %v", evalJSON(b), err)
	}
	if done, err := es.FinishEvalCase(ctx, "kept", api.EvalCaseResult{Index: 1, Status: api.EvalCompleted, Score: 0.5}); err != nil || !done {
		t.Errorf("finishing the case again = %t, %v; want true", done, err)
	}
}

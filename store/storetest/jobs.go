package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// testJobs runs the durable jobs of a store that has them (store.Jobs): a
// failed attempt's writes roll back and the retry's commit with the job's
// completion, so the effect is there once; a job scheduled twice runs
// once; a snoozed job runs again; a job inserted
// in a transaction that rolls back never runs; the store's own jobs are
// scheduled where their state is written.
func testJobs(t *testing.T, s store.Store) {
	j, ok := s.(store.Jobs)
	if !ok {
		t.Skip("the store runs no jobs")
	}
	mustSession(t, s, "s")
	var mu sync.Mutex
	runs := map[string][]int{} // key → attempts seen
	handler := func(ctx context.Context, tx store.Tx, job store.Job) error {
		mu.Lock()
		runs[job.Key] = append(runs[job.Key], job.Attempt)
		n := len(runs[job.Key])
		mu.Unlock()
		if _, err := tx.Append(ctx, "s", ev(api.Kind("effect."+job.Key), map[string]int{"attempt": job.Attempt})); err != nil {
			return err
		}
		switch {
		case job.Key == "flaky" && n == 1:
			return errors.New("the host died before committing")
		case job.Key == "snoozy" && n < 3:
			return store.Snooze(100 * time.Millisecond)
		}
		return nil
	}
	stop, err := j.RunJobs(ctx, store.RunJobsParams{Handlers: map[string]store.JobHandler{"test": handler}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(context.Background()) })
	for _, key := range []string{"flaky", "once", "once", "snoozy"} {
		if err := j.Schedule(ctx, store.JobSpec{Kind: "test", Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	rolledBack := errors.New("rolled back")
	if err := j.InTx(ctx, func(tx store.Tx) error {
		if err := tx.Schedule(ctx, store.JobSpec{Kind: "test", Key: "never"}); err != nil {
			return err
		}
		return rolledBack
	}); !errors.Is(err, rolledBack) {
		t.Fatalf("InTx = %v", err)
	}

	deadline := time.Now().Add(60 * time.Second)
	for {
		evs, err := s.Events(ctx, "s", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		count := map[api.Kind]int{}
		for _, e := range evs {
			count[e.Kind]++
		}
		if count["effect.flaky"] == 1 && count["effect.once"] == 1 && count["effect.snoozy"] == 1 {
			if len(evs) != 3 {
				t.Errorf("effects: %v", count)
			}
			break
		}
		if time.Now().After(deadline) || len(evs) > 3 {
			t.Fatalf("effects: %v, attempts %v", count, runs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // room for a wrong extra run
	mu.Lock()
	defer mu.Unlock()
	if got := runs["flaky"]; len(got) != 2 || got[1] != 2 {
		t.Errorf("flaky ran with attempts %v, want [1 2]", got)
	}
	if got := runs["once"]; len(got) != 1 {
		t.Errorf("a job scheduled twice ran %d times", len(got))
	}
	if got := runs["snoozy"]; len(got) != 3 {
		t.Errorf("a job snoozed twice ran %d times, want 3", len(got))
	}
	if got := runs["never"]; len(got) != 0 {
		t.Errorf("a job whose transaction rolled back ran %d times", len(got))
	}
}

package storetest

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/store"
)

// An Idempotency-Key is claimed once; a second Begin sees the claim
// running, then the answer once it is recorded; a forgotten, expired or
// abandoned key can be claimed again; pruning deletes expired records.
func testIdempotency(t *testing.T, s store.Store) {
	p := store.BeginIdempotentParams{Scope: "tools/echo", Key: "k1", Hash: "h1", TTL: time.Hour, Lease: time.Minute}
	var mu sync.Mutex
	var wg sync.WaitGroup
	claims := 0
	for range 10 {
		wg.Go(func() {
			_, claimed, err := s.BeginIdempotent(ctx, p)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if claimed {
				claims++
			}
		})
	}
	wg.Wait()
	if claims != 1 {
		t.Fatalf("%d of 10 concurrent Begins claimed the key", claims)
	}
	rec, claimed, err := s.BeginIdempotent(ctx, p)
	if err != nil || claimed || rec.Done || rec.Hash != "h1" {
		t.Fatalf("Begin while running = %+v, %v, %v", rec, claimed, err)
	}
	answer := store.IdempotentAnswer{Status: 200, ContentType: "application/json", CallID: "tool_echo_1", Body: []byte(`{"ok":true}`)}
	if err := s.FinishIdempotent(ctx, p.Scope, p.Key, answer); err != nil {
		t.Fatal(err)
	}
	other := p
	other.Hash = "h2"
	rec, claimed, err = s.BeginIdempotent(ctx, other)
	if err != nil || claimed || !rec.Done || rec.Hash != "h1" || rec.Answer.Status != 200 || rec.Answer.CallID != "tool_echo_1" ||
		rec.Answer.ContentType != "application/json" || !bytes.Equal(rec.Answer.Body, answer.Body) {
		t.Fatalf("Begin after Finish = %+v, %v, %v", rec, claimed, err)
	}
	// Keys are per scope.
	if _, claimed, _ := s.BeginIdempotent(ctx, store.BeginIdempotentParams{Scope: "session", Key: "k1", Hash: "h", TTL: time.Hour, Lease: time.Minute}); !claimed {
		t.Error("a key in another scope was not claimed")
	}
	if err := s.ForgetIdempotent(ctx, p.Scope, p.Key); err != nil {
		t.Fatal(err)
	}
	if _, claimed, _ := s.BeginIdempotent(ctx, other); !claimed {
		t.Error("a forgotten key was not claimed again")
	}
	// An abandoned claim (its host died) is claimed again after its lease.
	dead := store.BeginIdempotentParams{Scope: "x", Key: "dead", Hash: "h", TTL: time.Hour, Lease: -time.Second}
	if _, claimed, _ := s.BeginIdempotent(ctx, dead); !claimed {
		t.Fatal("first claim")
	}
	if _, claimed, _ := s.BeginIdempotent(ctx, dead); !claimed {
		t.Error("an abandoned claim was not taken over")
	}
	// Expired records are claimed again and pruned.
	old := store.BeginIdempotentParams{Scope: "x", Key: "old", Hash: "h", TTL: -time.Second, Lease: time.Minute}
	s.BeginIdempotent(ctx, old)
	s.FinishIdempotent(ctx, "x", "old", store.IdempotentAnswer{Status: 201})
	if n, err := s.PruneIdempotent(ctx, time.Now()); err != nil || n < 1 {
		t.Errorf("PruneIdempotent = %d, %v", n, err)
	}
	if _, claimed, _ := s.BeginIdempotent(ctx, old); !claimed {
		t.Error("an expired key was not claimed again")
	}
}

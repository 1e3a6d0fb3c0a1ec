package storetest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
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

// Sessions are counted by principal, pending approvals by requester: what
// the host's quotas read.
func testCounts(t *testing.T, s store.Store) {
	for i, p := range []string{"ana", "ana", "bob"} {
		if _, err := s.CreateSession(ctx, api.Session{ID: fmt.Sprint("s", i), Channel: "http", Mode: api.ModeLocal, Principal: p}); err != nil {
			t.Fatal(err)
		}
	}
	hourAgo := time.Now().Add(-time.Hour)
	if n, err := s.CountSessions(ctx, "ana", hourAgo); err != nil || n != 2 {
		t.Errorf("CountSessions(ana) = %d, %v", n, err)
	}
	if n, _ := s.CountSessions(ctx, "ana", time.Now().Add(time.Minute)); n != 0 {
		t.Errorf("CountSessions(ana) since a minute ahead = %d", n)
	}
	if n, _ := s.CountSessions(ctx, "nobody", hourAgo); n != 0 {
		t.Errorf("CountSessions(nobody) = %d", n)
	}
	for _, id := range []string{"c1", "c2", "c3"} {
		a := api.Approval{CallID: id, Tool: "deploy", Input: []byte(`{}`), RequestedBy: "ana", ExpiresAt: time.Now().Add(time.Hour)}
		if _, err := s.CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	s.ResolveApproval(ctx, store.ResolveApprovalParams{CallID: "c1", Approved: false, By: "boss"})
	if n, err := s.CountPending(ctx, "ana"); err != nil || n != 2 {
		t.Errorf("CountPending(ana) = %d, %v", n, err)
	}
}

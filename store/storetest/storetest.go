// Package storetest is the conformance suite every store driver passes:
// call Run from the driver's tests with a function that opens a fresh,
// empty store.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/store"
)

// Run runs the suite. open returns a new empty store for each test.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Sessions", testSessions},
		{"SessionPages", testSessionPages},
		{"AppendNumbersWithoutGaps", testAppend},
		{"ConcurrentAppends", testConcurrentAppends},
		{"OneTurnAtATime", testTurns},
		{"ExpiredLeases", testExpiredLeases},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { s.Close() })
			tt.fn(t, s)
		})
	}
}

var ctx = context.Background()

func mustSession(t *testing.T, s store.Store, id string) store.Session {
	t.Helper()
	sess, err := s.CreateSession(ctx, store.Session{ID: id, Channel: "http", Mode: "local", Principal: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

func ev(kind string, data any) store.Event {
	b, _ := json.Marshal(data)
	return store.Event{Kind: kind, Data: b}
}

func testSessions(t *testing.T, s store.Store) {
	created := mustSession(t, s, "s1")
	if created.CreatedAt.IsZero() || created.LastSeq != 0 {
		t.Errorf("created %+v", created)
	}
	got, err := s.Session(ctx, "s1")
	if err != nil || got.ID != "s1" || got.Channel != "http" || got.Mode != "local" || got.Principal != "tester" || !got.CreatedAt.Equal(created.CreatedAt) {
		t.Errorf("Session = %+v, %v", got, err)
	}
	if _, err := s.Session(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing session: %v", err)
	}
	if _, err := s.CreateSession(ctx, store.Session{ID: "s1", Channel: "http", Mode: "local"}); !errors.Is(err, store.ErrExists) {
		t.Errorf("duplicate session: %v", err)
	}
	if _, err := s.Append(ctx, "nope", ev("x", nil)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("append to a missing session: %v", err)
	}
}

func testSessionPages(t *testing.T, s store.Store) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 25 {
		// Two sessions share each timestamp, so the cursor must break ties.
		at := base.Add(time.Duration(i/2) * time.Second)
		if _, err := s.CreateSession(ctx, store.Session{ID: fmt.Sprintf("s%02d", i), Channel: "http", Mode: "local", CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	cursor := ""
	for pages := 0; ; pages++ {
		page, next, err := s.Sessions(ctx, store.Page{Limit: 10, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page {
			all = append(all, p.ID)
		}
		if next == "" {
			if pages != 2 {
				t.Errorf("%d pages, want 3", pages+1)
			}
			break
		}
		cursor = next
	}
	if len(all) != 25 || all[0] != "s24" || all[24] != "s00" {
		t.Errorf("sessions %v", all)
	}
	seen := map[string]bool{}
	for i, id := range all {
		if seen[id] {
			t.Errorf("%s listed twice", id)
		}
		seen[id] = true
		if i > 0 && all[i-1] < id {
			t.Errorf("not newest first: %s before %s", all[i-1], id)
		}
	}
	if _, _, err := s.Sessions(ctx, store.Page{Cursor: "not a cursor!"}); !errors.Is(err, store.ErrBadCursor) {
		t.Errorf("bad cursor: %v", err)
	}
}

func testAppend(t *testing.T, s store.Store) {
	mustSession(t, s, "s")
	first, err := s.Append(ctx, "s", ev("a", map[string]int{"n": 1}), ev("b", nil))
	if err != nil || len(first) != 2 || first[0].Seq != 1 || first[1].Seq != 2 || first[0].SessionID != "s" {
		t.Fatalf("Append = %+v, %v", first, err)
	}
	more, _ := s.Append(ctx, "s", ev("c", "x"))
	if more[0].Seq != 3 {
		t.Errorf("third event seq %d", more[0].Seq)
	}
	evs, err := s.Events(ctx, "s", 1, 0)
	if err != nil || len(evs) != 2 || evs[0].Kind != "b" || evs[1].Kind != "c" || string(evs[1].Data) != `"x"` {
		t.Errorf("Events after 1 = %+v, %v", evs, err)
	}
	evs, _ = s.Events(ctx, "s", 0, 1)
	if len(evs) != 1 || evs[0].Seq != 1 || string(evs[0].Data) != `{"n":1}` || evs[0].Time.IsZero() {
		t.Errorf("Events limit 1 = %+v", evs)
	}
	if sess, _ := s.Session(ctx, "s"); sess.LastSeq != 3 {
		t.Errorf("LastSeq %d", sess.LastSeq)
	}
	if evs, _ := s.Events(ctx, "s", 3, 0); len(evs) != 0 {
		t.Errorf("Events after the last = %+v", evs)
	}
}

func testConcurrentAppends(t *testing.T, s store.Store) {
	mustSession(t, s, "s")
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 25 {
				if _, err := s.Append(ctx, "s", ev("e", map[string]int{"w": w, "i": i})); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	evs, err := s.Events(ctx, "s", 0, 1000)
	if err != nil || len(evs) != 200 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}

func testTurns(t *testing.T, s store.Store) {
	mustSession(t, s, "s")
	lease := store.Lease{Holder: "h1", TTL: time.Minute}
	started, err := s.BeginTurn(ctx, store.Turn{SessionID: "s", ID: "t1", Kind: "model"}, lease, ev("turn.started", nil))
	if err != nil || len(started) != 1 || started[0].TurnID != "t1" || started[0].Seq != 1 {
		t.Fatalf("BeginTurn = %+v, %v", started, err)
	}
	if sess, _ := s.Session(ctx, "s"); sess.RunningTurn != "t1" {
		t.Errorf("RunningTurn = %q", sess.RunningTurn)
	}
	if _, err := s.BeginTurn(ctx, store.Turn{SessionID: "s", ID: "t2", Kind: "call"}, lease); !errors.Is(err, store.ErrBusy) {
		t.Errorf("second turn: %v", err)
	}
	if _, err := s.BeginTurn(ctx, store.Turn{SessionID: "nope", ID: "t", Kind: "call"}, lease); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("turn in a missing session: %v", err)
	}
	if err := s.RenewLease(ctx, "s", "t1", lease); err != nil {
		t.Errorf("RenewLease: %v", err)
	}
	ended, err := s.EndTurn(ctx, "s", "t1", store.TurnCompleted, "", ev("turn.completed", nil))
	if err != nil || len(ended) != 1 || ended[0].Seq != 2 || ended[0].TurnID != "t1" {
		t.Fatalf("EndTurn = %+v, %v", ended, err)
	}
	if _, err := s.EndTurn(ctx, "s", "t1", store.TurnFailed, "again"); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("ending twice: %v", err)
	}
	if err := s.RenewLease(ctx, "s", "t1", lease); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("renewing an ended turn: %v", err)
	}
	turn, err := s.Turn(ctx, "s", "t1")
	if err != nil || turn.Status != store.TurnCompleted || turn.EndedAt == nil || turn.Kind != "model" {
		t.Errorf("Turn = %+v, %v", turn, err)
	}
	if _, err := s.BeginTurn(ctx, store.Turn{SessionID: "s", ID: "t2", Kind: "call"}, lease); err != nil {
		t.Errorf("a turn after the first ended: %v", err)
	}
	if sess, _ := s.Session(ctx, "s"); sess.RunningTurn != "t2" {
		t.Errorf("RunningTurn = %q", sess.RunningTurn)
	}

	// Many hosts racing for one session: exactly one wins.
	mustSession(t, s, "race")
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range 20 {
		wg.Go(func() {
			_, err := s.BeginTurn(ctx, store.Turn{SessionID: "race", ID: fmt.Sprintf("r%d", i), Kind: "call"}, lease)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, store.ErrBusy):
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d turns began at once", wins)
	}
}

func testExpiredLeases(t *testing.T, s store.Store) {
	mustSession(t, s, "s")
	dead := store.Lease{Holder: "dead-host", TTL: -time.Second} // already expired
	if _, err := s.BeginTurn(ctx, store.Turn{SessionID: "s", ID: "t1", Kind: "model"}, dead); err != nil {
		t.Fatal(err)
	}
	mustSession(t, s, "alive")
	if _, err := s.BeginTurn(ctx, store.Turn{SessionID: "alive", ID: "t1", Kind: "model"}, store.Lease{Holder: "h", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	expired, err := s.ExpiredTurns(ctx, time.Now())
	if err != nil || len(expired) != 1 || expired[0].SessionID != "s" || expired[0].ID != "t1" {
		t.Fatalf("ExpiredTurns = %+v, %v", expired, err)
	}
	// A new turn may take a session whose lease expired; the old turn still
	// needs closing and is still listed.
	if _, err := s.BeginTurn(ctx, store.Turn{SessionID: "s", ID: "t2", Kind: "call"}, store.Lease{Holder: "h", TTL: time.Minute}); err != nil {
		t.Fatalf("taking an expired lease: %v", err)
	}
	expired, _ = s.ExpiredTurns(ctx, time.Now())
	if len(expired) != 1 || expired[0].ID != "t1" {
		t.Fatalf("ExpiredTurns after takeover = %+v", expired)
	}
	if _, err := s.EndTurn(ctx, "s", "t1", store.TurnFailed, "interrupted by host restart", ev("turn.failed", nil)); err != nil {
		t.Fatal(err)
	}
	if sess, _ := s.Session(ctx, "s"); sess.RunningTurn != "t2" {
		t.Errorf("closing the old turn released the new one's lease: %+v", sess)
	}
	if expired, _ := s.ExpiredTurns(ctx, time.Now()); len(expired) != 0 {
		t.Errorf("still expired: %+v", expired)
	}
}

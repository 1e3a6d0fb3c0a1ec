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
		{"ApprovalsExactlyOnce", testApprovals},
		{"ApprovalExpiryAndOrphans", testApprovalExpiry},
		{"ParkedTurns", testParkedTurns},
		{"KV", testKV},
		{"FileMetadata", testFiles},
		{"KVCompareAndSetUnderContention", testKVContention},
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

func approval(id, session string, expires time.Time) store.Approval {
	return store.Approval{CallID: id, SessionID: session, Tool: "promote", Input: json.RawMessage(`{"environment":"production"}`),
		RequestedBy: "tester", ExpiresAt: expires}
}

func testApprovals(t *testing.T, s store.Store) {
	mustSession(t, s, "s")
	later := time.Now().Add(time.Hour)
	evs, err := s.CreateApproval(ctx, approval("c1", "s", later), ev("action.approval_requested", map[string]string{"callId": "c1"}))
	if err != nil || len(evs) != 1 || evs[0].Seq != 1 {
		t.Fatalf("CreateApproval = %+v, %v", evs, err)
	}
	if _, err := s.CreateApproval(ctx, approval("c1", "", later)); !errors.Is(err, store.ErrExists) {
		t.Errorf("a second approval for one call: %v", err)
	}
	if _, err := s.CreateApproval(ctx, approval("c2", "", later)); err != nil {
		t.Fatal(err)
	}
	a, err := s.Approval(ctx, "c1")
	if err != nil || a.Status != store.ApprovalPending || string(a.Input) != `{"environment":"production"}` || a.SessionID != "s" || a.Outcome != nil {
		t.Errorf("Approval = %+v, %v", a, err)
	}
	if _, err := s.Approval(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing approval: %v", err)
	}
	pending, _, err := s.ListApprovals(ctx, store.ApprovalPending, store.Page{})
	if err != nil || len(pending) != 2 || pending[0].CallID != "c1" {
		t.Errorf("ListApprovals = %+v, %v", pending, err)
	}

	// Twenty people decide at once: one decision stands.
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, lost := 0, 0
	for i := range 20 {
		wg.Go(func() {
			got, err := s.ResolveApproval(ctx, "c1", i%2 == 0, fmt.Sprintf("person%d", i), "why not", store.Lease{Holder: "h", TTL: time.Minute})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, store.ErrAlreadyResolved):
				lost++
				if got.Status == store.ApprovalPending || got.DecidedBy == "" || got.DecidedAt == nil {
					t.Errorf("a refused decision should carry the first one: %+v", got)
				}
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if won != 1 || lost != 19 {
		t.Errorf("%d decisions won, %d lost", won, lost)
	}
	if _, err := s.ResolveApproval(ctx, "nope", true, "p", "", store.Lease{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("resolving a missing approval: %v", err)
	}
	if ok, err := s.FinishApproval(ctx, "c1", json.RawMessage(`{"isError":false}`)); !ok || err != nil {
		t.Errorf("FinishApproval: %v %v", ok, err)
	}
	if ok, _ := s.FinishApproval(ctx, "c1", json.RawMessage(`{"isError":true}`)); ok {
		t.Error("an outcome was recorded twice")
	}
	if a, _ := s.Approval(ctx, "c1"); string(a.Outcome) != `{"isError":false}` {
		t.Errorf("outcome %s", a.Outcome)
	}
	if pending, _, _ := s.ListApprovals(ctx, store.ApprovalPending, store.Page{}); len(pending) != 1 || pending[0].CallID != "c2" {
		t.Errorf("pending after the decision: %+v", pending)
	}
}

func testApprovalExpiry(t *testing.T, s store.Store) {
	past := time.Now().Add(-time.Second)
	s.CreateApproval(ctx, approval("old", "", past))
	s.CreateApproval(ctx, approval("new", "", time.Now().Add(time.Hour)))
	if a, err := s.ResolveApproval(ctx, "old", true, "p", "", store.Lease{Holder: "h", TTL: time.Minute}); !errors.Is(err, store.ErrExpired) || a.Status != store.ApprovalPending {
		t.Errorf("resolving an expired approval: %+v, %v", a, err)
	}
	expired, err := s.ExpireApprovals(ctx, time.Now())
	if err != nil || len(expired) != 1 || expired[0].CallID != "old" || expired[0].Status != store.ApprovalExpired {
		t.Fatalf("ExpireApprovals = %+v, %v", expired, err)
	}
	if again, _ := s.ExpireApprovals(ctx, time.Now()); len(again) != 0 {
		t.Errorf("expired twice: %+v", again)
	}
	if _, err := s.ResolveApproval(ctx, "old", false, "p", "", store.Lease{}); !errors.Is(err, store.ErrExpired) {
		t.Errorf("resolving after expiry: %v", err)
	}
	// An approved call whose executor died is an orphan; one that is alive
	// or finished is not.
	s.CreateApproval(ctx, approval("dead", "", time.Now().Add(time.Hour)))
	s.ResolveApproval(ctx, "dead", true, "p", "", store.Lease{Holder: "gone", TTL: -time.Second})
	s.ResolveApproval(ctx, "new", true, "p", "", store.Lease{Holder: "alive", TTL: time.Minute})
	orphans, err := s.OrphanedApprovals(ctx, time.Now())
	if err != nil || len(orphans) != 1 || orphans[0].CallID != "dead" {
		t.Errorf("OrphanedApprovals = %+v, %v", orphans, err)
	}
	s.FinishApproval(ctx, "dead", json.RawMessage(`{}`))
	if orphans, _ := s.OrphanedApprovals(ctx, time.Now()); len(orphans) != 0 {
		t.Errorf("a finished call is still an orphan: %+v", orphans)
	}
}

func testParkedTurns(t *testing.T, s store.Store) {
	mustSession(t, s, "s")
	lease := store.Lease{Holder: "h", TTL: -time.Second} // would expire at once
	if _, err := s.BeginTurn(ctx, store.Turn{SessionID: "s", ID: "t1", Kind: "model"}, lease); err != nil {
		t.Fatal(err)
	}
	if err := s.ParkTurn(ctx, "s", "t1"); err != nil {
		t.Fatal(err)
	}
	if expired, _ := s.ExpiredTurns(ctx, time.Now()); len(expired) != 0 {
		t.Errorf("a parked turn expired: %+v", expired)
	}
	// A lease renewal racing the parking leaves the turn parked.
	if err := s.RenewLease(ctx, "s", "t1", store.Lease{Holder: "h", TTL: -time.Second}); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("renewing a parked turn: %v", err)
	}
	if expired, _ := s.ExpiredTurns(ctx, time.Now()); len(expired) != 0 {
		t.Errorf("a renewal unparked the turn: %+v", expired)
	}
	if _, err := s.BeginTurn(ctx, store.Turn{SessionID: "s", ID: "t2", Kind: "call"}, store.Lease{Holder: "h", TTL: time.Minute}); !errors.Is(err, store.ErrBusy) {
		t.Errorf("a parked turn still holds its session: %v", err)
	}
	parked, err := s.ParkedTurns(ctx)
	if err != nil || len(parked) != 1 || parked[0].ID != "t1" {
		t.Errorf("ParkedTurns = %+v, %v", parked, err)
	}
	if err := s.ResumeTurn(ctx, "s", "t1", store.Lease{Holder: "h2", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := s.ResumeTurn(ctx, "s", "t1", store.Lease{Holder: "h3", TTL: time.Minute}); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("resumed twice: %v", err)
	}
	if parked, _ := s.ParkedTurns(ctx); len(parked) != 0 {
		t.Errorf("still parked: %+v", parked)
	}
}

func testKV(t *testing.T, s store.Store) {
	if _, err := s.KVGet(ctx, "a", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing key: %v", err)
	}
	e, err := s.KVSet(ctx, "a", "k", []byte("v1"), -1, 0)
	if err != nil || e.Version != 1 {
		t.Fatalf("KVSet = %+v, %v", e, err)
	}
	if _, err := s.KVSet(ctx, "a", "k", []byte("x"), 0, 0); !errors.Is(err, store.ErrConflict) {
		t.Errorf("create-only on an existing key: %v", err)
	}
	if e, err := s.KVSet(ctx, "a", "k", []byte("v2"), 1, 0); err != nil || e.Version != 2 {
		t.Errorf("CAS: %+v %v", e, err)
	}
	if got, _ := s.KVGet(ctx, "a", "k"); string(got.Value) != "v2" || got.Version != 2 {
		t.Errorf("KVGet = %+v", got)
	}
	if _, err := s.KVGet(ctx, "b", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("namespaces leak: %v", err)
	}
	// Expired entries are gone, and a create-only write may replace them.
	s.KVSet(ctx, "a", "tmp", []byte("t"), -1, time.Nanosecond)
	time.Sleep(time.Millisecond)
	if _, err := s.KVGet(ctx, "a", "tmp"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired key: %v", err)
	}
	if e, err := s.KVSet(ctx, "a", "tmp", []byte("again"), 0, 0); err != nil || e.Version != 1 {
		t.Errorf("create over an expired key: %+v %v", e, err)
	}
	for _, k := range []string{"user/1", "user/2", "user/3", "users", "user0", "zz", "user/~"} {
		s.KVSet(ctx, "a", k, []byte(k), -1, 0)
	}
	var keys []string
	for cursor := ""; ; {
		page, next, err := s.KVList(ctx, "a", "user/", store.Page{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			keys = append(keys, e.Key)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if got := fmt.Sprint(keys); got != `[user/1 user/2 user/3 user/~]` {
		t.Errorf("KVList(user/) = %s", got)
	}
	if err := s.KVDelete(ctx, "a", "user/1"); err != nil {
		t.Fatal(err)
	}
	if err := s.KVDelete(ctx, "a", "user/1"); err != nil {
		t.Errorf("deleting an absent key: %v", err)
	}
	if _, err := s.KVGet(ctx, "a", "user/1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted key: %v", err)
	}
}

// Fifty writers incrementing one counter with compare-and-set lose no
// update.
func testKVContention(t *testing.T, s store.Store) {
	s.KVSet(ctx, "a", "counter", []byte("0"), -1, 0)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for {
				cur, err := s.KVGet(ctx, "a", "counter")
				if err != nil {
					t.Error(err)
					return
				}
				var n int
				fmt.Sscan(string(cur.Value), &n)
				_, err = s.KVSet(ctx, "a", "counter", []byte(fmt.Sprint(n+1)), cur.Version, 0)
				if err == nil {
					return
				}
				if !errors.Is(err, store.ErrConflict) {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got, _ := s.KVGet(ctx, "a", "counter"); string(got.Value) != "50" || got.Version != 51 {
		t.Errorf("counter = %s at version %d, want 50 at 51", got.Value, got.Version)
	}
}

func testFiles(t *testing.T, s store.Store) {
	for _, n := range []string{"reports/a.txt", "reports/b.txt", "other.txt"} {
		if err := s.PutFileMeta(ctx, "ns", store.FileMeta{Name: n, Size: 3, ContentType: "text/plain", SHA256: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	s.PutFileMeta(ctx, "ns", store.FileMeta{Name: "reports/a.txt", Size: 5, ContentType: "text/markdown", SHA256: "y"})
	m, err := s.FileMeta(ctx, "ns", "reports/a.txt")
	if err != nil || m.Size != 5 || m.ContentType != "text/markdown" {
		t.Errorf("FileMeta = %+v, %v", m, err)
	}
	list, _, _ := s.ListFileMeta(ctx, "ns", "reports/", store.Page{})
	if len(list) != 2 || list[0].Name != "reports/a.txt" {
		t.Errorf("ListFileMeta = %+v", list)
	}
	s.DeleteFileMeta(ctx, "ns", "reports/a.txt")
	if _, err := s.FileMeta(ctx, "ns", "reports/a.txt"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted: %v", err)
	}
	if _, err := s.FileMeta(ctx, "other", "reports/b.txt"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("namespaces leak: %v", err)
	}
}

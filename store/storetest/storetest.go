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

	"github.com/agentsdk/agentsdk/api"
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
		{"FailedBeginTurnChangesNothing", testBeginTurnAtomic},
		{"ExpiredLeases", testExpiredLeases},
		{"ApprovalsExactlyOnce", testApprovals},
		{"ApprovalExpiryAndOrphans", testApprovalExpiry},
		{"ApprovalClaims", testApprovalClaims},
		{"ApprovalQuorum", testApprovalQuorum},
		{"ListApprovalsByStatus", testListApprovals},
		{"FailedCreateApprovalChangesNothing", testCreateApprovalAtomic},
		{"ParkedTurns", testParkedTurns},
		{"CancelParkedTurn", testCancelTurn},
		{"CancelParkedTurnRaces", testCancelTurnRaces},
		{"Fencing", testFencing},
		{"TakeOverExpiredTurn", testTakeOver},
		{"Jobs", testJobs},
		{"Timers", testTimers},
		{"Evals", testEvals},
		{"Idempotency", testIdempotency},
		{"Keys", testKeys},
		{"KeysAudit", testKeysAudit},
		{"ListByPrincipal", testListByPrincipal},
		{"Counts", testCounts},
		{"Usage", testUsage},
		{"UsageReservations", testUsageReservations},
		{"KV", testKV},
		{"KVIfVersion", testKVIfVersion},
		{"FileMetadata", testFiles},
		{"ListingsInByteOrder", testListingsInByteOrder},
		{"KVCompareAndSetUnderContention", testKVContention},
		{"ReturnsCopies", testReturnsCopies},
		{"Audit", testAudit},
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

func mustSession(t *testing.T, s store.Store, id string) api.Session {
	t.Helper()
	sess, err := s.CreateSession(ctx, api.Session{ID: id, Channel: "http", Mode: api.ModeLocal, Principal: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

func ev(kind api.Kind, data any) api.Event {
	b, _ := json.Marshal(data)
	return api.Event{Kind: kind, Data: b}
}

func beginTurn(s store.Store, sessionID, turnID string, kind api.TurnKind, lease store.Lease, events ...api.Event) ([]api.Event, error) {
	_, evs, err := s.BeginTurn(ctx, store.BeginTurnParams{Turn: api.Turn{SessionID: sessionID, ID: turnID, Kind: kind}, Lease: lease, Events: events})
	return evs, err
}

func hold(t *testing.T, s store.Store, sessionID, turnID string, lease store.Lease) store.Hold {
	t.Helper()
	h, _, err := s.BeginTurn(ctx, store.BeginTurnParams{Turn: api.Turn{SessionID: sessionID, ID: turnID, Kind: api.TurnModel}, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func endTurn(s store.Store, sessionID, turnID string, status api.TurnStatus, reason string, events ...api.Event) ([]api.Event, error) {
	return s.EndTurn(ctx, store.EndTurnParams{SessionID: sessionID, TurnID: turnID, Status: status, Reason: reason, Events: events})
}

func testSessions(t *testing.T, s store.Store) {
	if page, next, err := s.ListSessions(ctx, store.ListSessionsParams{Page: store.Page{}}); err != nil || len(page) != 0 || next != "" {
		t.Errorf("ListSessions of an empty store = %+v, %q, %v", page, next, err)
	}
	created := mustSession(t, s, "s1")
	if created.CreatedAt.IsZero() || created.LastSeq != 0 {
		t.Errorf("created %+v", created)
	}
	got, err := s.Session(ctx, "s1")
	if err != nil || got.ID != "s1" || got.Channel != "http" || got.Mode != api.ModeLocal || got.Principal != "tester" || !got.CreatedAt.Equal(created.CreatedAt) {
		t.Errorf("Session = %+v, %v", got, err)
	}
	if _, err := s.Session(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing session: %v", err)
	}
	if got.Runtime != "" {
		t.Errorf("a session created without a runtime has %q", got.Runtime)
	}
	if _, err := s.CreateSession(ctx, api.Session{ID: "s2", Channel: "http", Mode: api.ModeLocal, Principal: "tester", Runtime: "claude-code"}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Session(ctx, "s2"); err != nil || got.Runtime != "claude-code" {
		t.Errorf("a session's runtime: %+v, %v", got, err)
	}
	if list, _, err := s.ListSessions(ctx, store.ListSessionsParams{}); err != nil || len(list) != 2 || list[0].Runtime != "claude-code" && list[1].Runtime != "claude-code" {
		t.Errorf("listed: %+v, %v", list, err)
	}
	if _, err := s.CreateSession(ctx, api.Session{ID: "s1", Channel: "http", Mode: api.ModeLocal}); !errors.Is(err, store.ErrExists) {
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
		if _, err := s.CreateSession(ctx, api.Session{ID: fmt.Sprintf("s%02d", i), Channel: "http", Mode: api.ModeLocal, CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	cursor := ""
	for pages := 0; ; pages++ {
		page, next, err := s.ListSessions(ctx, store.ListSessionsParams{Page: store.Page{Limit: 10, Cursor: cursor}})
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
	if _, _, err := s.ListSessions(ctx, store.ListSessionsParams{Page: store.Page{Cursor: "not a cursor!"}}); !errors.Is(err, store.ErrBadCursor) {
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
	// The latest context.compacted is the session's CompactedSeq.
	if sess, _ := s.Session(ctx, "s"); sess.CompactedSeq != 0 {
		t.Errorf("CompactedSeq %d before any compaction", sess.CompactedSeq)
	}
	for want := int64(5); want <= 7; want += 2 {
		if _, err := s.Append(ctx, "s", ev("d", nil), api.NewEvent(api.ContextCompacted{Summary: "so far", ThroughSeq: 2})); err != nil {
			t.Fatal(err)
		}
		if sess, _ := s.Session(ctx, "s"); sess.CompactedSeq != want {
			t.Errorf("CompactedSeq %d, want %d", sess.CompactedSeq, want)
		}
	}
	if list, _, _ := s.ListSessions(ctx, store.ListSessionsParams{Page: store.Page{Limit: 10}}); len(list) != 1 || list[0].CompactedSeq != 7 {
		t.Errorf("the listed session: %+v", list)
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
	started, err := beginTurn(s, "s", "t1", api.TurnModel, lease, ev(api.KindTurnStarted, nil))
	if err != nil || len(started) != 1 || started[0].TurnID != "t1" || started[0].Seq != 1 {
		t.Fatalf("BeginTurn = %+v, %v", started, err)
	}
	if sess, _ := s.Session(ctx, "s"); sess.RunningTurn != "t1" {
		t.Errorf("RunningTurn = %q", sess.RunningTurn)
	}
	if _, err := beginTurn(s, "s", "t2", api.TurnCall, lease); !errors.Is(err, store.ErrBusy) {
		t.Errorf("second turn: %v", err)
	}
	if _, err := beginTurn(s, "nope", "t", api.TurnCall, lease); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("turn in a missing session: %v", err)
	}
	f := store.Fence{SessionID: "s", TurnID: "t1", Token: 1}
	if err := s.RenewLease(ctx, f, lease); err != nil {
		t.Errorf("RenewLease: %v", err)
	}
	ended, err := endTurn(s, "s", "t1", api.TurnStatusCompleted, "", ev(api.KindTurnCompleted, nil))
	if err != nil || len(ended) != 1 || ended[0].Seq != 2 || ended[0].TurnID != "t1" {
		t.Fatalf("EndTurn = %+v, %v", ended, err)
	}
	if _, err := endTurn(s, "s", "t1", api.TurnStatusFailed, "again"); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("ending twice: %v", err)
	}
	if err := s.RenewLease(ctx, f, lease); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("renewing an ended turn: %v", err)
	}
	turn, err := s.Turn(ctx, "s", "t1")
	if err != nil || turn.Status != api.TurnStatusCompleted || turn.EndedAt == nil || turn.Kind != api.TurnModel {
		t.Errorf("Turn = %+v, %v", turn, err)
	}
	if _, err := s.Turn(ctx, "s", "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing turn: %v", err)
	}
	if _, err := beginTurn(s, "s", "t2", api.TurnCall, lease); err != nil {
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
			_, err := beginTurn(s, "race", fmt.Sprintf("r%d", i), api.TurnCall, lease)
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

// A turn id is used once per session: beginning it again fails, and the
// failure leaves the session free and its stream as it was.
func testBeginTurnAtomic(t *testing.T, s store.Store) {
	mustSession(t, s, "s")
	lease := store.Lease{Holder: "h", TTL: time.Minute}
	if _, err := beginTurn(s, "s", "t1", api.TurnModel, lease, ev(api.KindTurnStarted, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := endTurn(s, "s", "t1", api.TurnStatusCompleted, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := beginTurn(s, "s", "t1", api.TurnModel, lease, ev(api.KindTurnStarted, nil)); err == nil {
		t.Error("a turn id was used twice")
	}
	if sess, _ := s.Session(ctx, "s"); sess.RunningTurn != "" || sess.LastSeq != 1 {
		t.Errorf("a failed BeginTurn changed the session: %+v", sess)
	}
	if turn, _ := s.Turn(ctx, "s", "t1"); turn.Status != api.TurnStatusCompleted {
		t.Errorf("a failed BeginTurn changed the turn: %+v", turn)
	}
}

func testExpiredLeases(t *testing.T, s store.Store) {
	mustSession(t, s, "s")
	dead := store.Lease{Holder: "dead-host", TTL: -time.Second} // already expired
	if _, err := beginTurn(s, "s", "t1", api.TurnModel, dead); err != nil {
		t.Fatal(err)
	}
	mustSession(t, s, "alive")
	if _, err := beginTurn(s, "alive", "t1", api.TurnModel, store.Lease{Holder: "h", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	expired, err := s.ExpiredTurns(ctx, time.Now())
	if err != nil || len(expired) != 1 || expired[0].SessionID != "s" || expired[0].ID != "t1" {
		t.Fatalf("ExpiredTurns = %+v, %v", expired, err)
	}
	// A new turn may take a session whose lease expired; the old turn still
	// needs closing and is still listed.
	if _, err := beginTurn(s, "s", "t2", api.TurnCall, store.Lease{Holder: "h", TTL: time.Minute}); err != nil {
		t.Fatalf("taking an expired lease: %v", err)
	}
	expired, _ = s.ExpiredTurns(ctx, time.Now())
	if len(expired) != 1 || expired[0].ID != "t1" {
		t.Fatalf("ExpiredTurns after takeover = %+v", expired)
	}
	if _, err := endTurn(s, "s", "t1", api.TurnStatusFailed, "interrupted by host restart", ev(api.KindTurnFailed, nil)); err != nil {
		t.Fatal(err)
	}
	if sess, _ := s.Session(ctx, "s"); sess.RunningTurn != "t2" {
		t.Errorf("closing the old turn released the new one's lease: %+v", sess)
	}
	if expired, _ := s.ExpiredTurns(ctx, time.Now()); len(expired) != 0 {
		t.Errorf("still expired: %+v", expired)
	}
}

func testParkedTurns(t *testing.T, s store.Store) {
	mustSession(t, s, "s")
	lease := store.Lease{Holder: "h", TTL: -time.Second} // would expire at once
	h := hold(t, s, "s", "t1", lease)
	if err := s.ParkTurn(ctx, h.Fence); err != nil {
		t.Fatal(err)
	}
	if expired, _ := s.ExpiredTurns(ctx, time.Now()); len(expired) != 0 {
		t.Errorf("a parked turn expired: %+v", expired)
	}
	// A lease renewal racing the parking leaves the turn parked.
	if err := s.RenewLease(ctx, h.Fence, store.Lease{Holder: "h", TTL: -time.Second}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("renewing a parked turn: %v", err)
	}
	if expired, _ := s.ExpiredTurns(ctx, time.Now()); len(expired) != 0 {
		t.Errorf("a renewal unparked the turn: %+v", expired)
	}
	if _, err := beginTurn(s, "s", "t2", api.TurnCall, store.Lease{Holder: "h", TTL: time.Minute}); !errors.Is(err, store.ErrBusy) {
		t.Errorf("a parked turn still holds its session: %v", err)
	}
	parked, err := s.ParkedTurns(ctx)
	if err != nil || len(parked) != 1 || parked[0].ID != "t1" {
		t.Errorf("ParkedTurns = %+v, %v", parked, err)
	}
	resumed, err := s.ResumeTurn(ctx, "s", "t1", store.Lease{Holder: "h2", TTL: time.Minute})
	if err != nil || resumed.Token <= h.Token {
		t.Fatalf("ResumeTurn = %+v, %v; the token must move on from %d", resumed, err, h.Token)
	}
	if _, err := s.ResumeTurn(ctx, "s", "t1", store.Lease{Holder: "h3", TTL: time.Minute}); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("resumed twice: %v", err)
	}
	if parked, _ := s.ParkedTurns(ctx); len(parked) != 0 {
		t.Errorf("still parked: %+v", parked)
	}
	if err := s.ParkTurn(ctx, store.Fence{SessionID: "s", TurnID: "nope", Token: resumed.Token}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("parking a turn that does not hold its session: %v", err)
	}
}

// A turn's writes carry its fence: once another host took the session (the
// lease had run out), the old holder can neither append, renew, park nor
// end; a recovery ends a turn only if its lease ran out.
func testFencing(t *testing.T, s store.Store) {
	mustSession(t, s, "s")
	old := hold(t, s, "s", "t1", store.Lease{Holder: "a", TTL: -time.Second, Home: "host-a"})
	if old.PrevHome != "" {
		t.Errorf("first hold's PrevHome = %q", old.PrevHome)
	}
	if evs, err := s.AppendTurn(ctx, old.Fence, ev("x", nil)); err != nil || len(evs) != 1 || evs[0].Seq != 1 {
		t.Fatalf("AppendTurn by the holder = %+v, %v", evs, err)
	}
	taken := hold(t, s, "s", "t2", store.Lease{Holder: "b", TTL: time.Minute, Home: "host-b"})
	if taken.Token <= old.Token || taken.PrevHome != "host-a" {
		t.Errorf("takeover's hold = %+v after %+v", taken, old)
	}
	if _, err := s.AppendTurn(ctx, old.Fence, ev("late", nil)); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("AppendTurn after losing the lease: %v", err)
	}
	if err := s.RenewLease(ctx, old.Fence, store.Lease{Holder: "a", TTL: time.Minute}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("RenewLease after losing the lease: %v", err)
	}
	if err := s.ParkTurn(ctx, old.Fence); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("ParkTurn after losing the lease: %v", err)
	}
	if _, err := s.EndTurn(ctx, store.EndTurnParams{SessionID: "s", TurnID: "t1", Token: old.Token, Status: api.TurnStatusCompleted}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("EndTurn after losing the lease: %v", err)
	}
	if sess, _ := s.Session(ctx, "s"); sess.LastSeq != 1 || sess.RunningTurn != "t2" {
		t.Errorf("the old holder changed the session: %+v", sess)
	}
	// The recovery closes the old turn, leaving the new one running.
	if _, err := s.EndTurn(ctx, store.EndTurnParams{SessionID: "s", TurnID: "t1", Expired: true, Status: api.TurnStatusFailed}); err != nil {
		t.Errorf("recovering the old turn: %v", err)
	}
	if _, err := s.EndTurn(ctx, store.EndTurnParams{SessionID: "s", TurnID: "t2", Expired: true, Status: api.TurnStatusFailed}); !errors.Is(err, store.ErrBusy) {
		t.Errorf("recovering a turn whose lease is live: %v", err)
	}
	if _, err := s.AppendTurn(ctx, taken.Fence, ev("y", nil)); err != nil {
		t.Errorf("AppendTurn by the new holder: %v", err)
	}
	if err := s.ParkTurn(ctx, taken.Fence); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendTurn(ctx, taken.Fence, ev("z", nil)); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("AppendTurn while parked: %v", err)
	}
	if _, err := s.EndTurn(ctx, store.EndTurnParams{SessionID: "s", TurnID: "t2", Expired: true, Status: api.TurnStatusFailed}); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("recovering a parked turn: %v", err)
	}
	back, err := s.ResumeTurn(ctx, "s", "t2", store.Lease{Holder: "a", TTL: time.Minute, Home: "host-a"})
	if err != nil || back.Token <= taken.Token || back.PrevHome != "host-b" {
		t.Fatalf("ResumeTurn = %+v, %v", back, err)
	}
	if err := s.RenewLease(ctx, taken.Fence, store.Lease{Holder: "b", TTL: time.Minute}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("renewing with the token before the resumption: %v", err)
	}
	if _, err := s.EndTurn(ctx, store.EndTurnParams{SessionID: "s", TurnID: "t2", Token: back.Token, Status: api.TurnStatusCompleted}); err != nil {
		t.Errorf("ending with the current token: %v", err)
	}
}

// A running turn whose lease ran out is taken over by one new holder, under
// a new token; a live, parked, ended or displaced turn is not.
func testTakeOver(t *testing.T, s store.Store) {
	mustSession(t, s, "s")
	live := hold(t, s, "s", "t1", store.Lease{Holder: "a", TTL: time.Minute, Home: "host-a"})
	b := store.Lease{Holder: "b", TTL: time.Minute, Home: "host-b"}
	if _, err := s.TakeOverTurn(ctx, "s", "t1", b); !errors.Is(err, store.ErrBusy) {
		t.Errorf("taking over a live turn: %v", err)
	}
	if _, err := s.TakeOverTurn(ctx, "s", "nope", b); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("taking over a turn that does not exist: %v", err)
	}
	if err := s.RenewLease(ctx, live.Fence, store.Lease{Holder: "a", TTL: -time.Second}); err != nil {
		t.Fatal(err) // a's host dies: its lease runs out
	}
	var wg sync.WaitGroup
	holds := make([]store.Hold, 4)
	errs := make([]error, len(holds))
	for i := range holds {
		wg.Go(func() { holds[i], errs[i] = s.TakeOverTurn(ctx, "s", "t1", b) })
	}
	wg.Wait()
	var took store.Hold
	for i, err := range errs {
		switch {
		case err == nil && took.Token == 0:
			took = holds[i]
		case err == nil:
			t.Errorf("two callers took the turn over: %+v and %+v", took, holds[i])
		case !errors.Is(err, store.ErrBusy):
			t.Errorf("a losing take-over: %v, want ErrBusy", err)
		}
	}
	if took.Token <= live.Token || took.TurnID != "t1" || took.PrevHome != "host-a" || took.PrevHolder != "a" {
		t.Fatalf("the take-over's hold = %+v after %+v", took, live)
	}
	if expired, _ := s.ExpiredTurns(ctx, time.Now()); len(expired) != 0 {
		t.Errorf("a taken-over turn is still expired: %+v", expired)
	}
	if _, err := s.AppendTurn(ctx, live.Fence, ev("late", nil)); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("the dead holder's append after the take-over: %v", err)
	}
	if _, err := s.AppendTurn(ctx, took.Fence, ev("x", nil)); err != nil {
		t.Errorf("the new holder's append: %v", err)
	}
	if err := s.ParkTurn(ctx, took.Fence); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeOverTurn(ctx, "s", "t1", b); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("taking over a parked turn: %v", err)
	}
	if _, err := s.ResumeTurn(ctx, "s", "t1", store.Lease{Holder: "c", TTL: -time.Second}); err != nil {
		t.Fatal(err) // resumed, and its host died too
	}
	// A new turn takes the session whose lease ran out: the old turn no
	// longer holds it, and is for closing, not taking over.
	if _, err := beginTurn(s, "s", "t2", api.TurnModel, store.Lease{Holder: "d", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeOverTurn(ctx, "s", "t1", b); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("taking over a displaced turn: %v", err)
	}
	if _, err := s.EndTurn(ctx, store.EndTurnParams{SessionID: "s", TurnID: "t2", Status: api.TurnStatusCompleted}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeOverTurn(ctx, "s", "t2", b); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("taking over an ended turn: %v", err)
	}
}

// What a store returns is the caller's to change: changing it changes
// nothing stored, and the store does not change what it was given.
func testReturnsCopies(t *testing.T, s store.Store) {
	mustSession(t, s, "s")
	given := []api.Event{ev(api.KindTurnStarted, map[string]string{"a": "b"})}
	started, err := beginTurn(s, "s", "t1", api.TurnModel, store.Lease{Holder: "h", TTL: time.Minute}, given...)
	if err != nil {
		t.Fatal(err)
	}
	if given[0].TurnID != "" || given[0].Seq != 0 {
		t.Errorf("BeginTurn changed the caller's events: %+v", given[0])
	}
	started[0].Data[1] = 'X'
	evs, _ := s.Events(ctx, "s", 0, 0)
	evs[0].Data[1] = 'Y'
	if again, _ := s.Events(ctx, "s", 0, 0); string(again[0].Data) != `{"a":"b"}` {
		t.Errorf("event data changed to %s", again[0].Data)
	}

	s.KVSet(ctx, store.KVSetParams{Namespace: "a", Key: "k", Value: []byte("v1")})
	got, _ := s.KVGet(ctx, "a", "k")
	got.Value[0] = 'X'
	list, _, _ := s.KVList(ctx, store.ListParams{Namespace: "a"})
	list[0].Value[0] = 'Y'
	if got, _ := s.KVGet(ctx, "a", "k"); string(got.Value) != "v1" {
		t.Errorf("value changed to %s", got.Value)
	}
	value := []byte("v2")
	s.KVSet(ctx, store.KVSetParams{Namespace: "a", Key: "k", Value: value})
	value[0] = 'Z'
	if got, _ := s.KVGet(ctx, "a", "k"); string(got.Value) != "v2" {
		t.Errorf("changing the written slice changed the value to %s", got.Value)
	}

	input := json.RawMessage(`{"environment":"production"}`)
	a := approval("c1", "", time.Now().Add(time.Hour))
	a.Input = input
	s.CreateApproval(ctx, a)
	input[2] = 'X'
	got1, _ := s.Approval(ctx, "c1")
	got1.Input[2] = 'Y'
	listed, _, _ := s.ListApprovals(ctx, store.ListApprovalsParams{})
	listed[0].Input[2] = 'Z'
	s.FinishApproval(ctx, "c1", api.Outcome{Result: json.RawMessage(`{"ok":true}`)})
	got1, _ = s.Approval(ctx, "c1")
	got1.Outcome.Result[2] = 'X'
	if got, _ := s.Approval(ctx, "c1"); string(got.Input) != `{"environment":"production"}` || string(got.Outcome.Result) != `{"ok":true}` {
		t.Errorf("approval changed to %s, %s", got.Input, got.Outcome.Result)
	}
}

package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

func approval(id, session string, expires time.Time) api.Approval {
	return api.Approval{CallID: id, SessionID: session, Tool: "promote", Input: json.RawMessage(`{"environment":"production"}`),
		RequestedBy: "tester", ExpiresAt: expires}
}

func resolve(s store.Store, callID string, approved bool, by, reason string, executor store.Lease, events ...api.Event) (api.Approval, error) {
	a, _, err := s.ResolveApproval(ctx, store.ResolveApprovalParams{CallID: callID, Approved: approved, By: by, Reason: reason, Executor: executor, Events: events})
	return a, err
}

func pendingApprovals(s store.Store) ([]api.Approval, string, error) {
	return s.ListApprovals(ctx, store.ListApprovalsParams{Status: api.ApprovalPending})
}

func testApprovals(t *testing.T, s store.Store) {
	mustSession(t, s, "s")
	later := time.Now().Add(time.Hour)
	evs, err := s.CreateApproval(ctx, approval("c1", "s", later), ev(api.KindApprovalRequested, map[string]string{"callId": "c1"}))
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
	if err != nil || a.Status != api.ApprovalPending || string(a.Input) != `{"environment":"production"}` || a.SessionID != "s" || a.Outcome != nil {
		t.Errorf("Approval = %+v, %v", a, err)
	}
	if _, err := s.Approval(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing approval: %v", err)
	}
	pending, _, err := pendingApprovals(s)
	if err != nil || len(pending) != 2 || pending[0].CallID != "c1" {
		t.Errorf("ListApprovals = %+v, %v", pending, err)
	}

	// Twenty people decide at once: one decision stands, and only its
	// event is on the stream.
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, lost := 0, 0
	for i := range 20 {
		wg.Go(func() {
			by := fmt.Sprintf("person%d", i)
			got, err := resolve(s, "c1", i%2 == 0, by, "why not", store.Lease{Holder: "h", TTL: time.Minute},
				ev(api.KindApprovalResolved, map[string]string{"callId": "c1", "by": by}))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, store.ErrAlreadyResolved):
				lost++
				if got.Status == api.ApprovalPending || got.DecidedBy == "" || got.DecidedAt == nil {
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
	decided, _ := s.Approval(ctx, "c1")
	if got, _ := s.Events(ctx, "s", 1, 0); len(got) != 1 || got[0].Kind != api.KindApprovalResolved ||
		!strings.Contains(string(got[0].Data), `"by":"`+decided.DecidedBy+`"`) {
		t.Errorf("after twenty decisions the stream holds %+v; want the one decision that stands (%s)", got, decided.DecidedBy)
	}
	if _, err := resolve(s, "nope", true, "p", "", store.Lease{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("resolving a missing approval: %v", err)
	}
	outcome := api.Outcome{ToolName: "promote", CallID: "c1", IsError: false, Result: json.RawMessage(`{"ok":true}`), DurationMs: 12}
	result := ev(api.KindActionResult, map[string]string{"callId": "c1"})
	if ok, stored, err := s.FinishApproval(ctx, "c1", outcome, result); !ok || err != nil || len(stored) != 1 || stored[0].Seq != 3 || stored[0].SessionID != "s" {
		t.Errorf("FinishApproval: %v %+v %v", ok, stored, err)
	}
	if ok, stored, _ := s.FinishApproval(ctx, "c1", api.Outcome{ToolName: "promote", CallID: "c1", IsError: true}, result); ok || len(stored) != 0 {
		t.Errorf("an outcome was recorded twice: %+v", stored)
	}
	if got, _ := s.Events(ctx, "s", 0, 0); len(got) != 3 {
		t.Errorf("the stream holds %d events; want request, decision, result", len(got))
	}
	if a, _ := s.Approval(ctx, "c1"); a.Outcome == nil || !reflect.DeepEqual(*a.Outcome, outcome) {
		t.Errorf("outcome %+v", a.Outcome)
	}
	if ok, _, err := s.FinishApproval(ctx, "nope", outcome); ok || err != nil {
		t.Errorf("FinishApproval of a missing call: %v %v", ok, err)
	}
	if pending, _, _ := pendingApprovals(s); len(pending) != 1 || pending[0].CallID != "c2" {
		t.Errorf("pending after the decision: %+v", pending)
	}
}

func testApprovalExpiry(t *testing.T, s store.Store) {
	past := time.Now().Add(-time.Second)
	s.CreateApproval(ctx, approval("old", "", past))
	s.CreateApproval(ctx, approval("new", "", time.Now().Add(time.Hour)))
	if a, err := resolve(s, "old", true, "p", "", store.Lease{Holder: "h", TTL: time.Minute}); !errors.Is(err, store.ErrExpired) || a.Status != api.ApprovalPending {
		t.Errorf("resolving an expired approval: %+v, %v", a, err)
	}
	expired, err := s.ExpireApprovals(ctx, time.Now())
	if err != nil || len(expired) != 1 || expired[0].CallID != "old" || expired[0].Status != api.ApprovalExpired {
		t.Fatalf("ExpireApprovals = %+v, %v", expired, err)
	}
	if again, _ := s.ExpireApprovals(ctx, time.Now()); len(again) != 0 {
		t.Errorf("expired twice: %+v", again)
	}
	if _, err := resolve(s, "old", false, "p", "", store.Lease{}); !errors.Is(err, store.ErrExpired) {
		t.Errorf("resolving after expiry: %v", err)
	}
	// An approved call whose executor died is an orphan; one that is alive
	// or finished is not.
	s.CreateApproval(ctx, approval("dead", "", time.Now().Add(time.Hour)))
	resolve(s, "dead", true, "p", "", store.Lease{Holder: "gone", TTL: -time.Second})
	resolve(s, "new", true, "p", "", store.Lease{Holder: "alive", TTL: time.Minute})
	orphans, err := s.OrphanedApprovals(ctx, time.Now())
	if err != nil || len(orphans) != 1 || orphans[0].CallID != "dead" {
		t.Errorf("OrphanedApprovals = %+v, %v", orphans, err)
	}
	// Renewing needs the executor's own name.
	s.RenewExecutor(ctx, "dead", store.Lease{Holder: "someone else", TTL: time.Minute})
	if orphans, _ := s.OrphanedApprovals(ctx, time.Now()); len(orphans) != 1 {
		t.Errorf("another host renewed the executor's lease: %+v", orphans)
	}
	s.FinishApproval(ctx, "dead", api.Outcome{})
	if orphans, _ := s.OrphanedApprovals(ctx, time.Now()); len(orphans) != 0 {
		t.Errorf("a finished call is still an orphan: %+v", orphans)
	}
	// An executor that renews its lease keeps its call.
	if err := s.RenewExecutor(ctx, "new", store.Lease{Holder: "alive", TTL: -time.Second}); err != nil {
		t.Fatal(err)
	}
	if orphans, _ := s.OrphanedApprovals(ctx, time.Now()); len(orphans) != 1 || orphans[0].CallID != "new" {
		t.Errorf("after renewing into the past: %+v", orphans)
	}
}

// Approvals list oldest first, filtered by status and paged with opaque
// cursors.
func testListApprovals(t *testing.T, s store.Store) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	later := time.Now().Add(time.Hour)
	for i, id := range []string{"a", "b", "c", "d", "e", "f"} {
		a := approval(id, "", later)
		if id == "d" {
			a.ExpiresAt = time.Now().Add(-time.Second)
		}
		a.RequestedAt = base.Add(time.Duration(i/2) * time.Second) // ties broken by call id
		if _, err := s.CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := resolve(s, "b", true, "p", "", store.Lease{Holder: "h", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := resolve(s, "c", false, "p", "too risky", store.Lease{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExpireApprovals(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	ids := func(status api.ApprovalStatus, limit int) string {
		t.Helper()
		var got []string
		for cursor := ""; ; {
			page, next, err := s.ListApprovals(ctx, store.ListApprovalsParams{Status: status, Page: store.Page{Limit: limit, Cursor: cursor}})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range page {
				if status != "" && a.Status != status {
					t.Errorf("listing %q gave %s, %s", status, a.CallID, a.Status)
				}
				got = append(got, a.CallID)
			}
			if next == "" {
				return fmt.Sprint(got)
			}
			cursor = next
		}
	}
	for _, tt := range []struct {
		status api.ApprovalStatus
		limit  int
		want   string
	}{
		{"", 0, "[a b c d e f]"},
		{"", 1, "[a b c d e f]"},
		{"", 4, "[a b c d e f]"},
		{api.ApprovalPending, 0, "[a e f]"},
		{api.ApprovalPending, 2, "[a e f]"},
		{api.ApprovalApproved, 0, "[b]"},
		{api.ApprovalDenied, 1, "[c]"},
		{api.ApprovalExpired, 0, "[d]"},
	} {
		if got := ids(tt.status, tt.limit); got != tt.want {
			t.Errorf("ListApprovals(%q, limit %d) = %s, want %s", tt.status, tt.limit, got, tt.want)
		}
	}
	denied, _, _ := s.ListApprovals(ctx, store.ListApprovalsParams{Status: api.ApprovalDenied})
	if len(denied) != 1 || denied[0].DecidedBy != "p" || denied[0].Reason != "too risky" || denied[0].DecidedAt == nil {
		t.Errorf("denied = %+v", denied)
	}
	if _, _, err := s.ListApprovals(ctx, store.ListApprovalsParams{Page: store.Page{Cursor: "not a cursor!"}}); !errors.Is(err, store.ErrBadCursor) {
		t.Errorf("bad cursor: %v", err)
	}
}

// Parking a call in a missing session fails, and parks nothing.
func testCreateApprovalAtomic(t *testing.T, s store.Store) {
	_, err := s.CreateApproval(ctx, approval("c1", "nope", time.Now().Add(time.Hour)), ev(api.KindApprovalRequested, nil))
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("parking in a missing session: %v", err)
	}
	if _, err := s.Approval(ctx, "c1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a failed CreateApproval parked the call: %v", err)
	}
	// The events take the approval's turn.
	mustSession(t, s, "s")
	a := approval("c2", "s", time.Now().Add(time.Hour))
	a.TurnID = "t1"
	evs, err := s.CreateApproval(ctx, a, ev(api.KindApprovalRequested, nil))
	if err != nil || len(evs) != 1 || evs[0].TurnID != "t1" || evs[0].SessionID != "s" {
		t.Errorf("CreateApproval = %+v, %v", evs, err)
	}
}

// An approved call left unclaimed waits for whoever takes its session's
// lease: listed to run, claimed once, and only then watched for a dead
// executor.
func testApprovalClaims(t *testing.T, s store.Store) {
	mustSession(t, s, "s")
	park := func(id string) {
		t.Helper()
		a := api.Approval{CallID: id, SessionID: "s", TurnID: "t1", Tool: "deploy", Input: []byte(`{}`), RequestedBy: "p", ExpiresAt: time.Now().Add(time.Hour)}
		if _, err := s.CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"c1", "c2", "c3"} {
		park(id)
	}
	resolve := func(id string, approved bool, executor store.Lease) {
		t.Helper()
		if _, _, err := s.ResolveApproval(ctx, store.ResolveApprovalParams{CallID: id, Approved: approved, By: "boss", Executor: executor}); err != nil {
			t.Fatal(err)
		}
	}
	resolve("c1", true, store.Lease{})
	resolve("c2", false, store.Lease{})
	resolve("c3", true, store.Lease{Holder: "h", TTL: time.Minute})
	toRun, err := s.ApprovalsToRun(ctx, "s", "t1")
	if err != nil || len(toRun) != 1 || toRun[0].CallID != "c1" {
		t.Fatalf("ApprovalsToRun = %+v, %v", toRun, err)
	}
	if other, _ := s.ApprovalsToRun(ctx, "s", "t2"); len(other) != 0 {
		t.Errorf("another turn's calls to run: %+v", other)
	}
	if orphans, _ := s.OrphanedApprovals(ctx, time.Now().Add(time.Hour)); len(orphans) != 1 || orphans[0].CallID != "c3" {
		t.Errorf("an unclaimed call counts as orphaned: %+v", orphans)
	}
	// A renewal by nobody does not claim it.
	s.RenewExecutor(ctx, "c1", store.Lease{TTL: time.Minute})
	if won, err := s.ClaimApproval(ctx, "c1", store.Lease{Holder: "h1", TTL: time.Minute}); err != nil || !won {
		t.Fatalf("first claim = %v, %v", won, err)
	}
	for _, id := range []string{"c1", "c2", "c3", "nope"} {
		if won, err := s.ClaimApproval(ctx, id, store.Lease{Holder: "h2", TTL: time.Minute}); err != nil || won {
			t.Errorf("claiming %s again = %v, %v", id, won, err)
		}
	}
	if toRun, _ := s.ApprovalsToRun(ctx, "s", "t1"); len(toRun) != 0 {
		t.Errorf("claimed calls still to run: %+v", toRun)
	}
	if orphans, _ := s.OrphanedApprovals(ctx, time.Now().Add(time.Hour)); len(orphans) != 2 {
		t.Errorf("claimed calls whose executors' leases ran out: %+v", orphans)
	}
}

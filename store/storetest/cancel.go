package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// cancelled is the outcome the suite gives the calls a cancel closes.
var cancelled = api.Outcome{IsError: true, Result: json.RawMessage(`"cancelled before it finished"`)}

// cancelParams cancels turn t of session s, appending one event per call
// closed and then turn.failed.
func cancelParams(s, t string) store.CancelTurnParams {
	return store.CancelTurnParams{SessionID: s, TurnID: t, Reason: "cancelled", CallReason: "its turn was cancelled", Outcome: cancelled,
		Events: func(closed []api.Approval) []api.Event {
			var evs []api.Event
			for _, a := range closed {
				evs = append(evs, ev(api.KindActionResult, map[string]string{"callId": a.CallID, "status": string(a.Status)}))
			}
			return append(evs, ev(api.KindTurnFailed, map[string]string{"code": "cancelled"}))
		}}
}

// A parked turn is cancelled once, with the calls it waits on: pending
// ones become cancelled, approved ones nobody ran get an outcome so that
// they never run; a call being run, another turn's and one with an
// outcome are left alone. A turn a lease holds is cancelled only with
// Held.
func testCancelTurn(t *testing.T, s store.Store) {
	mustSession(t, s, "s")
	h := hold(t, s, "s", "t1", store.Lease{Holder: "h", TTL: time.Minute})
	base := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	park := func(id, turnID string, i int) {
		t.Helper()
		a := api.Approval{CallID: id, SessionID: "s", TurnID: turnID, Tool: "deploy", Input: []byte(`{}`), RequestedBy: "p",
			RequestedAt: base.Add(time.Duration(i) * time.Second), ExpiresAt: time.Now().Add(time.Hour)}
		if _, err := s.CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	decide := func(id string, approved bool, executor store.Lease) {
		t.Helper()
		if _, _, err := s.ResolveApproval(ctx, store.ResolveApprovalParams{CallID: id, Approved: approved, By: "boss", Executor: executor}); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range []string{"pending", "approved", "running", "denied", "finished"} {
		park(id, "t1", i)
	}
	park("other", "t0", 9)
	decide("approved", true, store.Lease{})
	decide("running", true, store.Lease{})
	if won, err := s.ClaimApproval(ctx, "running", store.Lease{Holder: "h", TTL: time.Minute}); err != nil || !won {
		t.Fatalf("ClaimApproval = %v, %v", won, err)
	}
	decide("denied", false, store.Lease{})
	decide("finished", true, store.Lease{})
	s.ClaimApproval(ctx, "finished", store.Lease{Holder: "h", TTL: time.Minute})
	if ok, _, err := s.FinishApproval(ctx, "finished", api.Outcome{ToolName: "deploy", CallID: "finished"}); !ok || err != nil {
		t.Fatalf("FinishApproval = %v, %v", ok, err)
	}

	if _, _, err := s.CancelTurn(ctx, cancelParams("s", "t1")); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("cancelling a turn its lease holds: %v", err)
	}
	if a, _ := s.Approval(ctx, "pending"); a.Status != api.ApprovalPending || a.Outcome != nil {
		t.Errorf("a refused cancel changed a call: %+v", a)
	}
	if err := s.ParkTurn(ctx, h.Fence); err != nil {
		t.Fatal(err)
	}
	closed, stored, err := s.CancelTurn(ctx, cancelParams("s", "t1"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range closed {
		got = append(got, a.CallID+":"+string(a.Status))
		if a.Outcome == nil || a.Outcome.CallID != a.CallID || a.Outcome.ToolName != "deploy" || !a.Outcome.IsError {
			t.Errorf("closed %s with outcome %+v", a.CallID, a.Outcome)
		}
	}
	if want := "[pending:cancelled approved:approved denied:denied]"; fmt.Sprint(got) != want {
		t.Errorf("closed %v, want %s (oldest first)", got, want)
	}
	if len(stored) != 4 || stored[3].Kind != api.KindTurnFailed || stored[0].Seq != 1 ||
		slices.ContainsFunc(stored, func(e api.Event) bool { return e.TurnID != "t1" || e.SessionID != "s" }) {
		t.Errorf("stored %+v", stored)
	}
	if turn, _ := s.Turn(ctx, "s", "t1"); turn.Status != api.TurnStatusFailed || turn.Reason != "cancelled" || turn.EndedAt == nil {
		t.Errorf("turn = %+v", turn)
	}
	if sess, _ := s.Session(ctx, "s"); sess.RunningTurn != "" || sess.LastSeq != 4 {
		t.Errorf("session = %+v", sess)
	}
	a, err := resolve(s, "pending", true, "late", "", store.Lease{})
	if !errors.Is(err, store.ErrAlreadyResolved) || a.Status != api.ApprovalCancelled || a.DecidedAt == nil || a.Reason != "its turn was cancelled" {
		t.Errorf("deciding a cancelled call: %+v, %v", a, err)
	}
	if won, _ := s.ClaimApproval(ctx, "approved", store.Lease{Holder: "h2", TTL: time.Minute}); won {
		t.Error("claimed an approved call of a cancelled turn")
	}
	if toRun, _ := s.ApprovalsToRun(ctx, "s", "t1"); len(toRun) != 0 {
		t.Errorf("calls of a cancelled turn to run: %+v", toRun)
	}
	if ok, _, _ := s.FinishApproval(ctx, "denied", api.Outcome{ToolName: "deploy", CallID: "denied"}); ok {
		t.Error("a closed call got a second outcome")
	}
	for id, status := range map[string]api.ApprovalStatus{"running": api.ApprovalApproved, "other": api.ApprovalPending} {
		if a, _ := s.Approval(ctx, id); a.Status != status || a.Outcome != nil {
			t.Errorf("%s: %+v; want it left %s, without an outcome", id, a, status)
		}
	}
	if a, _ := s.Approval(ctx, "finished"); a.Outcome == nil || a.Outcome.IsError {
		t.Errorf("finished: %+v; want its own outcome", a)
	}
	if _, _, err := s.CancelTurn(ctx, cancelParams("s", "t1")); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("cancelling twice: %v", err)
	}
	if _, _, err := s.CancelTurn(ctx, cancelParams("nope", "t1")); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("cancelling in a missing session: %v", err)
	}
	h2 := hold(t, s, "s", "t2", store.Lease{Holder: "h", TTL: time.Minute})

	// Held ends a turn its lease holds too: the holder's writes then fail.
	park("held", "t2", 10)
	p := cancelParams("s", "t2")
	p.Held = true
	closed, stored, err = s.CancelTurn(ctx, p)
	if err != nil || len(closed) != 1 || closed[0].CallID != "held" || closed[0].Status != api.ApprovalCancelled || len(stored) != 2 {
		t.Errorf("cancelling a held turn = %+v, %+v, %v", closed, stored, err)
	}
	if _, err := s.AppendTurn(ctx, h2.Fence, ev("late", nil)); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("the holder wrote after the cancel: %v", err)
	}
	if err := s.RenewLease(ctx, h2.Fence, store.Lease{Holder: "h", TTL: time.Minute}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("the holder renewed after the cancel: %v", err)
	}
	if _, _, err := s.CancelTurn(ctx, p); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("cancelling an ended turn: %v", err)
	}
}

// A decision and a cancel of its parked turn at once: the call ends either
// decided (and then closed by the cancel, never run) or cancelled, never
// both; the turn is cancelled once, and resuming it fails.
func testCancelTurnRaces(t *testing.T, s store.Store) {
	for i := range 8 {
		id := fmt.Sprintf("s%d", i)
		mustSession(t, s, id)
		h := hold(t, s, id, "t", store.Lease{Holder: "h", TTL: time.Minute})
		if _, err := s.CreateApproval(ctx, api.Approval{CallID: id + "-c", SessionID: id, TurnID: "t", Tool: "deploy", Input: []byte(`{}`),
			RequestedBy: "p", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if err := s.ParkTurn(ctx, h.Fence); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var decided, resumed error
		cancels, closedBy := make([]error, 2), make([][]api.Approval, 2)
		wg.Go(func() { _, decided = resolve(s, id+"-c", true, "boss", "", store.Lease{}) })
		wg.Go(func() { _, resumed = s.ResumeTurn(ctx, id, "t", store.Lease{Holder: "h2", TTL: time.Minute}) })
		for j := range cancels {
			wg.Go(func() { closedBy[j], _, cancels[j] = s.CancelTurn(ctx, cancelParams(id, "t")) })
		}
		wg.Wait()
		a, _ := s.Approval(ctx, id+"-c")
		ok := 0
		var closed []api.Approval
		for j, err := range cancels {
			if err == nil {
				ok++
				closed = closedBy[j]
			} else if !errors.Is(err, store.ErrNotRunning) {
				t.Error(err)
			}
		}
		if resumed == nil {
			// The resumption came first: the turn is held, not cancelled.
			if ok != 0 || a.Outcome != nil {
				t.Errorf("%s: resumed and cancelled (%d) or closed: %+v", id, ok, a)
			}
			continue
		}
		if ok != 1 {
			t.Errorf("%s: %d cancels succeeded, want 1: %v", id, ok, cancels)
			continue
		}
		switch {
		case decided == nil && a.Status == api.ApprovalApproved, errors.Is(decided, store.ErrAlreadyResolved) && a.Status == api.ApprovalCancelled:
		default:
			t.Errorf("%s: decision %v, call %s", id, decided, a.Status)
		}
		if a.Outcome == nil || len(closed) != 1 || closed[0].Status != a.Status {
			t.Errorf("%s: the cancel closed %+v; the call stands %+v", id, closed, a)
		}
		if turn, _ := s.Turn(ctx, id, "t"); turn.Status != api.TurnStatusFailed {
			t.Errorf("%s: turn %+v", id, turn)
		}
	}
}

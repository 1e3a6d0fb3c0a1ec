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

// vote records one voter's decision on a call that needs quorum
// approvals, with an event made from the call as it stands.
func vote(s store.Store, callID, voter string, approved bool, quorum int, input json.RawMessage) (api.Approval, []api.Event, error) {
	return s.ResolveApproval(ctx, store.ResolveApprovalParams{
		CallID: callID, Approved: approved, By: voter, Voter: voter, Quorum: quorum, Input: input,
		EventsFor: func(a api.Approval) []api.Event {
			return []api.Event{ev(api.KindApprovalVoted, map[string]any{"status": a.Status, "approvals": len(a.Approvals), "input": a.Input})}
		},
	})
}

// A call needing two approvals: twenty voters at once approve it once,
// on the second; a voter counts once; a denial decides at once (its
// events made from the call with the approvals before it); an edit
// keeps the input asked for, replaces what runs and drops the approvals
// before it; listings carry the approvals.
func testApprovalQuorum(t *testing.T, s store.Store) {
	mustSession(t, s, "s")
	later := time.Now().Add(time.Hour)
	if _, err := s.CreateApproval(ctx, approval("q1", "s", later)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, evs, err := vote(s, "q1", fmt.Sprintf("voter-%d", i), true, 2, nil)
			key := "err " + fmt.Sprint(err)
			if err == nil {
				key = fmt.Sprintf("%s %d events %d", a.Status, len(a.Approvals), len(evs))
			} else if errors.Is(err, store.ErrAlreadyResolved) {
				key = "already resolved"
			}
			mu.Lock()
			outcomes[key]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if outcomes["pending 1 events 1"] != 1 || outcomes["approved 2 events 1"] != 1 || outcomes["already resolved"] != 18 {
		t.Errorf("twenty voters at once: %v", outcomes)
	}
	a, err := s.Approval(ctx, "q1")
	if err != nil || a.Status != api.ApprovalApproved || len(a.Approvals) != 2 || a.DecidedBy != a.Approvals[1].By {
		t.Errorf("the approved call: %+v, %v", a, err)
	}
	if evs, _ := s.Events(ctx, "s", 0, 0); len(evs) != 2 {
		t.Errorf("the stream has %d events, want the two votes'", len(evs))
	}

	if _, err := s.CreateApproval(ctx, approval("q2", "", later)); err != nil {
		t.Fatal(err)
	}
	if a, _, err := vote(s, "q2", "alice", true, 3, nil); err != nil || a.Status != api.ApprovalPending || len(a.Approvals) != 1 {
		t.Fatalf("alice's approval: %+v, %v", a, err)
	}
	if _, _, err := vote(s, "q2", "alice", true, 3, nil); !errors.Is(err, store.ErrAlreadyVoted) {
		t.Errorf("alice again: %v, want ErrAlreadyVoted", err)
	}
	if _, _, err := vote(s, "q2", "bob", true, 3, json.RawMessage(`{"environment":"production"}`)); err != nil {
		t.Fatal(err) // the same input: no edit
	}
	a, _, err = vote(s, "q2", "carol", true, 3, json.RawMessage(`{"environment": "staging"}`))
	if err != nil || a.Status != api.ApprovalPending || len(a.Approvals) != 1 || !a.Approvals[0].Edited ||
		string(a.Input) != `{"environment": "staging"}` || string(a.OriginalInput) != `{"environment":"production"}` {
		t.Fatalf("carol's edit: %+v, %v (want her approval alone, the edit stored, the input asked for kept)", a, err)
	}
	list, _, err := pendingApprovals(s)
	if err != nil || len(list) != 1 || list[0].CallID != "q2" || len(list[0].Approvals) != 1 || list[0].Approvals[0].By != "carol" {
		t.Errorf("ListApprovals: %+v, %v", list, err)
	}
	// The denial's events are made from the call as it stands, with the
	// approvals given before it (the stream says "denied after 1 of 3").
	seen := -1
	a, _, err = s.ResolveApproval(ctx, store.ResolveApprovalParams{CallID: "q2", Approved: false, By: "dave", Voter: "dave", Quorum: 3,
		EventsFor: func(a api.Approval) []api.Event { seen = len(a.Approvals); return nil }})
	if err != nil || a.Status != api.ApprovalDenied || a.DecidedBy != "dave" || string(a.Input) != `{"environment": "staging"}` || len(a.Approvals) != 1 {
		t.Errorf("dave's denial: %+v, %v", a, err)
	}
	if seen != 1 {
		t.Errorf("dave's denial's events were made from the call with %d approvals, want carol's", seen)
	}
	if _, _, err := vote(s, "q2", "erin", true, 3, nil); !errors.Is(err, store.ErrAlreadyResolved) {
		t.Errorf("after the denial: %v", err)
	}
	if _, _, err := vote(s, "nope", "erin", true, 3, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an unknown call: %v", err)
	}
}

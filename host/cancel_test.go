package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/memory"
	"github.com/agentsdk/agentsdk/tool"
)

// cancelBundle is two hosts on one store, with the approval tools: the
// parker runs the turns, the canceller only cancels them, as a host behind
// the same load balancer would.
type cancelBundle struct {
	store             store.Store
	parker, canceller *host.Host
	fake              *fakemodel.Server
	ran               *sync.Map // the promote calls that ran, by call id
}

// setupCancel starts the two hosts on a store of driver: one memory store
// both share, or two connections to one SQLite or PostgreSQL database.
func setupCancel(t *testing.T, driver string, script ...fakemodel.Reply) *cancelBundle {
	t.Helper()
	var stores []store.Store
	if driver == "memory" {
		m := memory.New()
		stores = []store.Store{m, m}
	} else {
		stores = openStores(t, driver, 2)
	}
	b := &cancelBundle{store: stores[0], fake: fakemodel.New(script...), ran: &sync.Map{}}
	t.Cleanup(b.fake.Close)
	b.fake.SetDefault(fakemodel.Reply{Text: []string{"Done."}})
	b.parker = startHost(t, stores[0], gatedTools(t, b.ran), b.fake.AnthropicURL(), host.Options{})
	b.canceller = startHost(t, stores[1], gatedTools(t, b.ran), b.fake.AnthropicURL(), host.Options{})
	return b
}

// parked waits until the store holds the turn parked.
func (b *cancelBundle) parked(t *testing.T, sessionID, turnID string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		parked, err := b.store.ParkedTurns(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(parked, func(p api.Turn) bool { return p.SessionID == sessionID && p.ID == turnID }) {
			return
		}
		if time.Now().After(deadline) {
			evs, _ := b.store.Events(context.Background(), sessionID, 0, 0)
			t.Fatalf("turn %s did not park; events: %s", turnID, kinds(evs))
		}
		time.Sleep(10 * time.Millisecond) // another host parks it: no event of this one's says so
	}
}

// ended waits for the end of a turn, read from the store (another host
// may write it), and returns the session's events.
func (b *cancelBundle) ended(t *testing.T, sessionID, turnID string) []api.Event {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		evs, err := b.store.Events(context.Background(), sessionID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(evs, func(e api.Event) bool {
			return e.TurnID == turnID && (e.Kind == api.KindTurnCompleted || e.Kind == api.KindTurnFailed)
		}) {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("turn %s did not end; events: %s", turnID, kinds(evs))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (b *cancelBundle) runs(callID string) bool {
	_, ran := b.ran.Load(callID)
	return ran
}

// decode reads an event's payload.
func decode[T api.Payload](t *testing.T, e api.Event) T {
	t.Helper()
	p, err := api.Decode[T](e)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var stores3 = []string{"memory", "sqlite", "postgres"}

// A turn parked on an approval is cancelled from another host: it ends
// with turn.failed (cancelled), its pending call is closed as cancelled
// with a result, a later decision is refused and runs nothing, and the
// session takes a new message, whose turn the model sees the result in.
func TestCancelParkedTurn(t *testing.T) {
	for _, driver := range stores3 {
		t.Run(driver, func(t *testing.T) {
			b := setupCancel(t, driver, fakemodel.Reply{Calls: []fakemodel.Call{
				{ID: "p1", Name: "promote", Input: `{"service":"api","environment":"production"}`},
				{ID: "w1", Name: "weather", Input: `{"city":"Oslo"}`},
			}})
			ctx := context.Background()
			sess, turnID, err := b.parker.Sessions().Create(ctx, host.SessionOptions{Message: "ship it", Principal: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			b.parked(t, sess.ID, turnID)
			evs, _ := b.store.Events(ctx, sess.ID, 0, 0)
			callID := pendingCall(t, evs)
			if _, err := b.canceller.Sessions().Send(ctx, sess.ID, "more"); !errors.Is(err, api.ErrSessionBusy) {
				t.Fatalf("a parked turn holds its session: %v", err)
			}

			if err := b.canceller.Sessions().Cancel(ctx, sess.ID); err != nil {
				t.Fatalf("cancelling a parked turn: %v", err)
			}
			evs = b.ended(t, sess.ID, turnID)
			tail := evs[len(evs)-3:]
			if got := kinds(tail); got != "action.approval_resolved action.result turn.failed" {
				t.Fatalf("after the cancel: %s", kinds(evs))
			}
			if r := decode[api.ApprovalResolved](t, tail[0]); r.CallID != callID || r.Status != api.ApprovalCancelled || r.At.IsZero() {
				t.Errorf("the decision on the stream: %+v", r)
			}
			if r := decode[api.ActionResult](t, tail[1]); r.CallID != callID || r.ModelCallID != "p1" || !r.IsError || string(r.Result) != `"cancelled before it finished"` {
				t.Errorf("the parked call's result: %+v", r)
			}
			if f := decode[api.TurnFailed](t, tail[2]); f.Code != api.FailureCancelled || f.Reason != "cancelled" || f.Usage == nil {
				t.Errorf("turn.failed: %+v", f)
			}
			if s, _ := b.parker.Sessions().Get(ctx, sess.ID); s.RunningTurn != "" {
				t.Errorf("the session is still busy: %+v", s)
			}
			a, _ := b.parker.Approvals().Get(ctx, callID)
			if a.Status != api.ApprovalCancelled || a.Outcome == nil || !a.Outcome.IsError {
				t.Errorf("the call after the cancel: %+v", a)
			}
			if pending, _, _ := b.parker.Approvals().List(ctx, api.ApprovalPending, store.Page{}); len(pending) != 0 {
				t.Errorf("still pending: %+v", pending)
			}

			// A decision after the cancel is refused, on either host.
			for _, h := range []*host.Host{b.parker, b.canceller} {
				_, err := h.Approvals().Resolve(ctx, callID, host.Decision{Approved: true, By: "bob"})
				var ae *api.Error
				if !errors.As(err, &ae) || ae.Code != api.CodeAlreadyResolved || ae.Approval == nil || ae.Approval.Status != api.ApprovalCancelled ||
					!strings.Contains(ae.Message, "cancelled with its turn") {
					t.Errorf("approving a cancelled call: %v", err)
				}
			}
			if err := b.canceller.Sessions().Cancel(ctx, sess.ID); !errors.Is(err, api.ErrNoRunningTurn) {
				t.Errorf("a second cancel: %v", err)
			}

			// A new message starts a turn, which the model answers with the
			// cancelled call's result in the history.
			next, err := b.canceller.Sessions().Send(ctx, sess.ID, "never mind")
			if err != nil {
				t.Fatalf("a message after the cancel: %v", err)
			}
			evs = b.ended(t, sess.ID, next)
			if got := kinds(evs[len(evs)-2:]); got != "model.usage turn.completed" {
				t.Errorf("the next turn: %s", kinds(evs))
			}
			if !b.fake.Contains(1, "cancelled before it finished") {
				t.Errorf("the model was not told:\n%s", b.fake.Requests()[1])
			}
			if b.runs(callID) {
				t.Error("the cancelled call ran")
			}
		})
	}
}

// A session's direct call parked for approval is cancelled with its turn:
// the caller waiting for it gets the cancelled result.
func TestCancelParkedDirectCall(t *testing.T) {
	for _, driver := range stores3 {
		t.Run(driver, func(t *testing.T) {
			b := setupCancel(t, driver)
			ctx := context.Background()
			sess, _, err := b.parker.Sessions().Create(ctx, host.SessionOptions{Principal: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			type answer struct {
				out *api.Outcome
				err error
			}
			got := make(chan answer, 1)
			go func() {
				out, err := b.parker.CallTool(ctx, "promote", map[string]string{"service": "api", "environment": "production"},
					&host.CallOptions{SessionID: sess.ID, Wait: 20 * time.Second})
				got <- answer{out, err}
			}()
			var turnID string
			for turnID == "" {
				s, _ := b.store.Session(ctx, sess.ID)
				turnID = s.RunningTurn
				time.Sleep(5 * time.Millisecond) // the call begins its turn on another goroutine
			}
			b.parked(t, sess.ID, turnID)
			if err := b.canceller.Sessions().Cancel(ctx, sess.ID); err != nil {
				t.Fatal(err)
			}
			a := <-got
			if a.err != nil || a.out == nil || !a.out.IsError || string(a.out.Result) != `"cancelled before it finished"` {
				t.Fatalf("the waiting caller got %+v, %v", a.out, a.err)
			}
			evs := b.ended(t, sess.ID, turnID)
			if got := kinds(evs[len(evs)-3:]); got != "action.approval_resolved action.result turn.failed" {
				t.Errorf("events: %s", kinds(evs))
			}
			if r := decode[api.ActionResult](t, evs[len(evs)-2]); !r.Direct {
				t.Errorf("the direct call's result: %+v", r)
			}
			if b.runs(a.out.CallID) {
				t.Error("the cancelled call ran")
			}
		})
	}
}

// A decision and a cancel from another host at once: exactly one wins.
// Either the cancel ends the turn and the call never runs (a decision
// just before it stays recorded, one after is refused), or the decision
// has resumed the turn, which runs the call and completes, and the cancel
// finds no turn it can end.
func TestCancelRacesADecision(t *testing.T) {
	for _, driver := range stores3 {
		t.Run(driver, func(t *testing.T) {
			b := setupCancel(t, driver)
			ctx := context.Background()
			for i := range 4 {
				b.fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "p1", Name: "promote", Input: `{"service":"api","environment":"production"}`}}})
				sess, turnID, err := b.parker.Sessions().Create(ctx, host.SessionOptions{Message: "ship it"})
				if err != nil {
					t.Fatal(err)
				}
				b.parked(t, sess.ID, turnID)
				evs, _ := b.store.Events(ctx, sess.ID, 0, 0)
				callID := pendingCall(t, evs)
				var decided, cancelled error
				var wg sync.WaitGroup
				wg.Go(func() {
					_, decided = b.parker.Approvals().Resolve(ctx, callID, host.Decision{Approved: true, By: "bob"})
				})
				wg.Go(func() { cancelled = b.canceller.Sessions().Cancel(ctx, sess.ID) })
				wg.Wait()
				t.Logf("%d: cancel: %v; decision: %v", i, cancelled, decided)
				evs = b.ended(t, sess.ID, turnID)
				end := evs[len(evs)-1]
				resolved := find(evs, api.KindApprovalResolved)
				switch {
				case cancelled == nil:
					if end.Kind != api.KindTurnFailed || b.runs(callID) {
						t.Errorf("%d: cancelled, and then %s (ran: %v)", i, kinds(evs), b.runs(callID))
					}
					if decided != nil && !errors.Is(decided, api.ErrAlreadyResolved) {
						t.Errorf("%d: the decision: %v", i, decided)
					}
				case errors.Is(cancelled, api.ErrNoRunningTurn):
					if decided != nil || end.Kind != api.KindTurnCompleted || !b.runs(callID) {
						t.Errorf("%d: the cancel lost, the decision %v; then %s (ran: %v)", i, decided, kinds(evs), b.runs(callID))
					}
				default:
					t.Fatalf("%d: cancel: %v", i, cancelled)
				}
				if len(resolved) != 1 {
					t.Errorf("%d: %d decisions on the stream: %s", i, len(resolved), kinds(evs))
				}
				if r := find(evs, api.KindActionResult); len(r) != 1 {
					t.Errorf("%d: %d results: %s", i, len(r), kinds(evs))
				}
				var d api.ApprovalResolved
				json.Unmarshal(resolved[0].Data, &d)
				if (d.Status == api.ApprovalCancelled) != errors.Is(decided, api.ErrAlreadyResolved) {
					t.Errorf("%d: the stream's decision is %s, the decision's answer %v", i, d.Status, decided)
				}
			}
		})
	}
}

// A cancel while the host runs a turn's approved call (it resumed the turn
// after the decision) stops the call and ends the turn, rather than
// parking it again to go on once the call returns.
func TestCancelWhileAnApprovedCallRuns(t *testing.T) {
	for _, driver := range stores3 {
		t.Run(driver, func(t *testing.T) {
			st := memory.New()
			if driver != "memory" {
				st = openStore(t, driver)
			}
			started := make(chan struct{}, 1)
			var stopped sync.WaitGroup
			stopped.Add(1)
			deploy, err := tool.New("deploy", tool.Config{Description: "Deploy; waits until cancelled.", NeedsApproval: tool.Always},
				func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
					defer stopped.Done()
					started <- struct{}{}
					<-ctx.Done()
					return nil, ctx.Err()
				})
			if err != nil {
				t.Fatal(err)
			}
			set, _ := tool.NewSet(deploy)
			fake := fakemodel.New(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "d1", Name: "deploy", Input: `{}`}}})
			t.Cleanup(fake.Close)
			fake.SetDefault(fakemodel.Reply{Text: []string{"should not be asked"}})
			h := startHost(t, st, set, fake.AnthropicURL(), host.Options{})
			ctx := context.Background()
			sess, turnID, err := h.Sessions().Create(ctx, host.SessionOptions{Message: "deploy"})
			if err != nil {
				t.Fatal(err)
			}
			b := &cancelBundle{store: st}
			b.parked(t, sess.ID, turnID)
			evs, _ := st.Events(ctx, sess.ID, 0, 0)
			if _, err := h.Approvals().Resolve(ctx, pendingCall(t, evs), host.Decision{Approved: true, By: "bob"}); err != nil {
				t.Fatal(err)
			}
			<-started
			if err := h.Sessions().Cancel(ctx, sess.ID); err != nil {
				t.Fatal(err)
			}
			stopped.Wait()
			evs = b.ended(t, sess.ID, turnID)
			f := find(evs, api.KindTurnFailed)
			if len(f) != 1 || decode[api.TurnFailed](t, f[0]).Code != api.FailureCancelled || len(find(evs, api.KindActionResult)) != 1 {
				t.Errorf("events: %s", kinds(evs))
			}
			if n := len(fake.Requests()); n != 1 {
				t.Errorf("the model was asked %d times; the cancelled turn went on", n)
			}
		})
	}
}

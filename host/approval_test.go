package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

type promoteInput struct {
	Service     string `json:"service"`
	Environment string `json:"environment"`
}

// gatedTools has promote (gated for production), panicky (a predicate that
// panics) and weather (never gated).
func gatedTools(t *testing.T, ran *sync.Map) *tool.Set {
	promote, err := tool.New("promote", tool.Config{
		Description:   "Promote a build.",
		NeedsApproval: tool.When(func(in promoteInput) bool { return in.Environment == "production" }),
	}, func(ctx context.Context, call *tool.Call, in promoteInput) (any, error) {
		ran.Store(call.ID, in)
		return map[string]string{"promoted": in.Service, "to": in.Environment}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	panicky, _ := tool.New("panicky", tool.Config{
		Description:   "A predicate that panics.",
		NeedsApproval: tool.When(func(in struct{}) bool { panic("oops") }),
	}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "ran", nil })
	quick, _ := tool.New("expiring", tool.Config{Description: "Expires fast.", NeedsApproval: tool.Always, ApprovalTimeout: 300 * time.Millisecond},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "ran", nil })
	weather, _ := tool.New("weather", tool.Config{Description: "Weather."},
		func(ctx context.Context, call *tool.Call, in weatherInput) (any, error) { return "clear", nil })
	slow, _ := tool.New("slowok", tool.Config{Description: "Takes a moment."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			time.Sleep(300 * time.Millisecond)
			return "done", nil
		})
	set, _ := tool.NewSet(promote, panicky, quick, weather, slow)
	return set
}

type approvalBundle struct {
	*sessionBundle
	ran *sync.Map
}

func setupApprovals(t *testing.T, script ...fakemodel.Reply) *approvalBundle {
	t.Helper()
	state := t.TempDir()
	fake := fakemodel.New(script...)
	t.Cleanup(fake.Close)
	st, err := sqlite.Open(context.Background(), filepath.Join(state, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	ran := &sync.Map{}
	b := &approvalBundle{sessionBundle: &sessionBundle{state: state, fake: fake, store: st}, ran: ran}
	b.host = b.newHost(t)
	t.Cleanup(func() { st.Close() })
	return b
}

// newHost starts a host on the bundle's store, as a restarted process would.
func (b *approvalBundle) newHost(t *testing.T) *host.Host {
	p, _ := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: b.fake.AnthropicURL(), MaxTokens: 100})
	h, err := host.New(gatedTools(t, b.ran), &host.Options{StateRoot: b.state, Store: b.store, Model: p, LeaseTTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// waitFor waits until the session has an event of kind (and returns all).
func (b *approvalBundle) waitFor(t *testing.T, h *host.Host, sessionID string, kind api.Kind, n int) []api.Event {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		evs, _ := h.Sessions().Events(context.Background(), sessionID, 0, 10000)
		if len(find(evs, kind)) >= n {
			return evs
		}
		select {
		case <-time.After(20 * time.Millisecond): // another host may write: its hub is not this one's
		case <-deadline:
			t.Fatalf("no %d×%s; events: %s", n, kind, kinds(evs))
		}
	}
}

func pendingCall(t *testing.T, evs []api.Event) string {
	t.Helper()
	req := find(evs, api.KindApprovalRequested)
	if len(req) == 0 {
		t.Fatalf("no approval requested: %s", kinds(evs))
	}
	var d struct {
		CallID string `json:"callId"`
	}
	json.Unmarshal(req[len(req)-1].Data, &d)
	return d.CallID
}

func TestApproveInAModelTurn(t *testing.T) {
	b := setupApprovals(t,
		fakemodel.Reply{Calls: []fakemodel.Call{
			{ID: "p1", Name: "promote", Input: `{"service":"api","environment":"production"}`},
			{ID: "w1", Name: "weather", Input: `{"city":"Oslo"}`},
		}},
		fakemodel.Reply{Text: []string{"Promoted."}},
	)
	ctx := context.Background()
	sess, turnID, err := b.host.Sessions().Create(ctx, host.SessionOptions{Message: "ship it", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, b.host, sess.ID, api.KindApprovalRequested, 1)
	evs := b.waitFor(t, b.host, sess.ID, api.KindActionResult, 1)
	callID := pendingCall(t, evs)
	// The other call went on; the turn waits, still running.
	if r := find(evs, api.KindActionResult); !strings.Contains(string(r[0].Data), `"tool":"weather"`) {
		t.Errorf("the ungated call: %s", r[0].Data)
	}
	if s, _ := b.host.Sessions().Get(ctx, sess.ID); s.RunningTurn != turnID {
		t.Errorf("the turn should stay running while parked: %+v", s)
	}
	if _, err := b.host.Sessions().Send(ctx, sess.ID, "more"); !errors.Is(err, api.ErrSessionBusy) {
		t.Errorf("a parked turn holds the session: %v", err)
	}
	pending, _, _ := b.host.Approvals().List(ctx, api.ApprovalPending, store.Page{})
	if len(pending) != 1 || pending[0].CallID != callID || pending[0].RequestedBy != "alice" || string(pending[0].Input) != `{"service":"api","environment":"production"}` {
		t.Fatalf("pending: %+v", pending)
	}

	// Twenty people answer at once: one decision stands.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, refused := 0, 0
	for i := range 20 {
		wg.Go(func() {
			_, err := b.host.Approvals().Resolve(ctx, callID, host.Decision{Approved: true, By: "approver" + string(rune('a'+i)), Reason: "ok"})
			mu.Lock()
			defer mu.Unlock()
			var already *api.Error
			switch {
			case err == nil:
				wins++
			case errors.As(err, &already) && errors.Is(err, api.ErrAlreadyResolved) && already.Approval.Status == api.ApprovalApproved:
				refused++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins != 1 || refused != 19 {
		t.Fatalf("%d decisions won, %d refused", wins, refused)
	}
	evs = b.waitTurn(t, sess.ID, turnID)
	// The ungated call's result and the approval request race each other.
	want := "session.created turn.started message model.usage actions.requested action.approval_requested action.result action.approval_resolved action.result message.delta message model.usage turn.completed"
	other := strings.Replace(want, "action.approval_requested action.result", "action.result action.approval_requested", 1)
	if got := kinds(evs); got != want && got != other {
		t.Fatalf("events:\n%s\nwant:\n%s", got, want)
	}
	resolved := find(evs, api.KindApprovalResolved)[0]
	if !strings.Contains(string(resolved.Data), `"status":"approved"`) || !strings.Contains(string(resolved.Data), `"by":"approver`) || !strings.Contains(string(resolved.Data), `"at":"`) {
		t.Errorf("approval_resolved: %s", resolved.Data)
	}
	// The tool ran once, with the input stored when it parked.
	count := 0
	b.ran.Range(func(k, v any) bool {
		count++
		if in := v.(promoteInput); in.Service != "api" || in.Environment != "production" || k != callID {
			t.Errorf("ran %v with %+v", k, in)
		}
		return true
	})
	if count != 1 {
		t.Errorf("the tool ran %d times", count)
	}
	if !b.fake.Contains(1, `promoted`) {
		t.Errorf("the model did not get the result:\n%s", b.fake.Requests()[1])
	}
}

func TestDenyAndFailClosed(t *testing.T) {
	b := setupApprovals(t,
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "p1", Name: "promote", Input: `{"service":"api","environment":"production"}`}}},
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "x1", Name: "panicky", Input: `{}`}}},
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "s1", Name: "promote", Input: `{"service":"api","environment":"staging"}`}}},
		fakemodel.Reply{Text: []string{"OK."}},
	)
	ctx := context.Background()
	sess, turnID, _ := b.host.Sessions().Create(ctx, host.SessionOptions{Message: "go"})
	callID := pendingCall(t, b.waitFor(t, b.host, sess.ID, api.KindApprovalRequested, 1))
	if _, err := b.host.Approvals().Resolve(ctx, callID, host.Decision{Approved: false, By: "bob", Reason: "not on a Friday"}); err != nil {
		t.Fatal(err)
	}
	// The predicate that panics fails closed: the call parks.
	evs := b.waitFor(t, b.host, sess.ID, api.KindApprovalRequested, 2)
	if !strings.Contains(string(find(evs, api.KindActionResult)[0].Data), `"result":"denied by bob: not on a Friday"`) {
		t.Errorf("denial result: %s", find(evs, api.KindActionResult)[0].Data)
	}
	if _, err := b.host.Approvals().Resolve(ctx, pendingCall(t, evs), host.Decision{Approved: true, By: "bob"}); err != nil {
		t.Fatal(err)
	}
	evs = b.waitTurn(t, sess.ID, turnID)
	if got := len(find(evs, api.KindApprovalRequested)); got != 2 {
		t.Errorf("staging should not need approval; %d requests: %s", got, kinds(evs))
	}
	if !b.fake.Contains(1, "denied by bob: not on a Friday") {
		t.Errorf("the model did not read the denial")
	}
	if _, err := b.host.Approvals().Resolve(ctx, "tool_nope_x", host.Decision{Approved: true}); !errors.Is(err, api.ErrApprovalNotFound) {
		t.Errorf("unknown call: %v", err)
	}
}

func TestDirectCallApproval(t *testing.T) {
	b := setupApprovals(t)
	ctx := context.Background()
	input := map[string]string{"service": "api", "environment": "production"}
	_, err := b.host.CallTool(ctx, "promote", input, nil)
	var pending *host.ApprovalPendingError
	if !errors.As(err, &pending) {
		t.Fatalf("a gated direct call: %v", err)
	}
	a, _ := b.host.Approvals().Get(ctx, pending.CallID)
	if a.Status != api.ApprovalPending || a.Outcome != nil {
		t.Errorf("before the decision: %+v", a)
	}
	if _, err := b.host.Approvals().Resolve(ctx, pending.CallID, host.Decision{Approved: true, By: "carol"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for a.Outcome == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		a, _ = b.host.Approvals().Get(ctx, pending.CallID)
	}
	var out api.Outcome
	if a.Outcome != nil {
		out = *a.Outcome
	}
	if out.IsError || !strings.Contains(string(out.Result), `"promoted":"api"`) || out.CallID != pending.CallID {
		t.Errorf("outcome %+v", out)
	}
	// A caller that waits gets the outcome when someone decides in time.
	go func() {
		for {
			list, _, _ := b.host.Approvals().List(ctx, api.ApprovalPending, store.Page{})
			if len(list) > 0 {
				b.host.Approvals().Resolve(ctx, list[0].CallID, host.Decision{Approved: false, By: "dan", Reason: "no"})
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	got, err := b.host.CallTool(ctx, "promote", input, &host.CallOptions{Wait: 10 * time.Second})
	if err != nil || !got.IsError || string(got.Result) != `"denied by dan: no"` {
		t.Errorf("waited call: %+v, %v", got, err)
	}
	// Staging needs no approval.
	if got, err := b.host.CallTool(ctx, "promote", map[string]string{"service": "api", "environment": "staging"}, nil); err != nil || got.IsError {
		t.Errorf("ungated: %+v %v", got, err)
	}
}

func TestExpiry(t *testing.T) {
	b := setupApprovals(t,
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "e1", Name: "expiring", Input: `{}`}}},
		fakemodel.Reply{Text: []string{"Too late."}},
	)
	ctx := context.Background()
	sess, turnID, _ := b.host.Sessions().Create(ctx, host.SessionOptions{Message: "go"})
	callID := pendingCall(t, b.waitFor(t, b.host, sess.ID, api.KindApprovalRequested, 1))
	evs := b.waitTurn(t, sess.ID, turnID)
	if r := find(evs, api.KindApprovalResolved); len(r) != 1 || !strings.Contains(string(r[0].Data), `"status":"expired"`) {
		t.Errorf("expiry: %s", kinds(evs))
	}
	if r := find(evs, api.KindActionResult); len(r) != 1 || !strings.Contains(string(r[0].Data), "nobody approved the call before it expired") {
		t.Errorf("expired result: %v", r)
	}
	if _, err := b.host.Approvals().Resolve(ctx, callID, host.Decision{Approved: true}); !errors.Is(err, api.ErrApprovalExpired) {
		t.Errorf("approving after expiry: %v", err)
	}
}

// A host that restarts finds the parked calls; approving one resumes the
// turn from its stored history on the new host.
func TestApprovalAcrossRestart(t *testing.T) {
	b := setupApprovals(t,
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "p1", Name: "promote", Input: `{"service":"api","environment":"production"}`}}},
		fakemodel.Reply{Text: []string{"Done after restart."}},
	)
	ctx := context.Background()
	sess, turnID, _ := b.host.Sessions().Create(ctx, host.SessionOptions{Message: "go"})
	callID := pendingCall(t, b.waitFor(t, b.host, sess.ID, api.KindApprovalRequested, 1))
	b.host.Close() // the first host goes away

	h2 := b.newHost(t)
	pending, _, _ := h2.Approvals().List(ctx, api.ApprovalPending, store.Page{})
	if len(pending) != 1 || pending[0].CallID != callID {
		t.Fatalf("after the restart: %+v", pending)
	}
	if _, err := h2.Approvals().Resolve(ctx, callID, host.Decision{Approved: true, By: "erin"}); err != nil {
		t.Fatal(err)
	}
	evs := b.waitFor(t, h2, sess.ID, api.KindTurnCompleted, 1)
	if f := find(evs, api.KindTurnCompleted); f[0].TurnID != turnID {
		t.Errorf("another turn completed: %s", kinds(evs))
	}
	if m := find(evs, api.KindMessage); !strings.Contains(string(m[len(m)-1].Data), "Done after restart.") {
		t.Errorf("events: %s", kinds(evs))
	}
	if len(find(evs, api.KindActionResult)) != 1 {
		t.Errorf("results: %s", kinds(evs))
	}
}

// An approved call whose host died while running it is not run again.
func TestInterruptedApprovedCall(t *testing.T) {
	b := setupApprovals(t, fakemodel.Reply{Calls: []fakemodel.Call{{ID: "p1", Name: "promote", Input: `{"service":"api","environment":"production"}`}}})
	ctx := context.Background()
	sess, _, _ := b.host.Sessions().Create(ctx, host.SessionOptions{Message: "go"})
	callID := pendingCall(t, b.waitFor(t, b.host, sess.ID, api.KindApprovalRequested, 1))
	b.host.Close()
	// Approved by a host that died before it recorded an outcome.
	if _, _, err := b.store.ResolveApproval(ctx, store.ResolveApprovalParams{CallID: callID, Approved: true, By: "frank", Executor: store.Lease{Holder: "dead", TTL: -time.Second}}); err != nil {
		t.Fatal(err)
	}
	h2 := b.newHost(t)
	evs := b.waitFor(t, h2, sess.ID, api.KindActionResult, 1)
	if r := find(evs, api.KindActionResult); !strings.Contains(string(r[0].Data), "interrupted by host restart; not retried") {
		t.Errorf("result: %s", r[0].Data)
	}
	ran := 0
	b.ran.Range(func(any, any) bool { ran++; return true })
	if ran != 0 {
		t.Errorf("the interrupted call ran again")
	}
}

// A decision that comes while the turn still runs its other calls: the turn
// parks, finds every result in, and goes on at once.
func TestDecisionBeforeTheTurnParks(t *testing.T) {
	b := setupApprovals(t,
		fakemodel.Reply{Calls: []fakemodel.Call{
			{ID: "p1", Name: "promote", Input: `{"service":"api","environment":"production"}`},
			{ID: "s1", Name: "slowok", Input: `{}`},
		}},
		fakemodel.Reply{Text: []string{"Both done."}},
	)
	ctx := context.Background()
	sess, turnID, _ := b.host.Sessions().Create(ctx, host.SessionOptions{Message: "go"})
	callID := pendingCall(t, b.waitFor(t, b.host, sess.ID, api.KindApprovalRequested, 1))
	if _, err := b.host.Approvals().Resolve(ctx, callID, host.Decision{Approved: true, By: "gina"}); err != nil {
		t.Fatal(err)
	}
	evs := b.waitTurn(t, sess.ID, turnID)
	if f := find(evs, api.KindTurnCompleted); len(f) != 1 || len(find(evs, api.KindActionResult)) != 2 {
		t.Fatalf("events: %s", kinds(evs))
	}
	if m := find(evs, api.KindMessage); !strings.Contains(string(m[len(m)-1].Data), "Both done.") {
		t.Errorf("events: %s", kinds(evs))
	}
}

package host

import (
	"cmp"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/pgtest"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/memory"
	"github.com/agentsdk/agentsdk/store/postgres"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// resumeDrivers are the stores the resumption is tested on: without jobs
// (the host's own sweep) and with them (the sweep in a transaction).
var resumeDrivers = []string{"memory", "sqlite", "postgres"}

// resumeBundle is three hosts on one store, A, B and C, with a fake model
// and a tool that blocks until released, counting its runs. When A dies,
// B and C race to resume its turns.
type resumeBundle struct {
	a, b, c *Host
	store   store.Store
	fake    *fakemodel.Server
	ran     atomic.Int32  // runs of "slow"
	started chan struct{} // a run of "slow" began
	release chan struct{} // closed: "slow" returns
	gated   atomic.Int32  // runs of "gated"
}

// setupResume starts A, B and C on a fresh store of driver with a fake model
// answering script.
func setupResume(t *testing.T, driver string, opts Options, script ...fakemodel.Reply) *resumeBundle {
	t.Helper()
	b := &resumeBundle{started: make(chan struct{}, 8), release: make(chan struct{})}
	b.fake = fakemodel.New(script...)
	t.Cleanup(b.fake.Close) // last: after the hosts, which end the requests they have open
	slow, _ := tool.New("slow", tool.Config{Description: "Takes a while."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
		b.ran.Add(1)
		b.started <- struct{}{}
		select {
		case <-b.release:
			return "finished", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	gated, _ := tool.New("gated", tool.Config{Description: "Needs a person's yes.", NeedsApproval: tool.Always}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
		b.gated.Add(1)
		return "gated done", nil
	})
	set, err := tool.NewSet(slow, gated)
	if err != nil {
		t.Fatal(err)
	}
	p, err := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: b.fake.AnthropicURL(), MaxTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = 600 * time.Millisecond
	}
	opts.Model = p
	stores := resumeStores(t, driver)
	b.store = stores[0]
	start := func(st store.Store) *Host {
		o := opts
		o.StateRoot, o.Store = t.TempDir(), st
		h, err := New(set, &o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		if err := h.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return h
	}
	b.a, b.b, b.c = start(stores[0]), start(stores[1]), start(stores[2])
	return b
}

// resumeStores opens three stores on one fresh database of driver (one
// store, thrice, for memory), as three hosts would.
func resumeStores(t *testing.T, driver string) [3]store.Store {
	t.Helper()
	if driver == "memory" {
		st := memory.New()
		return [3]store.Store{st, st, st}
	}
	where := filepath.Join(t.TempDir(), "agent.db")
	if driver == "postgres" {
		where = pgtest.Schema(t)
	}
	var out [3]store.Store
	for i := range out {
		var err error
		if driver == "sqlite" {
			out[i], err = sqlite.Open(context.Background(), where)
		} else {
			out[i], err = postgres.Open(context.Background(), where)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { out[i].Close() })
	}
	return out
}

// waitFor polls the session's stream (through B) until match holds.
func (b *resumeBundle) waitFor(t *testing.T, sessionID, what string, match func(api.Event) bool) []api.Event {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs, err := b.b.Sessions().Events(context.Background(), sessionID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if match(e) {
				return evs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s; events: %s", what, eventKinds(evs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ended waits for the turn's end.
func (b *resumeBundle) ended(t *testing.T, sessionID, turnID string) []api.Event {
	t.Helper()
	return b.waitFor(t, sessionID, "end of "+turnID, func(e api.Event) bool {
		return e.TurnID == turnID && (e.Kind == api.KindTurnCompleted || e.Kind == api.KindTurnFailed)
	})
}

func eventKinds(evs []api.Event) string {
	var k []string
	for _, e := range evs {
		k = append(k, string(e.Kind))
	}
	return strings.Join(k, " ")
}

func ofKind(evs []api.Event, kind api.Kind) []api.Event {
	var out []api.Event
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// resumedOnce checks the turn's one turn.resumed: attempt 1, from A.
func (b *resumeBundle) resumedOnce(t *testing.T, evs []api.Event) {
	t.Helper()
	r := ofKind(evs, api.KindTurnResumed)
	if len(r) != 1 {
		t.Fatalf("%d turn.resumed; events: %s", len(r), eventKinds(evs))
	}
	if got, _ := api.Decode[api.TurnResumed](r[0]); got != (api.TurnResumed{Attempt: 1, From: b.a.leases.home}) {
		t.Errorf("turn.resumed %+v, want attempt 1 from %s", got, b.a.leases.home)
	}
}

// A host dies (stops renewing its lease: A is paused, not gone) while a
// turn's tool runs: one of the other hosts resumes the turn, the running call's
// result is the interrupted one (the tool is not run again), the model
// reads it, and the turn completes; when A wakes, its late result is
// refused.
func TestResumeDuringTool(t *testing.T) {
	for _, driver := range resumeDrivers {
		t.Run(driver, func(t *testing.T) {
			b := setupResume(t, driver, Options{}, fakemodel.Reply{Calls: []fakemodel.Call{{ID: "m1", Name: "slow", Input: `{}`}}})
			sess, turnID, err := b.a.Sessions().Create(context.Background(), SessionOptions{Message: "go"})
			if err != nil {
				t.Fatal(err)
			}
			<-b.started
			b.a.leases.paused.Store(true) // A dies
			evs := b.ended(t, sess.ID, turnID)
			if end := evs[len(evs)-1]; end.Kind != api.KindTurnCompleted {
				t.Fatalf("the turn ended %s %s; events: %s", end.Kind, end.Data, eventKinds(evs))
			}
			b.resumedOnce(t, evs)
			results := ofKind(evs, api.KindActionResult)
			if len(results) != 1 {
				t.Fatalf("%d results; events: %s", len(results), eventKinds(evs))
			}
			if r, _ := api.Decode[api.ActionResult](results[0]); r.ModelCallID != "m1" || !r.IsError || !strings.Contains(string(r.Result), "interrupted by host restart; not retried") {
				t.Errorf("the running call's result: %+v", r)
			}
			reqs := b.fake.Requests()
			if len(reqs) != 2 || !strings.Contains(string(reqs[1]), "interrupted by host restart; not retried") {
				t.Errorf("%d model requests; the model should read the interruption: %s", len(reqs), reqs[len(reqs)-1])
			}
			// A wakes: its tool returns, and its result is refused.
			close(b.release)
			deadline := time.Now().Add(10 * time.Second)
			for b.a.leases.runs(sess.ID, turnID) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if b.a.leases.runs(sess.ID, turnID) {
				t.Error("A still runs the turn after its write was refused")
			}
			after, _ := b.b.Sessions().Events(context.Background(), sess.ID, 0, 0)
			if len(after) != len(evs) {
				t.Errorf("A wrote after the turn moved on: %s", eventKinds(after[len(evs):]))
			}
			if n := b.ran.Load(); n != 1 {
				t.Errorf("the tool ran %d times, want once", n)
			}
		})
	}
}

// A host dies while the model's answer streams: the answer's deltas stay
// on the stream, the answer is asked again by the host that resumes the
// turn, and only the new one is in the conversation.
func TestResumeDuringModelStream(t *testing.T) {
	for _, driver := range resumeDrivers {
		t.Run(driver, func(t *testing.T) {
			b := setupResume(t, driver, Options{}, fakemodel.Reply{Text: []string{"half an ", "answer"}, Every: time.Minute})
			sess, turnID, err := b.a.Sessions().Create(context.Background(), SessionOptions{Message: "go"})
			if err != nil {
				t.Fatal(err)
			}
			b.waitFor(t, sess.ID, "message.delta", func(e api.Event) bool { return e.Kind == api.KindMessageDelta })
			b.a.leases.paused.Store(true) // A dies
			evs := b.ended(t, sess.ID, turnID)
			if got := eventKinds(evs); !strings.HasSuffix(got, "message.delta turn.resumed workspace.moved message.delta message model.usage turn.completed") {
				t.Fatalf("events: %s", got)
			}
			b.resumedOnce(t, evs)
			var said []string
			for _, e := range ofKind(evs, api.KindMessage) {
				m, _ := api.Decode[api.Message](e)
				said = append(said, string(m.Role)+": "+m.Text)
			}
			if got := strings.Join(said, " | "); got != "user: go | assistant: done" {
				t.Errorf("the conversation: %s", got)
			}
			reqs := b.fake.Requests()
			if len(reqs) != 2 || strings.Contains(string(reqs[1]), "half an") {
				t.Errorf("%d requests; the second should not hold the lost answer: %s", len(reqs), reqs[len(reqs)-1])
			}
		})
	}
}

// A host dies while a turn runs one call and another waits for approval:
// the running one is answered as interrupted, the parked one stays
// parked, the turn parks, and it goes on once the call is approved.
func TestResumeKeepsParkedCalls(t *testing.T) {
	b := setupResume(t, "sqlite", Options{}, fakemodel.Reply{Calls: []fakemodel.Call{
		{ID: "m1", Name: "gated", Input: `{}`}, {ID: "m2", Name: "slow", Input: `{}`}}})
	sess, turnID, err := b.a.Sessions().Create(context.Background(), SessionOptions{Message: "go"})
	if err != nil {
		t.Fatal(err)
	}
	<-b.started
	evs := b.waitFor(t, sess.ID, "the approval request", func(e api.Event) bool { return e.Kind == api.KindApprovalRequested })
	req, _ := api.Decode[api.ApprovalRequested](ofKind(evs, api.KindApprovalRequested)[0])
	b.a.leases.paused.Store(true) // A dies
	b.waitFor(t, sess.ID, "turn.resumed", func(e api.Event) bool { return e.Kind == api.KindTurnResumed })
	deadline := time.Now().Add(10 * time.Second)
	for {
		parked, err := b.store.ParkedTurns(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(parked) == 1 && parked[0].ID == turnID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the resumed turn did not park for its approval: %+v", parked)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := b.b.Approvals().Resolve(context.Background(), req.CallID, Decision{Approved: true, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	evs = b.ended(t, sess.ID, turnID)
	if end := evs[len(evs)-1]; end.Kind != api.KindTurnCompleted {
		t.Fatalf("the turn ended %s; events: %s", end.Kind, eventKinds(evs))
	}
	b.resumedOnce(t, evs)
	if g, s := b.gated.Load(), b.ran.Load(); g != 1 || s != 1 {
		t.Errorf("gated ran %d times, slow %d: want once each", g, s)
	}
	if reqs := b.fake.Requests(); len(reqs) != 2 || !strings.Contains(string(reqs[1]), "gated done") || !strings.Contains(string(reqs[1]), "not retried") {
		t.Errorf("the model's second request should carry both results: %s", reqs[len(reqs)-1])
	}
}

// Dead turns written straight into the store, as a host that died would
// have left them, and what the sweep of a fresh host makes of each.
func TestDeadTurns(t *testing.T) {
	ev := func(p api.Payload) api.Event { e := api.NewEvent(p); e.TurnID = "turn_dead"; return e }
	running := ev(api.ActionsRequested{Actions: []api.Action{{CallID: "c1", ModelCallID: "m1", Tool: "slow", Input: json.RawMessage(`{}`)}}})
	tests := []struct {
		name       string
		kind       api.TurnKind
		channel    string // the session's; default http
		maxResumes int
		events     []api.Event
		want       string // the kinds the turn ends with
		code       api.FailureCode
		reason     string // in turn.failed's reason
		requests   int    // model calls after the resumption
	}{
		{name: "resumed", kind: api.TurnModel, events: []api.Event{running},
			want: "action.result turn.resumed workspace.moved message.delta message model.usage turn.completed", requests: 1},
		{name: "past maxResumes", kind: api.TurnModel, maxResumes: 1,
			events: []api.Event{ev(api.TurnResumed{Attempt: 1, From: "elsewhere"}), running},
			want:   "action.result turn.failed", code: api.FailureResumeLimit, reason: "its host died 2 times while it ran; maxResumes is 1"},
		{name: "never resumed", kind: api.TurnModel, maxResumes: -1, events: []api.Event{running},
			want: "action.result turn.failed", code: api.FailureInterrupted, reason: reasonRestart},
		{name: "answered", kind: api.TurnModel,
			events: []api.Event{ev(api.Message{Role: api.RoleAssistant, Text: "all done"}), ev(api.ModelUsage{Model: "fake"})},
			want:   "message model.usage turn.resumed workspace.moved turn.completed"},
		{name: "eval case", kind: api.TurnModel, channel: EvalChannel, events: []api.Event{running},
			want: "action.result turn.failed", code: api.FailureInterrupted, reason: reasonRestart},
		{name: "direct call", kind: api.TurnCall, events: []api.Event{},
			want: "turn.started turn.failed", code: api.FailureInterrupted, reason: reasonRestart},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := memory.New()
			ctx := context.Background()
			if _, err := st.CreateSession(ctx, api.Session{ID: "s", Channel: cmp.Or(tt.channel, "http"), Mode: api.ModeLocal}); err != nil {
				t.Fatal(err)
			}
			start := []api.Event{ev(api.TurnStarted{Kind: tt.kind})}
			if tt.kind == api.TurnModel {
				start = append(start, ev(api.Message{Role: api.RoleUser, Text: "go"}))
			}
			if _, _, err := st.BeginTurn(ctx, store.BeginTurnParams{Turn: api.Turn{SessionID: "s", ID: "turn_dead", Kind: tt.kind},
				Lease: store.Lease{Holder: "dead", TTL: -time.Second, Home: "elsewhere"}, Events: append(start, tt.events...)}); err != nil {
				t.Fatal(err)
			}
			fake := fakemodel.New()
			t.Cleanup(fake.Close)
			p, _ := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: fake.AnthropicURL(), MaxTokens: 100})
			set, _ := tool.NewSet()
			h, err := New(set, &Options{StateRoot: t.TempDir(), Store: st, Model: p, MaxResumes: tt.maxResumes, LeaseTTL: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { h.Close() })
			if err := h.Start(ctx); err != nil {
				t.Fatal(err)
			}
			var evs []api.Event
			deadline := time.Now().Add(10 * time.Second)
			for {
				evs, _ = st.Events(ctx, "s", 0, 0)
				if k := evs[len(evs)-1].Kind; k == api.KindTurnCompleted || k == api.KindTurnFailed {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the dead turn did not end: %s", eventKinds(evs))
				}
				time.Sleep(10 * time.Millisecond)
			}
			if got := eventKinds(evs); !strings.HasSuffix(got, tt.want) {
				t.Errorf("events %s, want them to end %s", got, tt.want)
			}
			if tt.code != "" {
				f, _ := api.Decode[api.TurnFailed](evs[len(evs)-1])
				if f.Code != tt.code || f.Reason != tt.reason {
					t.Errorf("turn.failed %+v, want %s %q", f, tt.code, tt.reason)
				}
			}
			if r := ofKind(evs, api.KindActionResult); len(r) == 1 && !strings.Contains(string(r[0].Data), "interrupted by host restart; not retried") {
				t.Errorf("the running call's result: %s", r[0].Data)
			}
			if n := len(fake.Requests()); n != tt.requests {
				t.Errorf("%d model requests, want %d", n, tt.requests)
			}
			if sess, _ := st.Session(ctx, "s"); sess.RunningTurn != "" {
				t.Errorf("the session still runs %s", sess.RunningTurn)
			}
		})
	}
}

package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/agentsdk/agentsdk/model/gemini"
	"github.com/agentsdk/agentsdk/model/openai"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

type weatherInput struct {
	City string `json:"city"`
}

// sessionTools are the tools model turns call in these tests.
func sessionTools(t *testing.T) *tool.Set {
	t.Helper()
	weather, _ := tool.New("weather", tool.Config{Description: "Weather in a city."},
		func(ctx context.Context, call *tool.Call, in weatherInput) (any, error) {
			return map[string]any{"city": in.City, "sky": "clear"}, nil
		})
	broken, _ := tool.New("broken", tool.Config{Description: "Always fails."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			return nil, errors.New("the weather service is down")
		})
	where, _ := tool.New("where", tool.Config{Description: "Where the call runs."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			dir, err := call.WorkspaceDir()
			return map[string]string{"dir": dir, "session": call.Session.ID}, err
		})
	slow, _ := tool.New("slow", tool.Config{Description: "Takes a while."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			select {
			case <-time.After(30 * time.Millisecond):
				return "slept", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	echo, _ := tool.NewScript("echo", tool.Config{Description: "Echo stdin."}, "#!/bin/sh\ncat\n")
	set, err := tool.NewSet(weather, broken, where, slow, echo)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

type sessionBundle struct {
	host  *host.Host
	store store.Store
	fake  *fakemodel.Server
	state string
}

func setupSessions(t *testing.T, provider string, opts host.Options, script ...fakemodel.Reply) *sessionBundle {
	t.Helper()
	b := &sessionBundle{state: t.TempDir(), fake: fakemodel.New(script...)}
	t.Cleanup(b.fake.Close)
	st, err := sqlite.Open(context.Background(), filepath.Join(b.state, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	b.store = st
	var p model.Provider
	switch provider {
	case "anthropic":
		p, err = anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: b.fake.AnthropicURL(), MaxTokens: 100})
	case "openai":
		p, err = openai.New(model.Config{Name: "fake", APIKey: "k", BaseURL: b.fake.OpenAIURL(), MaxTokens: 100})
	case "gemini":
		p, err = gemini.New(model.Config{Name: "gemini-2.5-flash", APIKey: "k", BaseURL: b.fake.GeminiURL(), MaxTokens: 100})
	case "gemini-3": // refuses a request that drops a call's thought signature
		p, err = gemini.New(model.Config{Name: "gemini-3-flash-preview", APIKey: "k", BaseURL: b.fake.GeminiURL(), MaxTokens: 100})
	}
	if err != nil {
		t.Fatal(err)
	}
	opts.StateRoot, opts.Store = b.state, st
	if provider != "" {
		opts.Model = p
	}
	b.host, err = host.New(sessionTools(t), &opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.host.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.host.Close(); st.Close() })
	return b
}

// waitTurn waits for the turn's final event and returns all the session's
// events.
func (b *sessionBundle) waitTurn(t *testing.T, sessionID, turnID string) []api.Event {
	t.Helper()
	return b.followUntil(t, sessionID, "turn "+turnID+" did not end", func(e api.Event) bool {
		return e.TurnID == turnID && (e.Kind == api.KindTurnCompleted || e.Kind == api.KindTurnFailed)
	})
}

// followUntil follows the session's stream from its start until stop
// says so (within 30 s, else the test fails saying what), and returns the
// events up to there.
func (b *sessionBundle) followUntil(t *testing.T, sessionID, what string, stop func(api.Event) bool) []api.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var evs []api.Event
	for e, err := range b.host.Sessions().Follow(ctx, sessionID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
		if stop(e) {
			return evs
		}
	}
	t.Fatalf("%s; events: %s", what, kinds(evs))
	return nil
}

func kinds(evs []api.Event) string {
	var k []string
	for _, e := range evs {
		k = append(k, string(e.Kind))
	}
	return strings.Join(k, " ")
}

func find(evs []api.Event, kind api.Kind) []api.Event {
	var out []api.Event
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

func TestModelTurn(t *testing.T) {
	for _, provider := range []string{"anthropic", "openai"} {
		t.Run(provider, func(t *testing.T) {
			b := setupSessions(t, provider, host.Options{},
				fakemodel.Reply{Text: []string{"Let me ", "check."}, Calls: []fakemodel.Call{
					{ID: "c1", Name: "weather", Input: `{"city":"Oslo"}`},
					{ID: "c2", Name: "weather", Input: `{"city":"Lima"}`},
				}},
				fakemodel.Reply{Calls: []fakemodel.Call{{ID: "c3", Name: "broken", Input: `{}`}}},
				fakemodel.Reply{Calls: []fakemodel.Call{{ID: "c4", Name: "weather", Input: `{"city":`}}},
				fakemodel.Reply{Text: []string{"Clear in ", "both."}},
			)
			ctx := context.Background()
			sess, turnID, err := b.host.Sessions().Create(ctx, host.SessionOptions{Message: "Weather in Oslo and Lima?", Principal: "tester"})
			if err != nil {
				t.Fatal(err)
			}
			evs := b.waitTurn(t, sess.ID, turnID)
			want := "session.created turn.started message message.delta message.delta message model.usage actions.requested action.result action.result " +
				"model.usage actions.requested action.result model.usage actions.requested action.result message.delta message.delta message model.usage turn.completed"
			if got := kinds(evs); got != want {
				t.Fatalf("events:\n%s\nwant:\n%s", got, want)
			}
			for i, e := range evs {
				if e.Seq != int64(i+1) {
					t.Errorf("event %d has seq %d", i, e.Seq)
				}
			}
			results := find(evs, api.KindActionResult)
			var r []map[string]any
			for _, e := range results {
				var m map[string]any
				json.Unmarshal(e.Data, &m)
				r = append(r, m)
			}
			if r[0]["isError"] != false || r[1]["isError"] != false || !strings.HasPrefix(r[0]["callId"].(string), "tool_weather_") {
				t.Errorf("parallel results: %v", r[:2])
			}
			if r[2]["isError"] != true || r[2]["result"] != "the weather service is down" {
				t.Errorf("tool error: %v", r[2])
			}
			if r[3]["isError"] != true || !strings.Contains(r[3]["result"].(string), "input: is not valid JSON") {
				t.Errorf("malformed input: %v", r[3])
			}
			if last := find(evs, api.KindMessage); len(last) != 3 || !strings.Contains(string(last[2].Data), `"text":"Clear in both."`) {
				t.Errorf("messages: %v", last)
			}
			// The model saw every result: the tool error and the validation
			// error reached it as text it can read.
			reqs := b.fake.Requests()
			if len(reqs) != 4 {
				t.Fatalf("%d model requests, want 4", len(reqs))
			}
			for _, want := range []string{`Oslo`, `clear`, `Lima`, `the weather service is down`, `is not valid JSON`, `Weather in Oslo and Lima?`} {
				if !strings.Contains(string(reqs[3]), want) {
					t.Errorf("the last request lacks %q:\n%s", want, reqs[3])
				}
			}
			// A second message continues the same conversation.
			b.fake.Push(fakemodel.Reply{Text: []string{"You're welcome."}})
			turn2, err := b.host.Sessions().Send(ctx, sess.ID, "Thanks!")
			if err != nil {
				t.Fatal(err)
			}
			evs = b.waitTurn(t, sess.ID, turn2)
			if !strings.HasSuffix(kinds(evs), "turn.started message message.delta message model.usage turn.completed") {
				t.Errorf("second turn: %s", kinds(evs))
			}
			if reqs := b.fake.Requests(); !strings.Contains(string(reqs[4]), "Clear in both.") || !strings.Contains(string(reqs[4]), "Thanks!") {
				t.Errorf("the second turn's request lacks the history:\n%s", reqs[4])
			}
		})
	}
}

func TestTurnFailures(t *testing.T) {
	tests := []struct {
		name   string
		opts   host.Options
		model  string
		script []fakemodel.Reply
		reason string
	}{
		{"provider 500", host.Options{ModelRetries: -1}, "anthropic", []fakemodel.Reply{{Status: 500}}, "overloaded (500)"},
		{"provider 500 (openai)", host.Options{ModelRetries: -1}, "openai", []fakemodel.Reply{{Status: 500}}, "overloaded (500)"},
		{"timeout", host.Options{ModelTimeout: 300 * time.Millisecond}, "anthropic", []fakemodel.Reply{{Hang: 10 * time.Second}, {Hang: 10 * time.Second}}, "did not answer within 300ms"},
		{"step limit", host.Options{MaxSteps: 2}, "openai", []fakemodel.Reply{
			{Calls: []fakemodel.Call{{ID: "a", Name: "weather", Input: `{"city":"x"}`}}},
			{Calls: []fakemodel.Call{{ID: "b", Name: "weather", Input: `{"city":"y"}`}}},
		}, "step limit reached"},
		{"no model", host.Options{}, "", nil, "no model is configured"},
		{"unknown tool", host.Options{MaxSteps: 1}, "anthropic", []fakemodel.Reply{{Calls: []fakemodel.Call{{ID: "a", Name: "nope", Input: `{}`}}}}, "step limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setupSessions(t, tt.model, tt.opts, tt.script...)
			sess, turnID, err := b.host.Sessions().Create(context.Background(), host.SessionOptions{Message: "go"})
			if err != nil {
				t.Fatal(err)
			}
			evs := b.waitTurn(t, sess.ID, turnID)
			failed := find(evs, api.KindTurnFailed)
			if len(failed) != 1 || !strings.Contains(string(failed[0].Data), tt.reason) {
				t.Fatalf("events %s; turn.failed %v, want reason with %q", kinds(evs), failed, tt.reason)
			}
			if tt.name == "unknown tool" {
				if r := find(evs, api.KindActionResult); len(r) != 1 || !strings.Contains(string(r[0].Data), `unknown tool \"nope\" (available: broken, echo, slow, weather, where)`) {
					t.Errorf("unknown tool result: %v", r)
				}
			}
			// The session takes new turns after a failure.
			b.fake.SetDefault(fakemodel.Reply{Text: []string{"ok"}})
			if tt.model != "" {
				turn2, err := b.host.Sessions().Send(context.Background(), sess.ID, "again")
				if err != nil {
					t.Fatal(err)
				}
				b.waitTurn(t, sess.ID, turn2)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	b := setupSessions(t, "anthropic", host.Options{}, fakemodel.Reply{Hang: time.Minute})
	ctx := context.Background()
	sess, turnID, err := b.host.Sessions().Create(ctx, host.SessionOptions{Message: "wait"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.host.Sessions().Send(ctx, sess.ID, "another"); !errors.Is(err, api.ErrSessionBusy) {
		t.Errorf("Send during a turn: %v", err)
	}
	if err := b.host.Sessions().Cancel(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	evs := b.waitTurn(t, sess.ID, turnID)
	if f := find(evs, api.KindTurnFailed); len(f) != 1 || !strings.Contains(string(f[0].Data), `"reason":"cancelled"`) {
		t.Errorf("events %s: %v", kinds(evs), f)
	}
	if err := b.host.Sessions().Cancel(ctx, sess.ID); !errors.Is(err, api.ErrNoRunningTurn) {
		t.Errorf("Cancel with nothing running: %v", err)
	}
}

func TestSessionBoundCall(t *testing.T) {
	b := setupSessions(t, "", host.Options{})
	ctx := context.Background()
	sess, _, err := b.host.Sessions().Create(ctx, host.SessionOptions{Channel: "http", Principal: "p"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := b.host.CallTool(ctx, "where", nil, &host.CallOptions{SessionID: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]string
	json.Unmarshal(out.Result, &res)
	if res["dir"] != b.host.Sessions().WorkspaceDir(sess.ID) || res["session"] != sess.ID {
		t.Errorf("the call ran in %v, want the session's workspace %s", res, b.host.Sessions().WorkspaceDir(sess.ID))
	}
	evs, _ := b.host.Sessions().Events(ctx, sess.ID, 0, 0)
	if got := kinds(evs); got != "session.created turn.started action.result turn.completed" {
		t.Fatalf("events: %s", got)
	}
	if evs[1].TurnID == "" || evs[1].TurnID != evs[2].TurnID || evs[2].TurnID != evs[3].TurnID {
		t.Errorf("the call's events are not under one turn id: %+v", evs)
	}
	if !strings.Contains(string(evs[2].Data), `"callId":"`+out.CallID+`"`) {
		t.Errorf("action.result: %s", evs[2].Data)
	}
	if _, err := b.host.CallTool(ctx, "where", nil, &host.CallOptions{SessionID: "sess_nope"}); !errors.Is(err, api.ErrSessionNotFound) {
		t.Errorf("unknown session: %v", err)
	}
	// The agent tool is on disk in the session's workspace.
	if _, err := b.host.CallTool(ctx, "echo", nil, &host.CallOptions{SessionID: sess.ID}); err == nil {
		t.Error("an agent tool cannot be called directly, in a session or not")
	}
}

// 50 calls at once on one session: the ones that did not overlap ran, the
// rest were refused as busy, and no two turns interleave on the stream.
func TestBusySession(t *testing.T) {
	b := setupSessions(t, "", host.Options{})
	ctx := context.Background()
	sess, _, _ := b.host.Sessions().Create(ctx, host.SessionOptions{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ran, busy := 0, 0
	for range 50 {
		wg.Go(func() {
			_, err := b.host.CallTool(ctx, "slow", nil, &host.CallOptions{SessionID: sess.ID})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ran++
			case errors.Is(err, api.ErrSessionBusy):
				busy++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if ran < 1 || ran+busy != 50 || busy == 0 {
		t.Fatalf("ran %d, busy %d", ran, busy)
	}
	evs, _ := b.host.Sessions().Events(ctx, sess.ID, 0, 0)
	if len(evs) != 1+3*ran {
		t.Fatalf("%d events for %d calls", len(evs), ran)
	}
	for i := 1; i < len(evs); i += 3 {
		a, r, c := evs[i], evs[i+1], evs[i+2]
		if a.Kind != "turn.started" || r.Kind != "action.result" || c.Kind != "turn.completed" || a.TurnID != r.TurnID || r.TurnID != c.TurnID {
			t.Fatalf("interleaved turns at %d: %s/%s, %s/%s, %s/%s", i, a.Kind, a.TurnID, r.Kind, r.TurnID, c.Kind, c.TurnID)
		}
	}
}

// A turn whose host died (its lease expired) is closed by the next host
// when it resumes none (MaxResumes negative), with a result for each call
// the dead host was running.
func TestInterruptedTurnIsClosed(t *testing.T) {
	b := setupSessions(t, "", host.Options{LeaseTTL: 300 * time.Millisecond, MaxResumes: -1})
	ctx := context.Background()
	sess, _, _ := b.host.Sessions().Create(ctx, host.SessionOptions{})
	// Another host began a turn, ran one of three calls, parked another,
	// and died running the third: its lease is already over.
	ev := func(p api.Payload) api.Event { e := api.NewEvent(p); e.TurnID = "turn_dead"; return e }
	if _, _, err := b.store.BeginTurn(ctx, store.BeginTurnParams{Turn: api.Turn{SessionID: sess.ID, ID: "turn_dead", Kind: api.TurnModel},
		Lease: store.Lease{Holder: "dead", TTL: -time.Second}, Events: []api.Event{
			ev(api.TurnStarted{Kind: api.TurnModel}),
			ev(api.ActionsRequested{Actions: []api.Action{{CallID: "c_done", ModelCallID: "m1", Tool: "slow"}, {CallID: "c_parked", ModelCallID: "m2", Tool: "slow"},
				{CallID: "c_running", ModelCallID: "m3", Tool: "slow"}}}),
			ev(api.ActionResult{CallID: "c_done", ModelCallID: "m1", Tool: "slow", Result: json.RawMessage(`{}`)}),
			ev(api.ApprovalRequested{CallID: "c_parked", ModelCallID: "m2", Tool: "slow"}),
		}}); err != nil {
		t.Fatal(err)
	}
	evs := b.waitTurn(t, sess.ID, "turn_dead")
	if f := find(evs, api.KindTurnFailed); len(f) != 1 || !strings.Contains(string(f[0].Data), "interrupted by host restart") {
		t.Errorf("events %s", kinds(evs))
	}
	results := find(evs, api.KindActionResult)
	if got := kinds(evs[len(evs)-2:]); len(results) != 2 || got != "action.result turn.failed" {
		t.Fatalf("the dead turn ends with %s; want the running call's result, then turn.failed", kinds(evs))
	}
	r, _ := api.Decode[api.ActionResult](results[1])
	if r.CallID != "c_running" || r.ModelCallID != "m3" || !r.IsError || !strings.Contains(string(r.Result), "interrupted by host restart; not retried") {
		t.Errorf("the running call's result: %+v", r)
	}
	if _, err := b.host.CallTool(ctx, "slow", nil, &host.CallOptions{SessionID: sess.ID}); err != nil {
		t.Errorf("the session should take turns again: %v", err)
	}
}

func TestSessionsList(t *testing.T) {
	b := setupSessions(t, "", host.Options{})
	ctx := context.Background()
	for range 3 {
		b.host.Sessions().Create(ctx, host.SessionOptions{})
	}
	page, next, err := b.host.Sessions().List(ctx, store.Page{Limit: 2})
	if err != nil || len(page) != 2 || next == "" {
		t.Fatalf("%v %q %v", page, next, err)
	}
	rest, next, _ := b.host.Sessions().List(ctx, store.Page{Limit: 2, Cursor: next})
	if len(rest) != 1 || next != "" {
		t.Errorf("second page %v %q", rest, next)
	}
	if _, _, err := b.host.Sessions().Create(ctx, host.SessionOptions{Channel: "bad channel"}); err == nil {
		t.Error("a bad channel name should be refused")
	}
	// Without a store given, a host keeps its sessions in memory.
	inMemory, _ := host.New(sessionTools(t), &host.Options{StateRoot: t.TempDir()})
	sess, _, err := inMemory.Sessions().Create(ctx, host.SessionOptions{})
	if err != nil {
		t.Fatalf("without a store: %v", err)
	}
	if got, err := inMemory.Sessions().Get(ctx, sess.ID); err != nil || got.ID != sess.ID {
		t.Errorf("without a store: %+v, %v", got, err)
	}
}

// Options.MaxTokens reaches the provider's request (the provider's own
// configured 100 is only its fallback); zero means model.MaxTokensDefault.
func TestMaxTokensReachesTheProvider(t *testing.T) {
	for _, provider := range []string{"anthropic", "openai"} {
		for _, tt := range []struct {
			opt, want int
		}{{321, 321}, {0, model.MaxTokensDefault}} {
			t.Run(fmt.Sprintf("%s/%d", provider, tt.opt), func(t *testing.T) {
				b := setupSessions(t, provider, host.Options{MaxTokens: tt.opt}, fakemodel.Reply{Text: []string{"ok"}})
				sess, turnID, err := b.host.Sessions().Create(context.Background(), host.SessionOptions{Message: "hi"})
				if err != nil {
					t.Fatal(err)
				}
				b.waitTurn(t, sess.ID, turnID)
				reqs := b.fake.Requests()
				if len(reqs) != 1 {
					t.Fatalf("%d requests", len(reqs))
				}
				var body map[string]any
				json.Unmarshal(reqs[0], &body)
				got := body["max_tokens"]
				if got == nil {
					got = body["max_completion_tokens"]
				}
				if got != float64(tt.want) {
					t.Errorf("the request's max tokens = %v, want %d: %s", got, tt.want, reqs[0])
				}
			})
		}
	}
}

package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/internal/harnesstest"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// harnessServer serves an agent with a word_count and a gated deploy
// tool, whose sessions may run on the harness spec.
type harnessServer struct {
	*sessionServer
	h        *host.Host
	deployed atomic.Int32
}

func setupHarnessServer(t *testing.T, fake *fakemodel.Server, spec harness.Spec) *harnessServer {
	t.Helper()
	hs := &harnessServer{}
	wc, _ := tool.New("word_count", tool.Config{Description: "Counts words."}, func(ctx context.Context, call *tool.Call, in struct {
		Text string `json:"text"`
	}) (int, error) {
		return len(strings.Fields(in.Text)), nil
	})
	deploy, _ := tool.New("deploy", tool.Config{Description: "Deploys.", NeedsApproval: tool.Always}, func(ctx context.Context, call *tool.Call, in struct {
		Env string `json:"env"`
	}) (string, error) {
		hs.deployed.Add(1)
		return "deployed to " + in.Env, nil
	})
	set, _ := tool.NewSet(wc, deploy)
	state := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(state, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: fake.AnthropicURL(), MaxTokens: 10})
	h, err := host.New(set, &host.Options{StateRoot: state, Store: st, Model: p, Harnesses: map[string]harness.Spec{spec.Name: spec}})
	if err != nil {
		t.Fatal(err)
	}
	h.Start(context.Background())
	srv, _ := serve.New(h, &serve.Options{Slug: "agent", Token: testToken, ApprovalWait: -1})
	// Served as a program embedding the SDK serves it: ListenAndServe gives
	// the harness turns the MCP endpoint by itself.
	ctx, stop := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() {
		served <- serve.ListenAndServe(ctx, "127.0.0.1:0", srv, &serve.ListenOptions{OnListen: func(a net.Addr) { addr <- a }})
	}()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a.String()
	case err := <-served:
		t.Fatalf("serving: %v", err)
	}
	t.Cleanup(func() { stop(); <-served; h.Close(); st.Close() })
	hs.sessionServer = &sessionServer{url: url + "/agent/v1", fake: fake, srv: srv}
	hs.h = h
	return hs
}

// events reads a session's stream.
func (hs *harnessServer) events(t *testing.T, id string) []api.Event {
	t.Helper()
	evs, err := hs.h.Sessions().Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// waitFor waits until the session's stream has an event of kind for which
// ok holds, and returns it.
func (hs *harnessServer) waitFor(t *testing.T, id string, kind api.Kind, ok func(api.Event) bool) api.Event {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, e := range hs.events(t, id) {
			if (kind == "" || e.Kind == kind) && (ok == nil || ok(e)) {
				return e
			}
		}
	}
	var last []string
	evs := hs.events(t, id)
	for _, e := range evs[max(0, len(evs)-4):] {
		last = append(last, string(e.Kind)+" "+string(e.Data))
	}
	t.Fatalf("no %s in %s; the last events:\n%s", kind, eventKinds(evs), strings.Join(last, "\n"))
	return api.Event{}
}

func eventKinds(evs []api.Event) string {
	var ks []string
	for _, e := range evs {
		ks = append(ks, string(e.Kind))
	}
	return strings.Join(ks, " ")
}

// turnEnd waits for the turn's end event.
func (hs *harnessServer) turnEnd(t *testing.T, id, turn string) api.Event {
	return hs.waitFor(t, id, "", func(e api.Event) bool {
		return e.TurnID == turn && (e.Kind == api.KindTurnCompleted || e.Kind == api.KindTurnFailed)
	})
}

// Claude Code calls the agent's server tools over the host's MCP
// endpoint: each call is on the stream once, its result goes back to the
// model, and a gated one parks until it is approved over HTTP.
func TestHarnessServerTools(t *testing.T) {
	for _, c := range []struct {
		name string
		spec func(testing.TB, *fakemodel.Server) harness.Spec
		// call is the fake's call of the agent's MCP tool, as the
		// harness offers it to the model.
		call func(id, tool, input string) fakemodel.Call
		// ids says whether the harness sends its call id with the MCP
		// call (Claude's _meta).
		ids bool
	}{
		{harness.ClaudeCode, harnesstest.Claude, func(id, tool, in string) fakemodel.Call {
			return fakemodel.Call{ID: id, Name: "mcp__agent__" + tool, Input: in}
		}, true},
		{harness.Codex, harnesstest.Codex, func(id, tool, in string) fakemodel.Call {
			return fakemodel.Call{ID: id, Namespace: "mcp__agent", Name: tool, Input: in}
		}, false},
		{harness.Gemini, harnesstest.Gemini, func(id, tool, in string) fakemodel.Call {
			return fakemodel.Call{ID: id, Name: "mcp_agent_" + tool, Input: in}
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			testHarnessServerTools(t, c.name, c.spec, c.call, c.ids)
		})
	}
}

func testHarnessServerTools(t *testing.T, runtime string, spec func(testing.TB, *fakemodel.Server) harness.Spec, call func(id, tool, input string) fakemodel.Call, ids bool) {
	fake := fakemodel.New()
	t.Cleanup(fake.Close)
	hs := setupHarnessServer(t, fake, spec(t, fake))
	fake.SetDefault(fakemodel.Reply{Text: []string{"done"}})
	fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{call("toolu_wc", "word_count", `{"text":"one two three"}`)}})
	if status, body := hs.call(t, "POST", "/session", `{"message":"count","runtime":"claude-cod"}`); status != 400 || body["error"].(map[string]any)["code"] != "unknown_runtime" {
		t.Fatalf("an unknown runtime: %d %v", status, body)
	}
	status, body := hs.call(t, "POST", "/session", `{"message":"count","runtime":"`+runtime+`"}`)
	if status != 201 {
		t.Fatalf("create: %d %v", status, body)
	}
	sess, err := hs.h.Sessions().Get(context.Background(), body["sessionId"].(string))
	turn := body["turnId"].(string)
	if err != nil || sess.Runtime != runtime {
		t.Fatalf("session %+v, %v", sess, err)
	}
	if end := hs.turnEnd(t, sess.ID, turn); end.Kind != api.KindTurnCompleted {
		t.Fatalf("turn ended %s: %s", end.Kind, end.Data)
	}
	evs := hs.events(t, sess.ID)
	var requested, results []string
	for _, e := range evs {
		switch e.Kind {
		case api.KindActionsRequested:
			a, _ := api.Decode[api.ActionsRequested](e)
			for _, x := range a.Actions {
				requested = append(requested, x.Tool+"/"+x.ModelCallID)
			}
		case api.KindActionResult:
			r, _ := api.Decode[api.ActionResult](e)
			results = append(results, r.Tool+"="+string(r.Result))
		}
	}
	want := "word_count/"
	if ids {
		want += "toolu_wc"
	}
	if strings.Join(requested, ",") != want || strings.Join(results, ",") != "word_count=3" {
		t.Fatalf("requested %v, results %v: %s", requested, results, eventKinds(evs))
	}
	var told bool
	for _, r := range fake.LastToolResults() {
		told = told || (r.CallID == "toolu_wc" || strings.Contains(r.Name, "word_count")) && strings.Contains(r.Output, "3")
	}
	if !told {
		t.Errorf("the model did not get the result: %+v", fake.LastToolResults())
	}

	fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{call("toolu_dep", "deploy", `{"env":"prod"}`)}})
	turn, err = hs.h.Sessions().Send(context.Background(), sess.ID, "deploy")
	if err != nil {
		t.Fatal(err)
	}
	e := hs.waitFor(t, sess.ID, api.KindApprovalRequested, func(e api.Event) bool { return e.TurnID == turn })
	parked, _ := api.Decode[api.ApprovalRequested](e)
	if parked.Tool != "deploy" || hs.deployed.Load() != 0 {
		t.Fatalf("parked %+v, deployed %d", parked, hs.deployed.Load())
	}
	if status, body := hs.call(t, "POST", "/session/"+sess.ID+"/approvals/"+parked.CallID, `{"approved":true}`); status != 200 {
		t.Fatalf("approve: %d %v", status, body)
	}
	if end := hs.turnEnd(t, sess.ID, turn); end.Kind != api.KindTurnCompleted {
		t.Fatalf("turn ended %s: %s", end.Kind, end.Data)
	}
	if hs.deployed.Load() != 1 {
		t.Fatalf("deployed %d times", hs.deployed.Load())
	}
	var n int
	for _, e := range hs.events(t, sess.ID) {
		if r, err := api.Decode[api.ActionResult](e); err == nil && r.CallID == parked.CallID {
			n++
			var s string
			if json.Unmarshal(r.Result, &s); s != "deployed to prod" {
				t.Errorf("result %s", r.Result)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d results of the deploy", n)
	}

	// An input the tool's schema refuses is recorded as a refused call,
	// and the harness is told the violation; a call the session's hooks
	// answer (an eval's stub) does not run and is marked stubbed.
	release := hs.h.HookSession(sess.ID, host.SessionHooks{Call: func(_ context.Context, c host.HookedCall) (tool.Output, bool) {
		return tool.Output{Result: json.RawMessage(`42`)}, c.Tool.Name() == "word_count"
	}})
	defer release()
	fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{call("toolu_bad", "word_count", `{"text":3}`)}},
		fakemodel.Reply{Calls: []fakemodel.Call{call("toolu_stub", "word_count", `{"text":"a b"}`)}})
	turn, err = hs.h.Sessions().Send(context.Background(), sess.ID, "count again")
	if err != nil {
		t.Fatal(err)
	}
	if end := hs.turnEnd(t, sess.ID, turn); end.Kind != api.KindTurnCompleted {
		t.Fatalf("turn ended %s: %s", end.Kind, end.Data)
	}
	var got []string
	for _, e := range hs.events(t, sess.ID) {
		if r, err := api.Decode[api.ActionResult](e); err == nil && e.TurnID == turn && e.Kind == api.KindActionResult {
			got = append(got, fmt.Sprintf("%s error=%v stubbed=%v %s", r.Tool, r.IsError, r.Stubbed, r.Result))
		}
	}
	// Gemini CLI checks the input against the schema itself: the refused
	// call never reaches the host, and Gemini tells its model.
	refused := runtime != harness.Gemini
	if refused && (len(got) != 2 || !strings.HasPrefix(got[0], "word_count error=true stubbed=false") || !strings.Contains(got[0], "text")) ||
		!refused && len(got) != 1 || got[len(got)-1] != "word_count error=false stubbed=true 42" {
		t.Errorf("the turn's results:\n%s", strings.Join(got, "\n"))
	}
	told = false
	for n := range fake.Requests() {
		for _, r := range fake.ToolResults(n) {
			told = told || strings.Contains(r.Output, "text") && strings.Contains(r.Output, "string")
		}
	}
	if !told && refused {
		t.Errorf("the harness was not told the violation")
	}
}

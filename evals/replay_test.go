package evals_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/evalexport"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/tool"
)

// waitTurnEnd follows a session until its turn turnID ends.
func waitTurnEnd(t *testing.T, h *evalBed, sessionID, turnID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30e9)
	defer cancel()
	for e, err := range h.Sessions().Follow(ctx, sessionID, 0) {
		if err != nil {
			t.Fatalf("following %s: %v", sessionID, err)
		}
		if e.TurnID == turnID && (e.Kind == api.KindTurnCompleted || e.Kind == api.KindTurnFailed) {
			if e.Kind == api.KindTurnFailed {
				t.Fatalf("turn %s failed: %s", turnID, e.Data)
			}
			return
		}
	}
}

// A session run against the model, exported (evalexport.Case, what
// agent-sdk session export writes), runs as an eval that replays the
// model's recorded answers: it passes with the model answering otherwise
// (and never asked), and fails once a tool answers otherwise than it did.
func TestEvalReplayExported(t *testing.T) {
	var sky atomic.Value
	sky.Store("sunny")
	lookup, _ := tool.New("lookup", tool.Config{Description: "The weather of a city."}, func(ctx context.Context, call *tool.Call, in lookupInput) (map[string]string, error) {
		return map[string]string{"city": in.City, "sky": sky.Load().(string)}, nil
	})
	set, err := tool.NewSet(lookup)
	if err != nil {
		t.Fatal(err)
	}
	m := newEvalModel(t)
	m.Route("[rec]",
		fakemodel.Reply{Text: []string{"Let me look."}, Calls: []fakemodel.Call{{ID: "c1", Name: "lookup", Input: `{"city":"Paris"}`}}},
		fakemodel.Reply{Text: []string{"It is sunny ", "in Paris."}},
		fakemodel.Reply{Text: []string{"Tomorrow too."}})
	h := evalHost(t, openStore(t, "sqlite"), set, m, host.Options{})
	ctx := context.Background()

	// The production session: two turns, a tool call.
	sess, turn, err := h.Sessions().Create(ctx, host.SessionOptions{Message: "[rec] Weather in Paris?"})
	if err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, h, sess.ID, turn)
	turn, err = h.Sessions().Send(ctx, sess.ID, "And tomorrow?")
	if err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, h, sess.ID, turn)
	evs, err := h.Sessions().Events(ctx, sess.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	c, err := evalexport.Case(sess.ID, evs)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(c)
	want := `{"name":"` + sess.ID + `","conversation":["[rec] Weather in Paris?","And tomorrow?"],` +
		`"checks":[{"called":"lookup","args":{"city":"Paris"},"result":{"city":"Paris","sky":"sunny"}},{"noError":true}],` +
		`"replay":[{"text":"Let me look.","calls":[{"tool":"lookup","input":{"city":"Paris"}}]},{"text":"It is sunny in Paris."},{"text":"Tomorrow too."}]}`
	if string(got) != want {
		t.Fatalf("exported:\n%s\nwant:\n%s", got, want)
	}
	c.Checks = append(c.Checks, api.EvalCheck{Contains: "Tomorrow too."})
	// As a client sends it.
	var req api.EvalRunRequest
	body, _ := json.Marshal(api.EvalRunRequest{Name: "replayed", Cases: []api.EvalCase{c}})
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}

	// The model would now answer otherwise: the replay does not ask it.
	m.Route("[rec]", fakemodel.Reply{Text: []string{"I refuse."}}, fakemodel.Reply{Text: []string{"I refuse."}}, fakemodel.Reply{Text: []string{"I refuse."}})
	asked := m.Requests("[rec]")
	b, err := h.RunEval(ctx, req, "tester")
	if err != nil {
		t.Fatal(err)
	}
	b = waitEval(t, h, b.ID)
	r := b.Cases[0]
	if !r.Pass || r.Status != api.EvalCompleted || len(r.Checks) != 3 {
		t.Fatalf("the replayed case: %+v\n%s", r, checkDetails(r))
	}
	if n := m.Requests("[rec]"); n != asked {
		t.Errorf("the replay asked the model %d times", n-asked)
	}
	revs, _ := h.Sessions().Events(ctx, r.SessionID, 0, 1000)
	for _, e := range find(revs, api.KindModelUsage) {
		if u, _ := api.Decode[api.ModelUsage](e); u.Model != "replay" {
			t.Errorf("a replayed answer's usage names the model %q, want replay", u.Model)
		}
	}
	if res := find(revs, api.KindActionResult); len(res) != 1 || !strings.Contains(string(res[0].Data), `"sky":"sunny"`) || strings.Contains(string(res[0].Data), "stubbed") {
		t.Errorf("the replayed session's tool call (run for real): %s", kinds(revs))
	}

	// The tool changed: the replay fails, saying what it got.
	sky.Store("rainy")
	b, err = h.RunEval(ctx, req, "tester")
	if err != nil {
		t.Fatal(err)
	}
	b = waitEval(t, h, b.ID)
	r = b.Cases[0]
	if r.Pass || r.Status != api.EvalCompleted || r.Checks[0].Pass || !r.Checks[1].Pass || !r.Checks[2].Pass ||
		!strings.Contains(r.Checks[0].Detail, `never with the result; last result: {"city":"Paris","sky":"rainy"}`) {
		t.Errorf("the replay after the tool changed: %+v\n%s", r, checkDetails(r))
	}

	// A conversation that goes further than the recording fails its turn.
	short := req
	short.Cases = []api.EvalCase{c}
	short.Cases[0].Replay = c.Replay[:1]
	b, err = h.RunEval(ctx, short, "tester")
	if err != nil {
		t.Fatal(err)
	}
	b = waitEval(t, h, b.ID)
	if r := b.Cases[0]; r.Status != api.EvalFailed || !strings.Contains(r.Error, "beyond the script") {
		t.Errorf("a replay run out: %+v", r)
	}
}

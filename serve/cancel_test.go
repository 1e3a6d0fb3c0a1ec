package serve_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// TestCancelParkedTurnOverHTTP: POST …/cancel ends a turn parked on an
// approval (it was 409 no_running_turn): turn.failed (cancelled) on the
// stream, the call closed as cancelled, a later decision 409
// already_resolved with the cancelled call and no run, and the session
// free for the next message.
func TestCancelParkedTurnOverHTTP(t *testing.T) {
	fake := fakemodel.New(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "d1", Name: "deploy", Input: `{}`}}})
	t.Cleanup(fake.Close)
	fake.SetDefault(fakemodel.Reply{Text: []string{"Fine."}})
	var ran atomic.Int32
	deploy, _ := tool.New("deploy", tool.Config{Description: "Deploy.", NeedsApproval: tool.Always},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			ran.Add(1)
			return "deployed", nil
		})
	set, _ := tool.NewSet(deploy)
	state := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(state, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: fake.AnthropicURL(), MaxTokens: 10})
	h, err := host.New(set, &host.Options{StateRoot: state, Store: st, Model: p})
	if err != nil {
		t.Fatal(err)
	}
	h.Start(context.Background())
	srv, err := serve.New(h, &serve.Options{Slug: "agent", Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Shutdown(); ts.Close(); h.Close(); st.Close() })
	s := &sessionServer{url: ts.URL + "/agent/v1", fake: fake, srv: srv}

	status, body := s.call(t, "POST", "/session", `{"message":"deploy it"}`)
	if status != 201 {
		t.Fatalf("create: %d %v", status, body)
	}
	id, turnID := body["sessionId"].(string), body["turnId"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		parked, _ := st.ParkedTurns(ctx)
		if slices.ContainsFunc(parked, func(p api.Turn) bool { return p.ID == turnID }) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the turn did not park")
		}
		time.Sleep(10 * time.Millisecond) // parking writes no event
	}
	pending, _, _ := st.ListApprovals(ctx, store.ListApprovalsParams{Status: api.ApprovalPending})
	if len(pending) != 1 {
		t.Fatalf("pending: %+v", pending)
	}
	callID := pending[0].CallID
	if status, body := s.call(t, "GET", "/session/"+id, ""); status != 200 || body["session"].(map[string]any)["runningTurn"] != turnID {
		t.Fatalf("the parked turn is not the running one: %d %v", status, body)
	}
	if status, _ := s.call(t, "POST", "/session/"+id+"/messages", `{"message":"more"}`); status != 409 {
		t.Errorf("a message to the parked session: %d", status)
	}

	if status, body := s.call(t, "POST", "/session/"+id+"/cancel", ""); status != 200 || body["ok"] != true {
		t.Fatalf("cancel: %d %v", status, body)
	}
	var tail []string
	err = s.stream(ctx, t, id, 0, func(e sseEvent) bool {
		if e.turn == turnID {
			tail = append(tail, e.kind)
		}
		return e.kind != "turn.failed" && e.kind != "turn.completed"
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tail); n < 3 || !slices.Equal(tail[n-3:], []string{"action.approval_resolved", "action.result", "turn.failed"}) {
		t.Fatalf("the turn's events: %v", tail)
	}
	evs, _ := st.Events(ctx, id, 0, 0)
	if f, _ := api.Decode[api.TurnFailed](evs[len(evs)-1]); f.Code != api.FailureCancelled || f.Reason != "cancelled" {
		t.Errorf("turn.failed: %+v", f)
	}
	if status, body := s.call(t, "GET", "/session/"+id, ""); status != 200 || body["session"].(map[string]any)["runningTurn"] != nil {
		t.Errorf("after the cancel: %d %v", status, body)
	}

	for _, path := range []string{"/session/" + id + "/approvals/" + callID, "/approvals/" + callID} {
		status, body := s.call(t, "POST", path, `{"approved":true}`)
		e, _ := body["error"].(map[string]any)
		a, _ := e["approval"].(map[string]any)
		if status != 409 || e["code"] != "already_resolved" || a["status"] != "cancelled" {
			t.Errorf("approving after the cancel (%s): %d %v", path, status, body)
		}
	}
	if status, body := s.call(t, "GET", "/calls/"+callID, ""); status != 200 || body["status"] != "cancelled" || body["isError"] != true {
		t.Errorf("the call after the cancel: %d %v", status, body)
	}
	if status, body := s.call(t, "GET", "/approvals?status=cancelled", ""); status != 200 || len(body["approvals"].([]any)) != 1 {
		t.Errorf("cancelled approvals: %d %v", status, body)
	}
	if status, body := s.call(t, "POST", "/session/"+id+"/cancel", ""); status != 409 || body["error"].(map[string]any)["code"] != "no_running_turn" {
		t.Errorf("a second cancel: %d %v", status, body)
	}

	status, body = s.call(t, "POST", "/session/"+id+"/messages", `{"message":"never mind"}`)
	if status != 202 {
		t.Fatalf("a message after the cancel: %d %v", status, body)
	}
	next := body["turnId"].(string)
	err = s.stream(ctx, t, id, evs[len(evs)-1].Seq, func(e sseEvent) bool {
		return e.turn != next || (e.kind != "turn.completed" && e.kind != "turn.failed")
	})
	if err != nil {
		t.Fatal(err)
	}
	if last, _ := st.Events(ctx, id, 0, 0); last[len(last)-1].Kind != api.KindTurnCompleted {
		t.Errorf("the next turn did not complete: %s", last[len(last)-1].Kind)
	}
	if ran.Load() != 0 {
		t.Error("the cancelled call ran")
	}
}

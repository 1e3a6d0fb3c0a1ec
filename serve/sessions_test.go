package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

type sessionServer struct {
	url  string // .../agent/v1
	fake *fakemodel.Server
	srv  *serve.Server
}

func setupSessionServer(t *testing.T, script ...fakemodel.Reply) *sessionServer {
	t.Helper()
	fake := fakemodel.New(script...)
	t.Cleanup(fake.Close)
	slow, _ := tool.New("slow", tool.Config{Description: "Takes a moment."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
		time.Sleep(20 * time.Millisecond)
		return "slept", nil
	})
	set, _ := tool.NewSet(slow)
	state := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(state, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: fake.AnthropicURL(), MaxTokens: 10})
	h, err := host.New(set, &host.Options{StateRoot: state, Store: st, Model: p, ToolConcurrency: 1, MaxSteps: 50})
	if err != nil {
		t.Fatal(err)
	}
	h.Start(context.Background())
	srv, _ := serve.New(h, &serve.Options{Slug: "agent", Token: testToken})
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Shutdown(); ts.Close(); h.Close(); st.Close() })
	return &sessionServer{url: ts.URL + "/agent/v1", fake: fake, srv: srv}
}

func (s *sessionServer) call(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, s.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	json.NewDecoder(resp.Body).Decode(&v)
	return resp.StatusCode, v
}

type sseEvent struct {
	id   int64
	kind string
	turn string
}

// stream reads a session's SSE stream from after, calling each for every
// event until it returns false or ctx ends.
func (s *sessionServer) stream(ctx context.Context, t *testing.T, sessionID string, after int64, each func(sseEvent) bool) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/session/"+sessionID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	if after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("status %d, %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	sc := bufio.NewScanner(resp.Body)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			ev.id, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			ev.kind = line[7:]
		case strings.HasPrefix(line, "data: "):
			var d struct {
				Seq    int64  `json:"seq"`
				Kind   string `json:"kind"`
				TurnID string `json:"turnId"`
			}
			json.Unmarshal([]byte(line[6:]), &d)
			if d.Seq != ev.id || d.Kind != ev.kind {
				return fmt.Errorf("SSE id/event %d/%s disagree with data %d/%s", ev.id, ev.kind, d.Seq, d.Kind)
			}
			ev.turn = d.TurnID
			if !each(ev) {
				return nil
			}
		}
	}
	return sc.Err()
}

// longTurn scripts a turn of many events: text, then n slow tool calls one
// at a time, then an answer.
func longTurn(n int) []fakemodel.Reply {
	var replies []fakemodel.Reply
	for i := range n {
		replies = append(replies, fakemodel.Reply{Text: []string{"step ", strconv.Itoa(i)}, Calls: []fakemodel.Call{{ID: fmt.Sprintf("c%d", i), Name: "slow", Input: `{}`}}})
	}
	return append(replies, fakemodel.Reply{Text: []string{"all ", "done"}})
}

func TestSessionAPI(t *testing.T) {
	s := setupSessionServer(t, fakemodel.Reply{Hang: 10 * time.Second})
	status, v := s.call(t, "POST", "/session", `{"channel":"http","message":"hello"}`)
	if status != 201 || v["ok"] != true || !strings.HasPrefix(v["sessionId"].(string), "sess_") || !strings.HasPrefix(v["turnId"].(string), "turn_") {
		t.Fatalf("create: %d %v", status, v)
	}
	id := v["sessionId"].(string)
	// The turn hangs on the model: the session is busy, from every entry point.
	if status, v := s.call(t, "POST", "/session/"+id+"/messages", `{"message":"more"}`); status != 409 || v["error"].(map[string]any)["code"] != "session_busy" {
		t.Errorf("message while busy: %d %v", status, v)
	}
	if status, v := s.call(t, "POST", "/tools/slow", `{"input":{},"sessionId":"`+id+`"}`); status != 409 || v["error"].(map[string]any)["code"] != "session_busy" {
		t.Errorf("call while busy: %d %v", status, v)
	}
	if status, v := s.call(t, "GET", "/session/"+id, ``); status != 200 || v["session"].(map[string]any)["runningTurn"] == nil {
		t.Errorf("get: %d %v", status, v)
	}
	if status, _ := s.call(t, "POST", "/session/"+id+"/cancel", ``); status != 200 {
		t.Errorf("cancel: %d", status)
	}
	// Cancelled: the stream ends the turn with turn.failed.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var last sseEvent
	s.stream(ctx, t, id, 0, func(e sseEvent) bool { last = e; return e.kind != "turn.failed" })
	if last.kind != "turn.failed" {
		t.Fatalf("the cancelled turn did not fail: %+v", last)
	}
	for _, tt := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/session/" + id + "/cancel", ``, 409, "no_running_turn"},
		{"GET", "/session/sess_nope", ``, 404, "session_not_found"},
		{"POST", "/session/sess_nope/messages", `{"message":"x"}`, 404, "session_not_found"},
		{"POST", "/session/" + id + "/messages", `{"message":"  "}`, 400, "empty_message"},
		{"POST", "/session/" + id + "/messages", `{"msg":"x"}`, 400, "malformed_json"},
		{"POST", "/session", `{"channel":"no spaces"}`, 400, "invalid_channel"},
		{"POST", "/session", `{"message":"   "}`, 400, "empty_message"},
		{"GET", "/sessions?limit=0", ``, 400, "bad_query"},
		{"GET", "/sessions?cursor=zzz", ``, 400, "bad_cursor"},
		{"GET", "/session/" + id + "/events?follow=false&after=x", ``, 400, "bad_query"},
		{"POST", "/tools/slow", `{"input":{},"sessionId":"sess_nope"}`, 404, "session_not_found"},
	} {
		status, v := s.call(t, tt.method, tt.path, tt.body)
		e, _ := v["error"].(map[string]any)
		if status != tt.status || e["code"] != tt.code {
			t.Errorf("%s %s: %d %v, want %d %s", tt.method, tt.path, status, v, tt.status, tt.code)
		}
	}
	// A session-bound direct call is recorded under its own turn.
	if status, v := s.call(t, "POST", "/tools/slow", `{"input":{},"sessionId":"`+id+`"}`); status != 200 || v["result"] != "slept" {
		t.Errorf("session call: %d %v", status, v)
	}
	status, v = s.call(t, "GET", "/session/"+id+"/events?follow=false", ``)
	evs, _ := v["events"].([]any)
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.(map[string]any)["kind"].(string))
	}
	if got := strings.Join(kinds, " "); status != 200 || got != "session.created turn.started message turn.failed turn.started action.result turn.completed" {
		t.Errorf("events: %d %s", status, got)
	}
	status, v = s.call(t, "GET", "/session/"+id+"/events?follow=false&after=5&limit=1", ``)
	if evs, _ := v["events"].([]any); status != 200 || len(evs) != 1 || evs[0].(map[string]any)["seq"] != 6.0 {
		t.Errorf("after=5&limit=1: %v", v)
	}
	// Paging through sessions.
	for range 3 {
		s.call(t, "POST", "/session", `{}`)
	}
	status, v = s.call(t, "GET", "/sessions?limit=3", ``)
	if list, _ := v["sessions"].([]any); status != 200 || len(list) != 3 || v["next"] == "" {
		t.Fatalf("first page: %v", v)
	}
	status, v = s.call(t, "GET", "/sessions?limit=3&cursor="+v["next"].(string), ``)
	if list, _ := v["sessions"].([]any); status != 200 || len(list) != 1 || v["next"] != "" || list[0].(map[string]any)["id"] != id {
		t.Errorf("second page: %v", v)
	}
}

// A client that disconnects mid-turn and resumes with Last-Event-ID sees
// every event exactly once.
func TestStreamResume(t *testing.T) {
	s := setupSessionServer(t, longTurn(12)...)
	_, v := s.call(t, "POST", "/session", `{}`)
	id := v["sessionId"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ready := make(chan struct{})
	var seen []int64
	// First connection: read a few events of the running turn, then drop.
	go func() {
		<-ready
		s.call(t, "POST", "/session/"+id+"/messages", `{"message":"go"}`)
	}()
	first, firstCancel := context.WithCancel(ctx)
	err := s.stream(first, t, id, 0, func(e sseEvent) bool {
		if e.id == 1 {
			close(ready)
		}
		seen = append(seen, e.id)
		return len(seen) < 9
	})
	firstCancel()
	if err != nil {
		t.Fatal(err)
	}
	for reconnects := 0; ; reconnects++ {
		done := false
		err := s.stream(ctx, t, id, seen[len(seen)-1], func(e sseEvent) bool {
			seen = append(seen, e.id)
			done = e.kind == "turn.completed"
			return !done && len(seen)%7 != 0 // drop every few events
		})
		if err != nil {
			t.Fatal(err)
		}
		if done {
			break
		}
		if reconnects > 100 {
			t.Fatal("the turn never completed")
		}
	}
	for i, id := range seen {
		if id != int64(i+1) {
			t.Fatalf("event %d has id %d: lost or repeated events: %v", i, id, seen)
		}
	}
	if len(seen) < 60 {
		t.Errorf("only %d events", len(seen))
	}
}

// 100 subscribers of one session all see the same sequence.
func TestManySubscribers(t *testing.T) {
	s := setupSessionServer(t, longTurn(5)...)
	_, v := s.call(t, "POST", "/session", `{}`)
	id := v["sessionId"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 100
	var wg, connected sync.WaitGroup
	connected.Add(n)
	got := make([][]int64, n)
	for i := range n {
		wg.Go(func() {
			once := sync.OnceFunc(connected.Done)
			defer once()
			err := s.stream(ctx, t, id, 0, func(e sseEvent) bool {
				once() // the first event (session.created) proves the subscription
				got[i] = append(got[i], e.id)
				return e.kind != "turn.completed"
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	connected.Wait()
	s.call(t, "POST", "/session/"+id+"/messages", `{"message":"go"}`)
	wg.Wait()
	for i := range n {
		if len(got[i]) != len(got[0]) {
			t.Fatalf("subscriber %d saw %d events, subscriber 0 saw %d", i, len(got[i]), len(got[0]))
		}
		for j, id := range got[i] {
			if id != int64(j+1) {
				t.Fatalf("subscriber %d: event %d has id %d", i, j, id)
			}
		}
	}
	if len(got[0]) < 20 {
		t.Errorf("only %d events", len(got[0]))
	}
}

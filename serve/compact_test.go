package serve_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/turnloop"
)

// turn sends a message to a session (a new one when id is "") and waits
// for the turn to complete; it returns the session's id.
func (s *sessionServer) turn(t *testing.T, id, message string) string {
	t.Helper()
	path, want := "/session/"+id+"/messages", 202
	if id == "" {
		path, want = "/session", 201
	}
	body, _ := json.Marshal(map[string]string{"message": message})
	status, v := s.call(t, "POST", path, string(body))
	if status != want {
		t.Fatalf("POST %s: %d %v", path, status, v)
	}
	id, turnID := v["sessionId"].(string), v["turnId"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var last sseEvent
	s.stream(ctx, t, id, 0, func(e sseEvent) bool {
		last = e
		return e.turn != turnID || (e.kind != "turn.completed" && e.kind != "turn.failed")
	})
	if last.turn != turnID || last.kind != "turn.completed" {
		t.Fatalf("turn %s ended with %+v", turnID, last)
	}
	return id
}

// anthropicBody is what the tests read of a request the fake
// received: the system prompt and the messages' text.
type anthropicBody struct {
	System []struct {
		Text string `json:"text"`
	} `json:"system"`
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"messages"`
}

func decodeRequest(t *testing.T, raw json.RawMessage) anthropicBody {
	t.Helper()
	var b anthropicBody
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("a request the fake received: %v", err)
	}
	return b
}

// POST /v1/session/{id}/compact summarises all but the last turns with a
// model call, records context.compacted, and the next turn's request
// starts with the summary; with one turn there is nothing to summarise;
// a busy or unknown session is refused.
func TestCompactOverHTTP(t *testing.T) {
	t.Parallel()
	s := setupSessionServer(t)
	s.fake.Push(fakemodel.Reply{Text: []string{strings.Repeat("A long first answer. ", 200)}}, fakemodel.Reply{Text: []string{"second answer"}}, fakemodel.Reply{Text: []string{"third answer"}})
	id := s.turn(t, "", "the first question, about the walrus")
	s.turn(t, id, "the second question")
	s.turn(t, id, "the third question")

	s.fake.Push(fakemodel.Reply{Text: []string{"SUMMARY: the user asked ", "about the walrus."}})
	before := len(s.fake.Requests())
	status, v := s.call(t, "POST", "/session/"+id+"/compact", ``)
	if status != 200 || v["ok"] != true || v["compacted"] != true || !strings.HasPrefix(v["turnId"].(string), "turn_") {
		t.Fatalf("compact: %d %v", status, v)
	}
	rec, _ := v["context"].(map[string]any)
	if rec["summary"] != "SUMMARY: the user asked about the walrus." || rec["trigger"] != "manual" || rec["throughSeq"].(float64) <= 0 ||
		rec["tokensBefore"].(float64) <= rec["tokensAfter"].(float64) {
		t.Errorf("the compaction: %v", rec)
	}
	reqs := s.fake.Requests()
	if len(reqs) != before+1 {
		t.Fatalf("compacting made %d model calls, want 1", len(reqs)-before)
	}
	sum := decodeRequest(t, reqs[before])
	if len(sum.System) != 1 || sum.System[0].Text != turnloop.DefaultCompactionPrompt || len(sum.Messages) != 1 ||
		!strings.Contains(sum.Messages[0].Content[0].Text, "the first question, about the walrus") ||
		strings.Contains(sum.Messages[0].Content[0].Text, "the third question") {
		t.Errorf("the summary request: %s", reqs[before])
	}

	// On the stream: the compact turn, its model call and the record, at
	// the seq the answer gave.
	_, list := s.call(t, "GET", "/session/"+id+"/events?follow=false", ``)
	var kinds []string
	for _, e := range list["events"].([]any) {
		e := e.(map[string]any)
		if e["turnId"] == v["turnId"] {
			kinds = append(kinds, e["kind"].(string))
		}
		if e["kind"] == "context.compacted" && e["seq"] != v["seq"] {
			t.Errorf("context.compacted at seq %v, the answer says %v", e["seq"], v["seq"])
		}
	}
	if got := strings.Join(kinds, " "); got != "turn.started model.usage context.compacted turn.completed" {
		t.Errorf("the compact turn's events: %s", got)
	}
	if _, got := s.call(t, "GET", "/session/"+id, ``); got["session"].(map[string]any)["compactedSeq"] != v["seq"] {
		t.Errorf("the session's compactedSeq: %v, want %v", got["session"], v["seq"])
	}

	// The next turn's request starts with the summary; the first turn is
	// gone from it, the last one kept.
	s.fake.Push(fakemodel.Reply{Text: []string{"fourth answer"}})
	s.turn(t, id, "the fourth question")
	reqs = s.fake.Requests()
	next := decodeRequest(t, reqs[len(reqs)-1])
	first := next.Messages[0].Content[0].Text
	if next.Messages[0].Role != "user" || !strings.HasPrefix(first, "[The earlier part of this conversation was summarised") ||
		!strings.Contains(first, "SUMMARY: the user asked about the walrus.") {
		t.Errorf("the next request's first message: %q", first)
	}
	if raw := string(reqs[len(reqs)-1]); strings.Contains(raw, "the first question") || !strings.Contains(raw, "the third question") ||
		!strings.Contains(raw, "the fourth question") {
		t.Errorf("the next request: %s", raw)
	}

	// One turn: nothing to summarise, no model call.
	s.fake.Push(fakemodel.Reply{Text: []string{"only answer"}})
	solo := s.turn(t, "", "a single question")
	before = len(s.fake.Requests())
	status, v = s.call(t, "POST", "/session/"+solo+"/compact", ``)
	if status != 200 || v["compacted"] != false || v["reason"] == "" || v["reason"] == nil || v["context"] != nil {
		t.Errorf("compact of one turn: %d %v", status, v)
	}
	if n := len(s.fake.Requests()) - before; n != 0 {
		t.Errorf("compact of one turn made %d model calls", n)
	}

	// A session whose turn runs, and one that does not exist.
	release := make(chan struct{})
	defer close(release)
	s.fake.Push(fakemodel.Reply{Until: release})
	_, v = s.call(t, "POST", "/session", `{"message":"think hard"}`)
	busy := v["sessionId"].(string)
	for _, tt := range []struct {
		name, id string
		status   int
		code     string
	}{
		{"busy", busy, 409, "session_busy"},
		{"unknown", "sess_nope", 404, "session_not_found"},
	} {
		status, v := s.call(t, "POST", "/session/"+tt.id+"/compact", ``)
		if e, _ := v["error"].(map[string]any); status != tt.status || e["code"] != tt.code {
			t.Errorf("%s: %d %v, want %d %s", tt.name, status, v, tt.status, tt.code)
		}
	}
}

// A message over --max-message-bytes (1 MiB) but under the body limit (4
// MiB) is refused 413 message_too_large, saying both sizes; no turn
// starts.
func TestMessageTooLarge(t *testing.T) {
	t.Parallel()
	s := setupSessionServer(t)
	big, _ := json.Marshal(map[string]string{"message": strings.Repeat("x", 3<<19)}) // 1.5 MiB
	_, v := s.call(t, "POST", "/session", `{}`)
	id := v["sessionId"].(string)
	for _, path := range []string{"/session", "/session/" + id + "/messages"} {
		status, v := s.call(t, "POST", path, string(big))
		e, _ := v["error"].(map[string]any)
		if msg, _ := e["message"].(string); status != 413 || e["code"] != "message_too_large" ||
			!strings.Contains(msg, "1572864 bytes") || !strings.Contains(msg, "1048576") || !strings.Contains(msg, "--max-message-bytes") {
			t.Errorf("POST %s: %d %v", path, status, v)
		}
	}
	if n := len(s.fake.Requests()); n != 0 {
		t.Errorf("the model got %d requests", n)
	}
	if _, v := s.call(t, "GET", "/session/"+id, ``); v["session"].(map[string]any)["lastSeq"] != 1.0 {
		t.Errorf("the session: %v", v["session"])
	}
}

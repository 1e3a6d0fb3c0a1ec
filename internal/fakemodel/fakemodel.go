// Package fakemodel is an HTTP server that speaks the streaming wire
// formats of the Anthropic Messages API and OpenAI chat completions, and
// answers with a script. Tests point the real provider clients at it (the
// providers' base URLs), since no real provider can be reached from here.
package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Call is a tool call the fake model makes. Input is sent as is: it may be
// malformed on purpose.
type Call struct {
	ID, Name, Input string
}

// Reply is one scripted answer.
type Reply struct {
	Text []string // text, in deltas
	// Every, if set, is the pause before each text delta after the first
	// (a model streaming at its pace).
	Every  time.Duration
	Calls  []Call
	Status int           // non-zero: answer with this HTTP status and an error body
	Hang   time.Duration // wait this long (or until the client gives up) before answering
	// Until, if set, holds the answer until it is closed (or the client
	// gives up), after any Hang.
	Until <-chan struct{}
	// Thoughts are the model's reasoning, in deltas, before its text (used
	// by the gemini wire).
	Thoughts []string
	// GeminiUsage is the usage the answer reports, and GeminiError the
	// error of an answer with a Status (used by the gemini wire).
	GeminiUsage *GeminiUsage
	GeminiError *GeminiError
}

// Server is a fake model provider. It is safe for concurrent use.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	script   []Reply
	requests []json.RawMessage
	// Default answers requests the script does not cover.
	Default Reply
}

// New starts a fake provider answering with script, in order.
func New(script ...Reply) *Server {
	s := &Server{script: script, Default: Reply{Text: []string{"done"}}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.anthropic)
	mux.HandleFunc("POST /v1/chat/completions", s.openai)
	mux.HandleFunc("POST /chat/completions", s.openai)
	mux.HandleFunc("POST /v1beta/models/{call}", s.gemini)
	s.Server = httptest.NewServer(mux)
	return s
}

// AnthropicURL is the base URL for the Anthropic client.
func (s *Server) AnthropicURL() string { return s.URL }

// OpenAIURL is the base URL for the OpenAI client.
func (s *Server) OpenAIURL() string { return s.URL + "/v1" }

// Push adds replies to the script.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, replies...)
}

// SetDefault changes the answer to requests the script does not cover.
func (s *Server) SetDefault(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Default = r
}

// Requests returns the bodies of the requests received so far.
func (s *Server) Requests() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]json.RawMessage(nil), s.requests...)
}

func (s *Server) next(r *http.Request) (Reply, bool) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, body)
	if len(s.script) == 0 {
		return s.Default, true
	}
	reply := s.script[0]
	s.script = s.script[1:]
	return reply, true
}

// prelude handles hangs and error statuses; false means the reply is done.
func prelude(w http.ResponseWriter, r *http.Request, reply Reply) bool {
	if reply.Hang > 0 {
		select {
		case <-time.After(reply.Hang):
		case <-r.Context().Done():
			return false
		}
	}
	if reply.Until != nil {
		select {
		case <-reply.Until:
		case <-r.Context().Done():
			return false
		}
	}
	if reply.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.Status)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"api_error","message":"fake failure %d"}}`, reply.Status)
		return false
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return true
}

func sse(w http.ResponseWriter, event string, v any) {
	b, _ := json.Marshal(v)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// pace waits Reply.Every before every text delta but the first (or until
// the client gives up).
func pace(r *http.Request, reply Reply, i int) {
	if reply.Every <= 0 || i == 0 {
		return
	}
	select {
	case <-time.After(reply.Every):
	case <-r.Context().Done():
	}
}

func (s *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	reply, _ := s.next(r)
	if !prelude(w, r, reply) {
		return
	}
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": "fake", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 1, "output_tokens": 1},
	}})
	index := 0
	if len(reply.Text) > 0 {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for i, t := range reply.Text {
			pace(r, reply, i)
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": t}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for _, c := range reply.Calls {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{
			"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
		// Split the input in two, as the API streams it.
		half := len(c.Input) / 2
		for _, part := range []string{c.Input[:half], c.Input[half:]} {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	stop := "end_turn"
	if len(reply.Calls) > 0 {
		stop = "tool_use"
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 5}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

func (s *Server) openai(w http.ResponseWriter, r *http.Request) {
	reply, _ := s.next(r)
	if !prelude(w, r, reply) {
		return
	}
	chunk := func(delta map[string]any, finish any) {
		sse(w, "", map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "fake",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for i, t := range reply.Text {
		pace(r, reply, i)
		chunk(map[string]any{"content": t}, nil)
	}
	for i, c := range reply.Calls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil)
		half := len(c.Input) / 2
		for _, part := range []string{c.Input[:half], c.Input[half:]} {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": part}}}}, nil)
		}
	}
	finish := "stop"
	if len(reply.Calls) > 0 {
		finish = "tool_calls"
	}
	chunk(map[string]any{}, finish)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// Contains reports whether the n-th request's body contains s.
func (s *Server) Contains(n int, sub string) bool {
	reqs := s.Requests()
	return n < len(reqs) && strings.Contains(string(reqs[n]), sub)
}

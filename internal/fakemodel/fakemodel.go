// Package fakemodel is an HTTP server that speaks the streaming wire
// formats of the Anthropic Messages API, OpenAI chat completions, the
// OpenAI Responses API (responses.go) and Gemini's generateContent
// (gemini.go), and answers with a script. Tests point the real provider
// clients at it (the providers' base URLs), and the coding-agent harnesses
// too (Claude Code, Codex, Gemini CLI), since no real provider can be
// reached from here. What a request sent back for the fake's tool calls is
// read with [Server.ToolResults] (results.go).
//
// It answers as the real APIs do where a client could tell: usage in each
// API's own fields (Anthropic's message_start and message_delta usage,
// OpenAI's final chunk when the request asked for include_usage), error
// bodies and statuses with their headers (retry-after), errors in the
// middle of a stream, connections dropped without an answer, and
// Anthropic's extended thinking with signed blocks that a later request
// must send back unchanged. It can hold a hard context window and keeps
// prompt caches, Anthropic's explicit breakpoints and OpenAI's automatic
// prefixes, reporting what each request read from them (cache.go says how
// it counts).
package fakemodel

import (
	"bytes"
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
	// Namespace, if set, is sent as the function_call's "namespace" (the
	// Responses wire only): Codex calls an MCP tool as Name in the
	// namespace "mcp__<server>".
	Namespace string
	// Custom sends the call as a custom_tool_call whose input is Input, a
	// raw string (the Responses wire only): Codex's apply_patch, whose
	// Input is "*** Begin Patch\n…".
	Custom bool
}

// Reply is one scripted answer.
type Reply struct {
	Text []string // text, in deltas
	// Every, if set, is the pause before each text delta after the first
	// (a model streaming at its pace).
	Every time.Duration
	Calls []Call
	// Thinking are reasoning blocks before the text, sent when the request
	// turned extended thinking on (Anthropic; OpenAI's chat completions
	// stream no reasoning). The fake signs each and remembers what it
	// signed. The Responses wire sends them always, as reasoning items
	// whose summary is the text.
	Thinking []Thinking
	// Usage is what the answer reports it consumed; nil: figures derived
	// from the lengths of the request and the answer.
	Usage *Usage
	// NoUsage answers as an OpenAI-compatible server that ignores
	// include_usage: no usage chunk.
	NoUsage bool

	// Status, if non-zero, answers with this HTTP status and the API's
	// error body for it (its type, and Message or a message of its own).
	Status  int
	Message string
	// ContextLength answers 400 with the API's error for a prompt larger
	// than the model's window.
	ContextLength bool
	// Header is set on the answer, whatever its status (retry-after,
	// retry-after-ms).
	Header map[string]string
	// Reset closes the connection without answering.
	Reset bool
	// StreamError ends the stream, after the text, with the API's error
	// event for an overload instead of the end of the answer.
	StreamError bool

	Hang time.Duration // wait this long (or until the client gives up) before answering
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

// Thinking is one reasoning block of a [Reply]: Text in deltas, or, if
// Redacted is set, a redacted_thinking block with that data.
type Thinking struct {
	Text     []string
	Redacted string
}

// Usage is what a reply reports it consumed, each API in its own fields:
//
//   - Anthropic: input_tokens = Input, cache_read_input_tokens =
//     CacheRead, cache_creation_input_tokens = CacheWrite, output_tokens =
//     Output and output_tokens_details.thinking_tokens = Reasoning.
//   - OpenAI: prompt_tokens = Input + CacheRead + CacheWrite (it reports
//     no cache writes), prompt_tokens_details.cached_tokens = CacheRead,
//     completion_tokens = Output and
//     completion_tokens_details.reasoning_tokens = Reasoning.
//   - OpenAI Responses: input_tokens = Input + CacheRead + CacheWrite,
//     input_tokens_details.cached_tokens = CacheRead, output_tokens =
//     Output and output_tokens_details.reasoning_tokens = Reasoning.
type Usage struct {
	Input, CacheRead, CacheWrite, Output, Reasoning int64
}

// Server is a fake model provider. It is safe for concurrent use.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	script   []Reply
	requests []json.RawMessage
	thinking thinkingRecord // what the Anthropic fake signed (anthropic.go)
	window   int64          // SetWindow's
	cache    caches         // the prompt caches (cache.go)
	usages   []Usage        // what each answer reported
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
	mux.HandleFunc("POST /v1/responses", s.responses)
	mux.HandleFunc("POST /responses", s.responses)
	mux.HandleFunc("POST /v1beta/models/{call}", s.gemini)
	// Claude Code probes its base URL with HEAD / before it starts.
	mux.HandleFunc("HEAD /", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	s.Server = httptest.NewServer(mux)
	return s
}

// AnthropicURL is the base URL for the Anthropic client.
func (s *Server) AnthropicURL() string { return s.URL }

// OpenAIURL is the base URL for the OpenAI client, chat completions and
// Responses alike (Codex's model_providers.<name>.base_url).
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

// record reads the request's body and keeps it.
func (s *Server) record(r *http.Request) []byte {
	body, _ := io.ReadAll(r.Body)
	s.keep(body)
	return body
}

// keep adds a request's body to those Requests returns.
func (s *Server) keep(body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, body)
}

// take returns the script's next reply, or the default.
func (s *Server) take() Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.script) == 0 {
		return s.Default
	}
	reply := s.script[0]
	s.script = s.script[1:]
	return reply
}

// prelude handles hangs, resets and error statuses, with Anthropic's
// error bodies; false means the reply is done.
func prelude(w http.ResponseWriter, r *http.Request, reply Reply) bool {
	return begin(w, r, reply, anthropicError)
}

// begin handles hangs, resets and error statuses, writing an error's body
// with errorBody; false means the reply is done.
func begin(w http.ResponseWriter, r *http.Request, reply Reply, errorBody func(Reply) (int, any)) bool {
	if !settle(w, r, reply, errorBody) {
		return false
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return true
}

// settle handles hangs, resets, the reply's headers and error statuses,
// as begin does, but leaves a successful answer's head unwritten; false
// means the reply is done.
func settle(w http.ResponseWriter, r *http.Request, reply Reply, errorBody func(Reply) (int, any)) bool {
	if !wait(r, reply) {
		return false
	}
	if reply.Reset {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return false
			}
		}
		panic(http.ErrAbortHandler) // the server drops the connection
	}
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	if reply.Status != 0 || reply.ContextLength {
		status, body := errorBody(reply)
		writeJSON(w, status, body)
		return false
	}
	return true
}

// writeJSON writes an answer's JSON body, without escaping <, > and & (as
// the APIs write them: "… tokens > 200000 maximum").
func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(body)
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

// usageOf is the reply's usage, or figures derived from the lengths of
// the request and the answer (a token per four bytes, [Tokens]) and from
// what the request read from the prompt cache and wrote to it, when the
// script gives none.
func usageOf(reply Reply, body []byte, read, write int64) Usage {
	if reply.Usage != nil {
		return *reply.Usage
	}
	out := 0
	for _, t := range reply.Text {
		out += len(t)
	}
	for _, c := range reply.Calls {
		out += len(c.Name) + len(c.Input)
	}
	return Usage{Input: max(0, Tokens(body)-read-write), CacheRead: read, CacheWrite: write, Output: max(1, int64(out/4))}
}

// modelOf is the model the request names, which the answer reports. It
// is read without decoding the body (the fake would otherwise cost as much
// as what it tests): the SDKs write the top-level "model" after the
// messages, whose tool inputs may name a model of their own.
func modelOf(body []byte) string {
	key := []byte(`"model":"`)
	i := bytes.LastIndex(body, key)
	if i < 0 {
		return "fake"
	}
	rest := body[i+len(key):]
	end := bytes.IndexByte(rest, '"')
	if end <= 0 {
		return "fake"
	}
	return string(rest[:end])
}

// Contains reports whether the n-th request's body contains s.
func (s *Server) Contains(n int, sub string) bool {
	reqs := s.Requests()
	return n < len(reqs) && strings.Contains(string(reqs[n]), sub)
}

// wait holds the answer for Reply.Hang and Reply.Until; false means the
// client gave up.
func wait(r *http.Request, reply Reply) bool {
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
	return true
}

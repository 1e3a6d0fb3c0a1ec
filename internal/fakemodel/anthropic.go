package fakemodel

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// anthropic answers a Messages API request as the API streams it.
func (s *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	body := s.record(r)
	if n, window, over := s.overWindow(body); over {
		writeJSON(w, http.StatusBadRequest, anthropicErrorBody("invalid_request_error", anthropicTooLong(n, window)))
		return
	}
	var req anthropicRequest
	// Decode only what thinking and caching need read: the fake would
	// otherwise cost as much as what it tests.
	if bytes.Contains(body, []byte(`"thinking":{`)) || bytes.Contains(body, []byte(`"cache_control":`)) {
		if !walkAnthropic(body, &req) {
			req = anthropicRequest{}
			_ = json.Unmarshal(body, &req)
		}
	}
	thinking := req.Thinking.Type == "enabled"
	if msg := s.checkAnthropic(&req); msg != "" {
		writeJSON(w, http.StatusBadRequest, anthropicErrorBody("invalid_request_error", msg))
		return
	}
	prefixes, msg := anthropicPrefixes(&req)
	if msg != "" {
		writeJSON(w, http.StatusBadRequest, anthropicErrorBody("invalid_request_error", msg))
		return
	}
	read, write, commit := s.anthropicCache(prefixes)
	reply := s.take()
	if !prelude(w, r, reply) {
		return
	}
	commit()
	u := usageOf(reply, body, read, write)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": modelOf(body), "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{
			"input_tokens": u.Input, "cache_creation_input_tokens": u.CacheWrite, "cache_read_input_tokens": u.CacheRead, "output_tokens": 1,
		},
	}})
	index := 0
	block := func(start map[string]any, deltas ...map[string]any) {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": start})
		for _, d := range deltas {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": d})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	var issued []issuedBlock
	if thinking {
		for _, t := range reply.Thinking {
			if t.Redacted != "" {
				block(map[string]any{"type": "redacted_thinking", "data": t.Redacted})
				issued = append(issued, issuedBlock{Type: "redacted_thinking", Data: t.Redacted})
				continue
			}
			text := strings.Join(t.Text, "")
			sig := s.sign(text)
			var deltas []map[string]any
			for _, part := range t.Text {
				deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": part})
			}
			deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": sig})
			block(map[string]any{"type": "thinking", "thinking": "", "signature": ""}, deltas...)
			issued = append(issued, issuedBlock{Type: "thinking", Thinking: text, Signature: sig})
		}
	}
	if len(reply.Text) > 0 {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for i, t := range reply.Text {
			pace(r, reply, i)
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": t}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if reply.StreamError {
		sse(w, "error", anthropicErrorBody("overloaded_error", "Overloaded"))
		return
	}
	for _, c := range reply.Calls {
		// Split the input in two, as the API streams it.
		half := len(c.Input) / 2
		block(map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}},
			map[string]any{"type": "input_json_delta", "partial_json": c.Input[:half]},
			map[string]any{"type": "input_json_delta", "partial_json": c.Input[half:]})
		if len(issued) > 0 {
			s.issue(c.ID, issued)
		}
	}
	stop := "end_turn"
	if len(reply.Calls) > 0 {
		stop = "tool_use"
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{
		"input_tokens": u.Input, "cache_creation_input_tokens": u.CacheWrite, "cache_read_input_tokens": u.CacheRead,
		"output_tokens": u.Output, "output_tokens_details": map[string]any{"thinking_tokens": u.Reasoning},
	}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
	s.reported(u)
}

// anthropicRequest is what the fake reads of a request.
type anthropicRequest struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	Thinking  struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
	Tools    []anthropicBlock   `json:"tools"`
	System   anthropicContent   `json:"system"`
	Messages []anthropicMessage `json:"messages"`
}

// anthropicMessage is a message of a request.
type anthropicMessage struct {
	Role    string           `json:"role"`
	Content anthropicContent `json:"content"`
}

// issuedBlock is a reasoning block the fake answered with.
type issuedBlock struct {
	Type, Thinking, Signature, Data string
}

// thinkingRecord is what the fake signed: each signature's text, and the
// reasoning blocks that came before each tool call it made. The Server's
// mutex guards it.
type thinkingRecord struct {
	signed map[string]string        // signature → the thinking it seals
	byCall map[string][]issuedBlock // tool_use id → the answer's reasoning blocks
}

// sign returns a new signature sealing text, and remembers it.
func (s *Server) sign(text string) string {
	b := make([]byte, 48)
	rand.Read(b)
	sig := base64.StdEncoding.EncodeToString(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.thinking.signed == nil {
		s.thinking.signed = map[string]string{}
	}
	s.thinking.signed[sig] = text
	return sig
}

// issue remembers the reasoning blocks of the answer that made a call.
func (s *Server) issue(callID string, blocks []issuedBlock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.thinking.byCall == nil {
		s.thinking.byCall = map[string][]issuedBlock{}
	}
	s.thinking.byCall[callID] = blocks
}

// checkAnthropic refuses what the API refuses, saying it as the API does:
// a thinking budget under 1,024 tokens or not under max_tokens, and, with
// thinking on, an assistant message whose thinking blocks are not the ones
// the fake answered with before its tool calls, byte for byte, first in
// its content.
func (s *Server) checkAnthropic(req *anthropicRequest) string {
	if req.Thinking.Type != "enabled" {
		return ""
	}
	switch {
	case req.Thinking.BudgetTokens < 1024:
		return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
	case req.MaxTokens <= req.Thinking.BudgetTokens:
		return "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range req.Messages {
		blocks := m.Content
		if m.Role != "assistant" || len(blocks) == 0 {
			continue
		}
		var reasoning []issuedBlock
		var calls []string
		for j, b := range blocks {
			switch typ := b.str("type"); typ {
			case "thinking":
				if text, ok := s.thinking.signed[b.str("signature")]; !ok || text != b.str("thinking") {
					return fmt.Sprintf("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, j)
				}
				fallthrough
			case "redacted_thinking":
				if len(calls) > 0 || j != len(reasoning) {
					return fmt.Sprintf("messages.%d.content.%d: thinking blocks must come first in an assistant message's content", i, j)
				}
				reasoning = append(reasoning, issuedBlock{Type: typ, Thinking: b.str("thinking"), Signature: b.str("signature"), Data: b.str("data")})
			case "tool_use":
				calls = append(calls, b.str("id"))
			}
		}
		for _, id := range calls {
			want, ok := s.thinking.byCall[id]
			if !ok || slices.Equal(want, reasoning) {
				continue
			}
			if len(reasoning) == 0 {
				return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, "+
					"a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). "+
					"We recommend you include thinking blocks from previous turns.", i, blocks[0].str("type"))
			}
			return fmt.Sprintf("messages.%d: the thinking blocks before tool_use %s are not those of the answer that made it, unchanged", i, id)
		}
	}
	return ""
}

// anthropicError is the API's error answer to reply.
func anthropicError(reply Reply) (int, any) {
	if reply.ContextLength {
		return http.StatusBadRequest, anthropicErrorBody("invalid_request_error", anthropicTooLong(210417, 200000))
	}
	typ, msg := "api_error", "Internal server error"
	switch reply.Status {
	case 400, 422:
		typ, msg = "invalid_request_error", "messages: the request is invalid"
	case 401:
		typ, msg = "authentication_error", "invalid x-api-key"
	case 402:
		typ, msg = "billing_error", "Your credit balance is too low to access the Anthropic API."
	case 403:
		typ, msg = "permission_error", "Your API key does not have permission to use the specified resource."
	case 404:
		typ, msg = "not_found_error", "model: not found"
	case 413:
		typ, msg = "request_too_large", "Request exceeds the maximum allowed number of bytes."
	case 429:
		typ, msg = "rate_limit_error", "This request would exceed the rate limit for your organization of 50 requests per minute."
	case 504:
		typ, msg = "timeout_error", "Request timed out"
	case 529:
		typ, msg = "overloaded_error", "Overloaded"
	}
	if reply.Message != "" {
		msg = reply.Message
	}
	return reply.Status, anthropicErrorBody(typ, msg)
}

// anthropicTooLong is the API's message for a prompt of n tokens over a
// window of max.
func anthropicTooLong(n, max int64) string {
	return fmt.Sprintf("prompt is too long: %d tokens > %d maximum", n, max)
}

func anthropicErrorBody(typ, msg string) map[string]any {
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": "req_fake"}
}

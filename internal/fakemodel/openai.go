package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
)

// openai answers a chat completions request as the API streams it, with
// the usage chunk last when the request asked for include_usage.
func (s *Server) openai(w http.ResponseWriter, r *http.Request) {
	body := s.record(r)
	if n, window, over := s.overWindow(body); over {
		writeJSON(w, http.StatusBadRequest, openaiErrorBody(openaiTooLong(n, window), "invalid_request_error", "context_length_exceeded"))
		return
	}
	var req openaiRequest
	if len(body) >= cacheMinTokens*4 && !walkOpenAI(body, &req) { // a shorter prompt is not cached
		req = openaiRequest{}
		_ = json.Unmarshal(body, &req)
	}
	cached, commit := s.openaiCache(&req)
	reply := s.take()
	if !begin(w, r, reply, openaiError) {
		return
	}
	commit()
	// Outside a JSON string, as structure only: a quote in a string is
	// escaped.
	includeUsage := bytes.Contains(body, []byte(`"include_usage":true`)) && !reply.NoUsage
	name := modelOf(body)
	chunk := func(delta map[string]any, finish any) {
		c := map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": name,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if includeUsage {
			c["usage"] = nil // as the API sends it on every chunk but the last
		}
		sse(w, "", c)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for i, t := range reply.Text {
		pace(r, reply, i)
		chunk(map[string]any{"content": t}, nil)
	}
	if reply.StreamError {
		sse(w, "", openaiErrorBody("The server had an error while processing your request. Sorry about that!", "server_error", nil))
		return
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
	if includeUsage {
		u := usageOf(reply, body, cached, 0)
		prompt := u.Input + u.CacheRead + u.CacheWrite
		sse(w, "", map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": name, "choices": []any{},
			"usage": map[string]any{
				"prompt_tokens": prompt, "completion_tokens": u.Output, "total_tokens": prompt + u.Output,
				"prompt_tokens_details":     map[string]any{"cached_tokens": u.CacheRead, "audio_tokens": 0},
				"completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
			}})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	s.reported(usageOf(reply, body, cached, 0))
}

// openaiError is the API's error answer to reply.
func openaiError(reply Reply) (int, any) {
	if reply.ContextLength {
		return http.StatusBadRequest, openaiErrorBody(openaiTooLong(210417, 128000), "invalid_request_error", "context_length_exceeded")
	}
	typ, msg, code := "server_error", "The server had an error while processing your request. Sorry about that!", any(nil)
	switch reply.Status {
	case 400, 422:
		typ, msg = "invalid_request_error", "Invalid request."
	case 401:
		typ, msg, code = "invalid_request_error", "Incorrect API key provided: k. You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_api_key"
	case 403:
		typ, msg, code = "invalid_request_error", "Country, region, or territory not supported", "unsupported_country_region_territory"
	case 404:
		typ, msg, code = "invalid_request_error", "The model does not exist or you do not have access to it.", "model_not_found"
	case 429:
		typ, msg, code = "requests", "Rate limit reached for requests. Please try again in 1s.", "rate_limit_exceeded"
	case 503:
		msg = "The engine is currently overloaded, please try again later"
	}
	if reply.Message != "" {
		msg = reply.Message
	}
	return reply.Status, openaiErrorBody(msg, typ, code)
}

// openaiTooLong is the API's message for messages of n tokens over a
// window of max.
func openaiTooLong(n, max int64) string {
	return fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. "+
		"Please reduce the length of the messages.", max, n)
}

func openaiErrorBody(msg, typ string, code any) map[string]any {
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}
}

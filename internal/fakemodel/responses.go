package fakemodel

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
)

// responses answers an OpenAI Responses API request (POST /v1/responses,
// what Codex sends) with the next reply: streamed as the API streams it
// when the request says "stream":true, else the whole response object.
// Each of the reply's Thinking blocks is a reasoning item (its text the
// summary, streamed as reasoning_summary_text deltas), its text one message
// output item and each of its calls an item of its own, in order: a function_call (with its namespace, if
// set) or, for a Custom call, a custom_tool_call whose input is the
// call's raw Input. A call without an ID gets call_fake_<n>. The results
// come back as function_call_output and custom_tool_call_output input
// items ([Server.ToolResults] reads them).
func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	body := s.record(r)
	if _, _, over := s.overWindow(body); over {
		writeJSON(w, http.StatusBadRequest, responsesContextError())
		return
	}
	reply := s.take()
	// Outside a JSON string, as structure only: a quote in a string is
	// escaped.
	stream := bytes.Contains(body, []byte(`"stream":true`)) || bytes.Contains(body, []byte(`"stream": true`))
	if !settle(w, r, reply, responsesError) {
		return
	}
	name := modelOf(body)
	items := responsesItems(reply)
	u := usageOf(reply, body, 0, 0)
	object := func(status string, output []any, usage any) map[string]any {
		return map[string]any{"id": "resp_fake", "object": "response", "created_at": 1, "status": status, "model": name,
			"error": nil, "incomplete_details": nil, "output": output, "usage": usage}
	}
	if !stream {
		var output []any
		for _, it := range items {
			output = append(output, it.done)
		}
		if reply.StreamError {
			failed := object("failed", output, nil)
			failed["error"] = responsesServerError
			writeJSON(w, http.StatusOK, failed)
			return
		}
		writeJSON(w, http.StatusOK, object("completed", output, responsesUsage(u)))
		s.reported(u)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	seq := 0
	event := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		sse(w, typ, fields)
	}
	event("response.created", map[string]any{"response": object("in_progress", []any{}, nil)})
	event("response.in_progress", map[string]any{"response": object("in_progress", []any{}, nil)})
	var output []any
	for i, it := range items {
		id := it.done["id"]
		event("response.output_item.added", map[string]any{"output_index": i, "item": it.added})
		switch it.done["type"] {
		case "reasoning":
			summary := it.done["summary"].([]any)
			if len(summary) == 0 {
				break // redacted: only encrypted_content
			}
			part := func(text string) map[string]any { return map[string]any{"type": "summary_text", "text": text} }
			at := map[string]any{"item_id": id, "output_index": i, "summary_index": 0}
			event("response.reasoning_summary_part.added", with(at, "part", part("")))
			for _, d := range it.deltas {
				event("response.reasoning_summary_text.delta", with(at, "delta", d))
			}
			text := summary[0].(map[string]any)["text"].(string)
			event("response.reasoning_summary_text.done", with(at, "text", text))
			event("response.reasoning_summary_part.done", with(at, "part", part(text)))
		case "message":
			part := func(text string) map[string]any {
				return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
			}
			at := map[string]any{"item_id": id, "output_index": i, "content_index": 0}
			event("response.content_part.added", with(at, "part", part("")))
			for j, t := range reply.Text {
				pace(r, reply, j)
				event("response.output_text.delta", with(with(at, "delta", t), "logprobs", []any{}))
			}
			text := strings.Join(reply.Text, "")
			event("response.output_text.done", with(with(at, "text", text), "logprobs", []any{}))
			event("response.content_part.done", with(at, "part", part(text)))
		case "function_call", "custom_tool_call":
			// Split the input in two, as the API streams it.
			kind, field := "function_call_arguments", "arguments"
			if it.done["type"] == "custom_tool_call" {
				kind, field = "custom_tool_call_input", "input"
			}
			input := it.done[field].(string)
			half := len(input) / 2
			at := map[string]any{"item_id": id, "output_index": i}
			for _, d := range []string{input[:half], input[half:]} {
				event("response."+kind+".delta", with(at, "delta", d))
			}
			event("response."+kind+".done", with(with(at, field, input), "name", it.done["name"]))
		}
		event("response.output_item.done", map[string]any{"output_index": i, "item": it.done})
		output = append(output, it.done)
		if reply.StreamError && it.done["type"] == "message" {
			break // the failure comes after the text, as on the other wires
		}
	}
	if reply.StreamError {
		failed := object("failed", output, nil)
		failed["error"] = responsesServerError
		event("response.failed", map[string]any{"response": failed})
		return
	}
	event("response.completed", map[string]any{"response": object("completed", output, responsesUsage(u))})
	s.reported(u)
}

// responsesServerError is the error of a response that failed midway.
var responsesServerError = map[string]any{"code": "server_error", "message": "The server had an error processing your request. Sorry about that! You can retry your request."}

// responsesItem is an output item of an answer, as output_item.added
// announces it and as output_item.done (and the completed response) holds
// it.
type responsesItem struct {
	added, done map[string]any
	deltas      []string // a reasoning item's summary, in deltas
}

// responsesItems are the output items answering reply: its reasoning
// blocks, its text, then its calls.
func responsesItems(reply Reply) []responsesItem {
	var items []responsesItem
	for i, t := range reply.Thinking {
		// A reasoning item's summary is its text; encrypted_content
		// stands for the reasoning itself, opaque (a redacted block's data
		// as is).
		done := map[string]any{"id": fmt.Sprintf("rs_fake_%d", i), "type": "reasoning", "summary": []any{}}
		if t.Redacted != "" {
			done["encrypted_content"] = t.Redacted
		} else {
			text := strings.Join(t.Text, "")
			done["summary"] = []any{map[string]any{"type": "summary_text", "text": text}}
			done["encrypted_content"] = base64.StdEncoding.EncodeToString([]byte("fake reasoning\x00" + text))
		}
		items = append(items, responsesItem{added: with(done, "summary", []any{}), done: done, deltas: t.Text})
	}
	if len(reply.Text) > 0 {
		content := []any{map[string]any{"type": "output_text", "text": strings.Join(reply.Text, ""), "annotations": []any{}, "logprobs": []any{}}}
		done := map[string]any{"id": "msg_fake", "type": "message", "status": "completed", "role": "assistant", "content": content}
		added := with(with(done, "status", "in_progress"), "content", []any{})
		items = append(items, responsesItem{added: added, done: done})
	}
	for i, c := range reply.Calls {
		callID := c.ID
		if callID == "" {
			callID = fmt.Sprintf("call_fake_%d", i)
		}
		var done map[string]any
		field := "arguments"
		if c.Custom {
			field = "input"
			done = map[string]any{"id": fmt.Sprintf("ctc_fake_%d", i), "type": "custom_tool_call", "status": "completed",
				"call_id": callID, "name": c.Name, "input": c.Input}
		} else {
			done = map[string]any{"id": fmt.Sprintf("fc_fake_%d", i), "type": "function_call", "status": "completed",
				"call_id": callID, "name": c.Name, "arguments": c.Input}
		}
		if c.Namespace != "" {
			done["namespace"] = c.Namespace
		}
		items = append(items, responsesItem{added: with(with(done, "status", "in_progress"), field, ""), done: done})
	}
	return items
}

// with is a copy of m with key set to v.
func with(m map[string]any, key string, v any) map[string]any {
	c := make(map[string]any, len(m)+1)
	for k, x := range m {
		c[k] = x
	}
	c[key] = v
	return c
}

// responsesUsage is u in the Responses API's fields.
func responsesUsage(u Usage) map[string]any {
	input := u.Input + u.CacheRead + u.CacheWrite
	return map[string]any{
		"input_tokens": input, "input_tokens_details": map[string]any{"cached_tokens": u.CacheRead},
		"output_tokens": u.Output, "output_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
		"total_tokens": input + u.Output,
	}
}

// responsesError is the Responses API's error answer to reply: OpenAI's
// error body, with the Responses API's message for a prompt over the
// window.
func responsesError(reply Reply) (int, any) {
	if reply.ContextLength {
		return http.StatusBadRequest, responsesContextError()
	}
	return openaiError(reply)
}

// responsesContextError is the Responses API's error body for an input
// over the model's window.
func responsesContextError() map[string]any {
	body := openaiErrorBody(responsesTooLong, "invalid_request_error", "context_length_exceeded")
	body["error"].(map[string]any)["param"] = "input"
	return body
}

// responsesTooLong is the Responses API's message for an input over the
// model's window (it names neither figure).
const responsesTooLong = "Your input exceeds the context window of this model. Please adjust your input and try again."

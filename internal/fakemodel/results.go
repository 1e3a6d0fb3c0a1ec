package fakemodel

import (
	"encoding/json"
	"strings"
)

// ToolResult is what a request sent back for one tool call, whatever its
// wire.
type ToolResult struct {
	// CallID is the call's id: Anthropic's tool_use_id, chat completions'
	// tool_call_id, the Responses API's call_id, or the id of Gemini's
	// functionResponse (the harness's own, since the fake's Gemini calls
	// carry none).
	CallID string
	// Name is the tool's name where the wire repeats it (Gemini's
	// functionResponse), else "".
	Name string
	// Output is the result as text: the string sent, the text of its
	// content blocks joined, or, for Gemini, response.output (or
	// response.error) as a string or else as JSON.
	Output string
	// IsError is Anthropic's is_error, or a Gemini response holding an
	// error.
	IsError bool
	// Custom marks a Responses custom_tool_call_output (Codex's
	// apply_patch result).
	Custom bool
}

// ToolResults returns the tool results the n-th request (as [Server.Requests]
// counts) carries, in order: Anthropic's tool_result blocks, chat
// completions' tool messages, the Responses API's function_call_output and
// custom_tool_call_output input items, Gemini's functionResponse parts. A
// request holds the whole conversation, so the results of earlier steps
// are among them; a test looks for its call's id (or, for Gemini, name).
// Nil if there is no such request or it cannot be read.
func (s *Server) ToolResults(n int) []ToolResult {
	reqs := s.Requests()
	if n < 0 || n >= len(reqs) {
		return nil
	}
	return toolResults(reqs[n])
}

// LastToolResults is [Server.ToolResults] of the last request received.
func (s *Server) LastToolResults() []ToolResult {
	return s.ToolResults(len(s.Requests()) - 1)
}

// toolResults reads the tool results of a request's body.
func toolResults(body []byte) []ToolResult {
	var req struct {
		Messages []struct {
			Role       string          `json:"role"`
			ToolCallID string          `json:"tool_call_id"`
			Content    json.RawMessage `json:"content"`
		} `json:"messages"`
		Input    json.RawMessage `json:"input"`
		Contents []struct {
			Parts []struct {
				FunctionResponse *struct {
					ID       string                     `json:"id"`
					Name     string                     `json:"name"`
					Response map[string]json.RawMessage `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if json.Unmarshal(body, &req) != nil {
		return nil
	}
	var out []ToolResult
	for _, m := range req.Messages {
		if m.Role == "tool" {
			out = append(out, ToolResult{CallID: m.ToolCallID, Output: textOf(m.Content)})
			continue
		}
		var blocks []struct {
			Type      string          `json:"type"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			IsError   bool            `json:"is_error"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue // a string, or not a message of blocks
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				out = append(out, ToolResult{CallID: b.ToolUseID, Output: textOf(b.Content), IsError: b.IsError})
			}
		}
	}
	var items []struct {
		Type   string          `json:"type"`
		CallID string          `json:"call_id"`
		Output json.RawMessage `json:"output"`
	}
	if json.Unmarshal(req.Input, &items) == nil { // else a string, or none
		for _, it := range items {
			if it.Type == "function_call_output" || it.Type == "custom_tool_call_output" {
				out = append(out, ToolResult{CallID: it.CallID, Output: textOf(it.Output), Custom: it.Type == "custom_tool_call_output"})
			}
		}
	}
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			fr := p.FunctionResponse
			if fr == nil {
				continue
			}
			r := ToolResult{CallID: fr.ID, Name: fr.Name}
			if e, ok := fr.Response["error"]; ok {
				r.Output, r.IsError = textOf(e), true
			} else if o, ok := fr.Response["output"]; ok {
				r.Output = textOf(o)
			} else {
				b, _ := json.Marshal(fr.Response)
				r.Output = string(b)
			}
			out = append(out, r)
		}
	}
	return out
}

// textOf is a result's content as text: a JSON string's value, the text
// of content blocks (text, input_text, output_text) joined, or else the
// JSON itself.
func textOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var b strings.Builder
		for _, bl := range blocks {
			if bl.Text != nil {
				b.WriteString(*bl.Text)
			}
		}
		return b.String()
	}
	return string(raw)
}

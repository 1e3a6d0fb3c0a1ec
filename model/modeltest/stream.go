package modeltest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/agentsdk/agentsdk/model"
)

// streamAnswer yields a as a provider streams an answer to req.
func streamAnswer(ctx context.Context, req *model.Request, a Answer, yield func(model.Chunk, error) bool) {
	if a.Hold != nil {
		select {
		case <-a.Hold:
		case <-ctx.Done():
			yield(model.Chunk{}, model.Unanswered(ctx.Err()))
			return
		}
	}
	if err := ctx.Err(); err != nil {
		yield(model.Chunk{}, model.Unanswered(err))
		return
	}
	out := 0
	for _, r := range a.Reasoning {
		for _, d := range deltas(r.Text) {
			if !yield(model.Chunk{ReasoningText: d}, nil) {
				return
			}
		}
		block := r
		if !yield(model.Chunk{Reasoning: &block}, nil) {
			return
		}
		out += len(r.Text)
	}
	for _, d := range deltas(a.Text) {
		if !yield(model.Chunk{Text: d}, nil) {
			return
		}
	}
	out += len(a.Text)
	for _, c := range a.ToolCalls {
		call := c
		if len(call.Input) == 0 {
			call.Input = json.RawMessage("{}")
		}
		if !yield(model.Chunk{ToolCall: &call}, nil) {
			return
		}
		out += len(call.Name) + len(call.Input)
	}
	if a.Err != nil {
		yield(model.Chunk{}, a.Err)
		return
	}
	end := &model.End{Model: a.Model, StopReason: a.StopReason, Usage: a.Usage}
	if end.Model == "" {
		end.Model = ModelName
	}
	if end.StopReason == "" {
		end.StopReason = "end_turn"
		if len(a.ToolCalls) > 0 {
			end.StopReason = "tool_use"
		}
	}
	if end.Usage == nil {
		end.Usage = &model.Usage{InputTokens: int64(requestBytes(req)+3) / 4, OutputTokens: int64(out+3) / 4}
	} else {
		u := *end.Usage
		end.Usage = &u
	}
	yield(model.Chunk{End: end}, nil)
}

// deltas splits text into the deltas it streams in: a word each, with
// the spaces after it, so that the pieces join back to text.
func deltas(text string) []string {
	var out []string
	start, space := 0, false
	for i, r := range text {
		switch s := unicode.IsSpace(r); {
		case s:
			space = true
		case space:
			out = append(out, text[start:i])
			start, space = i, false
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// requestBytes is the size of req's JSON as a cassette keeps it, for an
// estimate of its tokens.
func requestBytes(req *model.Request) int {
	n := normalise(req)
	b, err := json.Marshal(&n)
	if err != nil {
		return len(req.System)
	}
	return len(b)
}

// copyRequest is a copy of req that shares nothing with it that a caller
// might change.
func copyRequest(req *model.Request) model.Request {
	c := *req
	c.Tools = append([]model.Tool(nil), req.Tools...)
	c.Messages = make([]model.Message, len(req.Messages))
	for i, m := range req.Messages {
		m.Reasoning = append([]model.Reasoning(nil), m.Reasoning...)
		m.ToolCalls = append([]model.ToolCall(nil), m.ToolCalls...)
		m.ToolResults = append([]model.ToolResult(nil), m.ToolResults...)
		c.Messages[i] = m
	}
	return c
}

// lastUserText is the text of req's last user message with text.
func lastUserText(req *model.Request) (string, bool) {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == model.User && m.Text != "" {
			return m.Text, true
		}
	}
	return "", false
}

// result is a tool result of the last message with the name of the tool
// whose call it answers ("" if no call of the conversation has its ID).
type result struct {
	name string
	model.ToolResult
}

// lastResults are the tool results the last message of req carries.
func lastResults(req *model.Request) []result {
	if len(req.Messages) == 0 {
		return nil
	}
	last := req.Messages[len(req.Messages)-1]
	names := map[string]string{}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Name
		}
	}
	out := make([]result, len(last.ToolResults))
	for i, r := range last.ToolResults {
		out[i] = result{name: names[r.CallID], ToolResult: r}
	}
	return out
}

// describe says briefly what req asks, for a failure's message: its
// number of messages and tools, and its last message (the user's text,
// or the tool results it carries).
func describe(req *model.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s", plural(len(req.Messages), "message"), plural(len(req.Tools), "tool"))
	if len(req.Messages) == 0 {
		return b.String()
	}
	last := req.Messages[len(req.Messages)-1]
	switch {
	case len(last.ToolResults) > 0:
		b.WriteString("; the last message carries the results of")
		for i, r := range lastResults(req) {
			if i > 0 {
				b.WriteString(",")
			}
			name := r.name
			if name == "" {
				name = "call " + r.CallID
			}
			what := "result"
			if r.IsError {
				what = "error"
			}
			fmt.Fprintf(&b, " %s (%s %s)", name, what, clip(r.Content, 120))
		}
	default:
		fmt.Fprintf(&b, "; the last message is the %s's: %s", last.Role, clip(last.Text, 200))
	}
	return b.String()
}

// clip quotes s, cut to n bytes or so.
func clip(s string, n int) string {
	if len(s) > n {
		cut := n
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q…", s[:cut])
	}
	return fmt.Sprintf("%q", s)
}

// isRuneStart reports whether b begins a UTF-8 sequence.
func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// plural is "1 message", "2 messages".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

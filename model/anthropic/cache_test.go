package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
)

// long is a text of about 1,800 tokens as the fake counts them: over the
// 1,024 a prefix needs to be cached.
var long = strings.Repeat("lorem ipsum ", 600)

var cacheTools = []model.Tool{
	{Name: "read", Description: "Reads a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
	{Name: "write", Description: "Writes a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
}

// send streams req and returns the answer's usage.
func (b *bundle) send(t *testing.T, req *model.Request) model.Usage {
	t.Helper()
	var end *model.End
	for c, err := range b.provider.Stream(context.Background(), req) {
		if err != nil {
			t.Fatalf("request %d: %v", len(b.fake.Requests()), err)
		}
		if c.End != nil {
			end = c.End
		}
	}
	if end == nil || end.Usage == nil {
		t.Fatal("no usage")
	}
	return *end.Usage
}

// breakpoints lists where the n-th request put cache_control: "tools.1",
// "system.0", "messages.2.content.0".
func (b *bundle) breakpoints(t *testing.T, n int) []string {
	t.Helper()
	var req struct {
		Tools    []map[string]any `json:"tools"`
		System   []map[string]any `json:"system"`
		Messages []struct {
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(b.fake.Requests()[n], &req); err != nil {
		t.Fatal(err)
	}
	var at []string
	for i, tl := range req.Tools {
		if tl["cache_control"] != nil {
			at = append(at, fmt.Sprintf("tools.%d", i))
		}
	}
	for i, s := range req.System {
		if s["cache_control"] != nil {
			at = append(at, fmt.Sprintf("system.%d", i))
		}
	}
	for i, m := range req.Messages {
		for j, c := range m.Content {
			if c["cache_control"] != nil {
				if c["cache_control"].(map[string]any)["type"] != "ephemeral" {
					t.Errorf("messages.%d.content.%d: cache_control %v", i, j, c["cache_control"])
				}
				at = append(at, fmt.Sprintf("messages.%d.content.%d", i, j))
			}
		}
	}
	return at
}

// calls is an assistant message making n tool calls, and the user message
// with their results.
func calls(n int) (model.Message, model.Message) {
	a := model.Message{Role: model.Assistant, Text: "Reading."}
	r := model.Message{Role: model.User}
	for i := range n {
		id := fmt.Sprintf("toolu_%d", i)
		a.ToolCalls = append(a.ToolCalls, model.ToolCall{ID: id, Name: "read", Input: json.RawMessage(fmt.Sprintf(`{"path":"f%d"}`, i))})
		r.ToolResults = append(r.ToolResults, model.ToolResult{CallID: id, Content: fmt.Sprintf("contents of f%d", i)})
	}
	return a, r
}

// TestCacheBreakpoints: the last tool, the system prompt, the last
// message's last block, and where the previous request put that one —
// never more than four, never on a thinking block.
func TestCacheBreakpoints(t *testing.T) {
	t.Parallel()
	user := model.Message{Role: model.User, Text: "Read f0."}
	a1, r1 := calls(1)
	a2, r2 := calls(3)
	final := model.Message{Role: model.Assistant, Text: "Done."}
	next := model.Message{Role: model.User, Text: "And f9?"}
	tests := []struct {
		name string
		req  model.Request
		want string
	}{
		{"the first request", model.Request{System: "Be brief.", Tools: cacheTools, Messages: []model.Message{user}},
			"tools.1 system.0 messages.0.content.0"},
		{"no tools, no system", model.Request{Messages: []model.Message{user}}, "messages.0.content.0"},
		{"after a tool call", model.Request{System: "Be brief.", Tools: cacheTools, Messages: []model.Message{user, a1, r1}},
			"tools.1 system.0 messages.0.content.0 messages.2.content.0"},
		{"after three", model.Request{System: "Be brief.", Tools: cacheTools, Messages: []model.Message{user, a1, r1, a2, r2}},
			"tools.1 system.0 messages.2.content.0 messages.4.content.2"},
		{"the next turn", model.Request{System: "Be brief.", Tools: cacheTools, Messages: []model.Message{user, a1, r1, a2, r2, final, next}},
			"tools.1 system.0 messages.4.content.2 messages.6.content.0"},
	}
	b := setup(t, model.Config{})
	for i, tt := range tests {
		b.send(t, &tt.req)
		if got := strings.Join(b.breakpoints(t, i), " "); got != tt.want {
			t.Errorf("%s: breakpoints at %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestCacheThinking: with extended thinking, the assistant's thinking
// blocks carry no breakpoint (the API, and the fake, refuse one there),
// and go back byte for byte.
func TestCacheThinking(t *testing.T) {
	t.Parallel()
	b := setup(t, thinkingOn, fakemodel.Reply{
		Thinking: []fakemodel.Thinking{{Text: thought}},
		Calls:    []fakemodel.Call{{ID: "toolu_1", Name: "read", Input: `{"path":"f0"}`}},
	})
	user := model.Message{Role: model.User, Text: long}
	req := &model.Request{Tools: cacheTools, Messages: []model.Message{user}}
	assistant := model.Message{Role: model.Assistant}
	for c, err := range b.provider.Stream(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
		if c.Reasoning != nil {
			assistant.Reasoning = append(assistant.Reasoning, *c.Reasoning)
		}
		if c.ToolCall != nil {
			assistant.ToolCalls = append(assistant.ToolCalls, *c.ToolCall)
		}
	}
	results := model.Message{Role: model.User, ToolResults: []model.ToolResult{{CallID: "toolu_1", Content: "contents"}}}
	u := b.send(t, &model.Request{Tools: cacheTools, Messages: []model.Message{user, assistant, results, {Role: model.Assistant, Text: "f0 read."}, {Role: model.User, Text: "Thanks."}}})
	if got := strings.Join(b.breakpoints(t, 1), " "); got != "tools.1 messages.2.content.0 messages.4.content.0" {
		t.Errorf("breakpoints at %s", got)
	}
	if u.CacheReadTokens == 0 {
		t.Errorf("usage %+v: nothing read from the cache", u)
	}
}

// TestCacheReads: each request reads from the cache what the one before
// wrote, and writes what is new; a repeat writes nothing. The fake
// measures it (internal/fakemodel's cache.go).
func TestCacheReads(t *testing.T) {
	t.Parallel()
	b := setup(t, model.Config{})
	user := model.Message{Role: model.User, Text: long}
	a1, r1 := calls(1)
	// More blocks than the API looks back over: the previous request's
	// breakpoint, kept, is what finds its cache.
	a2, r2 := calls(15)
	a3, r3 := calls(1)
	history := []model.Message{user}
	var usages []model.Usage
	for _, turn := range [][]model.Message{nil, {a1, r1}, {a2, r2}, {a3, r3}, nil} {
		history = append(history, turn...)
		usages = append(usages, b.send(t, &model.Request{System: "Be brief.", Tools: cacheTools, Messages: history}))
	}
	for i, u := range usages {
		if got, want := u.PromptTokens(), fakemodel.Tokens(b.fake.Requests()[i]); got != want {
			t.Errorf("request %d: prompt tokens %d, want the fake's count %d (%+v)", i, got, want, u)
		}
		switch {
		case i == 0 && (u.CacheReadTokens != 0 || u.CacheWriteTokens == 0):
			t.Errorf("request 0: %+v, want a write and no read", u)
		case i > 0 && i < 4 && u.CacheReadTokens != usages[i-1].CacheReadTokens+usages[i-1].CacheWriteTokens:
			t.Errorf("request %d: read %d, want what request %d read and wrote, %d", i, u.CacheReadTokens, i-1, usages[i-1].CacheReadTokens+usages[i-1].CacheWriteTokens)
		case i > 0 && i < 4 && u.CacheWriteTokens == 0:
			t.Errorf("request %d: %+v, want a write of what is new", i, u)
		case i == 4 && (u.CacheWriteTokens != 0 || u.CacheReadTokens != usages[3].CacheReadTokens+usages[3].CacheWriteTokens):
			t.Errorf("the repeat: %+v, want all read and nothing written", u)
		}
	}
	var read, prompt int64
	for _, u := range usages[1:] {
		read, prompt = read+u.CacheReadTokens, prompt+u.PromptTokens()
	}
	share := float64(read) / float64(prompt)
	t.Logf("read from the cache: %.1f%% of %d prompt tokens after the first request", 100*share, prompt)
	if share < 0.7 {
		t.Errorf("read from the cache: %.0f%% of the prompt after the first request, want 70%% or more", 100*share)
	}
}

// TestContextLength: a request over the fake's window gets the API's
// error, which the provider classifies; the script's reply waits for the
// next request.
func TestContextLength(t *testing.T) {
	t.Parallel()
	b := setup(t, model.Config{}, fakemodel.Reply{Text: []string{"short enough"}})
	b.fake.SetWindow(1000)
	_, err := b.stream(t, model.Message{Role: model.User, Text: long})
	var merr *model.Error
	if !errors.As(err, &merr) || merr.Reason != model.ReasonContextLength || merr.Status != 400 ||
		!strings.HasPrefix(merr.Message, "prompt is too long: ") || !strings.HasSuffix(merr.Message, " tokens > 1000 maximum") {
		t.Fatalf("%v, want context_length_exceeded saying the prompt is too long", err)
	}
	chunks, err := b.stream(t, model.Message{Role: model.User, Text: "hi"})
	if err != nil || chunks[0].Text != "short enough" {
		t.Errorf("the next request: %+v, %v", chunks, err)
	}
}

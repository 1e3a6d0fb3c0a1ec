package anthropic_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
)

type bundle struct {
	fake     *fakemodel.Server
	provider model.Provider
}

func setup(t *testing.T, cfg model.Config, script ...fakemodel.Reply) *bundle {
	t.Helper()
	b := &bundle{fake: fakemodel.New(script...)}
	t.Cleanup(b.fake.Close)
	cfg.Name, cfg.APIKey, cfg.BaseURL = "claude-test", "test", b.fake.AnthropicURL()
	p, err := anthropic.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.provider = p
	return b
}

func (b *bundle) stream(t *testing.T, msgs ...model.Message) ([]model.Chunk, error) {
	t.Helper()
	var chunks []model.Chunk
	for c, err := range b.provider.Stream(context.Background(), &model.Request{Messages: msgs}) {
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, c)
	}
	return chunks, nil
}

// lastRequest decodes the fake's last request body.
func (b *bundle) lastRequest(t *testing.T) map[string]any {
	t.Helper()
	reqs := b.fake.Requests()
	var body map[string]any
	if err := json.Unmarshal(reqs[len(reqs)-1], &body); err != nil {
		t.Fatal(err)
	}
	return body
}

var thinkingOn = model.Config{MaxTokens: 100, Thinking: &model.Thinking{BudgetTokens: 2048}}

// A thought with what a careless copy would change: quotes, escapes,
// non-ASCII, trailing space and a line separator.
var thought = []string{"Let me think about \"Oslo\" — ", "ünïcødé\\n, <tags> & spaces  \u2028", "done. "}

func TestThinkingStreams(t *testing.T) {
	t.Parallel()
	b := setup(t, thinkingOn, fakemodel.Reply{
		Thinking: []fakemodel.Thinking{{Text: thought}, {Redacted: "EmwKAhgBEgy3va3pzix/LafPsn4a"}},
		Text:     []string{"It is clear."},
		Calls:    []fakemodel.Call{{ID: "toolu_1", Name: "weather", Input: `{"city":"Oslo"}`}},
	})
	chunks, err := b.stream(t, model.Message{Role: model.User, Text: "Weather?"})
	if err != nil {
		t.Fatal(err)
	}
	body := b.lastRequest(t)
	if th, _ := body["thinking"].(map[string]any); th["type"] != "enabled" || th["budget_tokens"] != 2048.0 {
		t.Errorf("thinking: %v", body["thinking"])
	}
	// max_tokens must exceed the budget: the answer's cap comes on top.
	if body["max_tokens"] != 2148.0 {
		t.Errorf("max_tokens %v, want 2148", body["max_tokens"])
	}
	var deltas string
	var blocks []model.Reasoning
	var order []string
	for _, c := range chunks {
		switch {
		case c.ReasoningText != "":
			deltas += c.ReasoningText
			order = append(order, "reasoning.delta")
		case c.Reasoning != nil:
			blocks = append(blocks, *c.Reasoning)
			order = append(order, "reasoning")
		case c.Text != "":
			order = append(order, "text")
		case c.ToolCall != nil:
			order = append(order, "call")
		case c.End != nil:
			order = append(order, "end")
		}
	}
	if got := strings.Join(order, " "); got != "reasoning.delta reasoning.delta reasoning.delta reasoning reasoning text call end" {
		t.Errorf("chunks: %s", got)
	}
	want := strings.Join(thought, "")
	if deltas != want || len(blocks) != 2 || blocks[0].Text != want || blocks[0].Signature == "" || blocks[1] != (model.Reasoning{Redacted: "EmwKAhgBEgy3va3pzix/LafPsn4a"}) {
		t.Errorf("deltas %q, blocks %+v", deltas, blocks)
	}
}

// TestThinkingSentBack: the blocks go back first in the assistant message,
// byte for byte, and the fake (as the API) refuses them dropped or altered.
func TestThinkingSentBack(t *testing.T) {
	t.Parallel()
	b := setup(t, thinkingOn, fakemodel.Reply{
		Thinking: []fakemodel.Thinking{{Text: thought}, {Redacted: "EmwKAhgBEgy3va3pzix/LafPsn4a"}},
		Calls:    []fakemodel.Call{{ID: "toolu_1", Name: "weather", Input: `{"city":"Oslo"}`}},
	})
	user := model.Message{Role: model.User, Text: "Weather?"}
	chunks, err := b.stream(t, user)
	if err != nil {
		t.Fatal(err)
	}
	assistant := model.Message{Role: model.Assistant}
	for _, c := range chunks {
		if c.Reasoning != nil {
			assistant.Reasoning = append(assistant.Reasoning, *c.Reasoning)
		}
		if c.ToolCall != nil {
			assistant.ToolCalls = append(assistant.ToolCalls, *c.ToolCall)
		}
	}
	results := model.Message{Role: model.User, ToolResults: []model.ToolResult{{CallID: "toolu_1", Content: "clear"}}}

	if _, err := b.stream(t, user, assistant, results); err != nil {
		t.Fatalf("sending the blocks back: %v", err)
	}
	var req struct {
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	reqs := b.fake.Requests()
	json.Unmarshal(reqs[len(reqs)-1], &req)
	sent := req.Messages[1].Content
	if len(sent) != 3 || sent[0]["type"] != "thinking" || sent[0]["thinking"] != strings.Join(thought, "") || sent[0]["signature"] != assistant.Reasoning[0].Signature ||
		sent[1]["type"] != "redacted_thinking" || sent[1]["data"] != "EmwKAhgBEgy3va3pzix/LafPsn4a" || sent[2]["type"] != "tool_use" {
		t.Errorf("the assistant message sent back: %v", sent)
	}

	altered := func(f func(m *model.Message)) model.Message {
		m := assistant
		m.Reasoning = append([]model.Reasoning(nil), assistant.Reasoning...)
		f(&m)
		return m
	}
	refusals := []struct {
		name string
		msg  model.Message
		says string
	}{
		{"dropped", altered(func(m *model.Message) { m.Reasoning = nil }), "Expected `thinking` or `redacted_thinking`"},
		{"text altered", altered(func(m *model.Message) { m.Reasoning[0].Text = strings.TrimSpace(m.Reasoning[0].Text) }), "Invalid `signature`"},
		{"signature altered", altered(func(m *model.Message) {
			// Another first character than the signature's (a random one may be x).
			first := "x"
			if strings.HasPrefix(m.Reasoning[0].Signature, first) {
				first = "y"
			}
			m.Reasoning[0].Signature = first + m.Reasoning[0].Signature[1:]
		}), "Invalid `signature`"},
		{"redacted block dropped", altered(func(m *model.Message) { m.Reasoning = m.Reasoning[:1] }), "not those of the answer"},
		{"redacted data altered", altered(func(m *model.Message) { m.Reasoning[1].Redacted += "A" }), "not those of the answer"},
	}
	for _, tt := range refusals {
		_, err := b.stream(t, user, tt.msg, results)
		var merr *model.Error
		if !errors.As(err, &merr) || merr.Reason != model.ReasonInvalidRequest || merr.Status != 400 || !strings.Contains(merr.Message, tt.says) {
			t.Errorf("%s: %v, want invalid_request saying %q", tt.name, err, tt.says)
		}
	}
}

func TestThinkingBudgetTooSmall(t *testing.T) {
	t.Parallel()
	_, err := anthropic.New(model.Config{Name: "claude-test", Thinking: &model.Thinking{BudgetTokens: 512}})
	if err == nil || !strings.Contains(err.Error(), "model.thinking.budgetTokens is 512") {
		t.Errorf("New: %v", err)
	}
}

// TestImageResults: a tool result's images are image blocks of its
// tool_result; one the API would refuse is a text stand-in.
func TestImageResults(t *testing.T) {
	t.Parallel()
	b := setup(t, model.Config{})
	png := []byte("\x89PNG\r\n\x1a\nfake image")
	_, err := b.stream(t,
		model.Message{Role: model.User, Text: "Chart it"},
		model.Message{Role: model.Assistant, ToolCalls: []model.ToolCall{{ID: "toolu_1", Name: "chart", Input: []byte(`{}`)}, {ID: "toolu_2", Name: "chart", Input: []byte(`{}`)}}},
		model.Message{Role: model.User, ToolResults: []model.ToolResult{
			{CallID: "toolu_1", Content: "the chart", Images: []model.Image{{MimeType: "image/png", Data: png, Name: "image 1 of the result"}}},
			{CallID: "toolu_2", Images: []model.Image{{MimeType: "image/svg+xml", Data: []byte("<svg/>"), Name: "image 1 of the result"}}},
		}},
	)
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Messages []struct {
			Content []struct {
				Type    string `json:"type"`
				Content []struct {
					Type   string `json:"type"`
					Text   string `json:"text"`
					Source struct {
						Type, MediaType, Data string
					} `json:"source"`
				} `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	reqs := b.fake.Requests()
	if err := json.Unmarshal(reqs[0], &req); err != nil {
		t.Fatal(err)
	}
	results := req.Messages[2].Content
	first := results[0].Content
	if results[0].Type != "tool_result" || len(first) != 2 || first[0].Type != "text" || first[0].Text != "the chart" ||
		first[1].Type != "image" || first[1].Source.Type != "base64" || first[1].Source.Data != base64.StdEncoding.EncodeToString(png) {
		t.Errorf("the first result: %+v\n%s", results[0], reqs[0])
	}
	if !strings.Contains(string(reqs[0]), `"media_type":"image/png"`) {
		t.Errorf("no media_type: %s", reqs[0])
	}
	second := results[1].Content
	if len(second) != 1 || second[0].Type != "text" || !strings.Contains(second[0].Text, "image 1 of the result (image/svg+xml, 6 bytes) is not shown") {
		t.Errorf("the second result: %+v", results[1])
	}
}

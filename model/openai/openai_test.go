package openai_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/openai"
)

// send streams one request through a provider of cfg against a fake and
// returns the request body it sent.
func send(t *testing.T, cfg model.Config, msgs ...model.Message) map[string]any {
	t.Helper()
	fake := fakemodel.New()
	t.Cleanup(fake.Close)
	cfg.APIKey, cfg.BaseURL = "test", fake.OpenAIURL()
	p, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) == 0 {
		msgs = []model.Message{{Role: model.User, Text: "hi"}}
	}
	for _, err := range p.Stream(context.Background(), &model.Request{Messages: msgs, MaxTokens: 300}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	var body map[string]any
	if err := json.Unmarshal(fake.Requests()[0], &body); err != nil {
		t.Fatal(err)
	}
	return body
}

// TestReasoningModels: reasoning models get max_completion_tokens, every
// other name max_tokens (Ollama, vLLM, llama.cpp); reasoningEffort is
// sent as reasoning_effort.
func TestReasoningModels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, effort string
		completion   bool
	}{
		{"o3-mini", "high", true},
		{"o1", "", true},
		{"o4-mini-2025-04-16", "low", true},
		{"gpt-5", "minimal", true},
		{"gpt-5-mini", "", true},
		{"gpt-4o", "", false},
		{"llama3.1:8b", "", false},
		{"qwen2.5-coder", "", false},
		{"omni-local", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := send(t, model.Config{Name: tt.name, ReasoningEffort: tt.effort})
			key, other := "max_tokens", "max_completion_tokens"
			if tt.completion {
				key, other = other, key
			}
			if body[key] != 300.0 || body[other] != nil {
				t.Errorf("%s %v, %s %v", key, body[key], other, body[other])
			}
			if got, _ := body["reasoning_effort"].(string); got != tt.effort {
				t.Errorf("reasoning_effort %q, want %q", got, tt.effort)
			}
		})
	}
}

func TestReasoningEffortChecked(t *testing.T) {
	t.Parallel()
	if _, err := openai.New(model.Config{Name: "o3", ReasoningEffort: "extreme"}); err == nil || !strings.Contains(err.Error(), `"extreme"`) {
		t.Errorf("New: %v", err)
	}
}

// TestImageResults: tool messages take text only, so a result's images
// follow the tool messages in one user message, after a line naming the
// call; an image the API would refuse is a stand-in in the tool message.
func TestImageResults(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\nfake image")
	jpeg := []byte("\xff\xd8\xff fake jpeg")
	body := send(t, model.Config{Name: "gpt-4o"},
		model.Message{Role: model.User, Text: "Chart it"},
		model.Message{Role: model.Assistant, ToolCalls: []model.ToolCall{{ID: "call_1", Name: "chart", Input: []byte(`{}`)}, {ID: "call_2", Name: "chart", Input: []byte(`{}`)}}},
		model.Message{Role: model.User, ToolResults: []model.ToolResult{
			{CallID: "call_1", Content: "the chart", Images: []model.Image{{MimeType: "image/png", Data: png, Name: "image 1 of the result"}, {MimeType: "image/jpeg", Data: jpeg, Name: "image 2 of the result"}}},
			{CallID: "call_2", Content: "a drawing", Images: []model.Image{{MimeType: "image/svg+xml", Data: []byte("<svg/>"), Name: "image 1 of the result"}}},
		}, Text: "and then?"},
	)
	b, _ := json.Marshal(body["messages"])
	var msgs []struct {
		Role       string          `json:"role"`
		ToolCallID string          `json:"tool_call_id"`
		Content    json.RawMessage `json:"content"`
	}
	json.Unmarshal(b, &msgs)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, " "); got != "user assistant tool tool user user" {
		t.Fatalf("roles %s: %s", got, b)
	}
	var tool1, tool2 string
	json.Unmarshal(msgs[2].Content, &tool1)
	json.Unmarshal(msgs[3].Content, &tool2)
	if !strings.HasPrefix(tool1, "the chart") || !strings.Contains(tool1, "2 image(s) of this result follow") {
		t.Errorf("the first tool message: %q", tool1)
	}
	if !strings.Contains(tool2, "image 1 of the result (image/svg+xml, 6 bytes) is not shown") {
		t.Errorf("the second tool message: %q", tool2)
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(msgs[4].Content, &parts); err != nil {
		t.Fatalf("the images' message: %s", msgs[4].Content)
	}
	if len(parts) != 3 || parts[0].Type != "text" || !strings.Contains(parts[0].Text, "call_1") ||
		parts[1].Type != "image_url" || parts[1].ImageURL.URL != "data:image/png;base64,"+base64.StdEncoding.EncodeToString(png) ||
		parts[2].ImageURL.URL != "data:image/jpeg;base64,"+base64.StdEncoding.EncodeToString(jpeg) {
		t.Errorf("the images' message: %s", msgs[4].Content)
	}
	var text string
	if json.Unmarshal(msgs[5].Content, &text); text != "and then?" {
		t.Errorf("the user's text: %s", msgs[5].Content)
	}
}

// TestCompatibleReasoning: the reasoning a compatible server streams
// beside the content (vLLM's reasoning_content, Ollama's reasoning) is
// reasoning chunks, and one block once the answer begins.
func TestCompatibleReasoning(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"reasoning_content", "reasoning"} {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			fake := fakemodel.New()
			t.Cleanup(fake.Close)
			chunk := func(delta, finish string) string {
				return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
			}
			fake.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Write([]byte(chunk(`{"role":"assistant","`+key+`":"Let me "}`, "null") + chunk(`{"`+key+`":"think."}`, "null") +
					chunk(`{"content":"Four."}`, "null") + chunk(`{}`, `"stop"`) + "data: [DONE]\n\n"))
			})
			p, _ := openai.New(model.Config{Name: "qwen3", BaseURL: fake.OpenAIURL(), APIKey: "x"})
			var got []string
			for c, err := range p.Stream(context.Background(), &model.Request{Messages: []model.Message{{Role: model.User, Text: "2+2?"}}}) {
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case c.ReasoningText != "":
					got = append(got, "delta:"+c.ReasoningText)
				case c.Reasoning != nil:
					got = append(got, "block:"+c.Reasoning.Text)
				case c.Text != "":
					got = append(got, "text:"+c.Text)
				case c.End != nil:
					got = append(got, "end")
				}
			}
			if s := strings.Join(got, "|"); s != "delta:Let me |delta:think.|block:Let me think.|text:Four.|end" {
				t.Errorf("chunks %s", s)
			}
		})
	}
}

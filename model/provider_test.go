package model_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/model/openai"
)

// providers opens each provider's real client against a fake of its API.
var providers = []struct {
	name string
	open func(srv *fakemodel.Server) (model.Provider, error)
}{
	{"anthropic", func(srv *fakemodel.Server) (model.Provider, error) {
		return anthropic.New(model.Config{Name: "claude-test", BaseURL: srv.AnthropicURL(), APIKey: "test", MaxTokens: 100})
	}},
	{"openai", func(srv *fakemodel.Server) (model.Provider, error) {
		return openai.New(model.Config{Name: "gpt-test", BaseURL: srv.OpenAIURL(), APIKey: "test", MaxTokens: 100})
	}},
}

// stream sends one request through p and collects the answer.
func stream(t *testing.T, p model.Provider) ([]model.Chunk, error) {
	t.Helper()
	req := &model.Request{Messages: []model.Message{{Role: model.User, Text: "hi"}}}
	var chunks []model.Chunk
	for c, err := range p.Stream(context.Background(), req) {
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, c)
	}
	return chunks, nil
}

// TestUsage reads each provider's usage off its wire format, normalised
// (model.Usage): Anthropic's input_tokens is already full-price input,
// OpenAI's prompt_tokens includes its cached_tokens.
func TestUsage(t *testing.T) {
	t.Parallel()
	reported := &fakemodel.Usage{Input: 100, CacheRead: 40, CacheWrite: 20, Output: 30, Reasoning: 12}
	tests := []struct {
		provider string
		reply    fakemodel.Reply
		want     *model.Usage
		stop     string
	}{
		{"anthropic", fakemodel.Reply{Text: []string{"hi"}, Usage: reported},
			&model.Usage{InputTokens: 100, CacheReadTokens: 40, CacheWriteTokens: 20, OutputTokens: 30, ReasoningTokens: 12}, "end_turn"},
		// OpenAI reports no cache writes: they are in prompt_tokens.
		{"openai", fakemodel.Reply{Text: []string{"hi"}, Usage: reported},
			&model.Usage{InputTokens: 120, CacheReadTokens: 40, OutputTokens: 30, ReasoningTokens: 12}, "stop"},
		{"openai", fakemodel.Reply{Text: []string{"hi"}, NoUsage: true}, nil, "stop"},
		{"anthropic", fakemodel.Reply{Calls: []fakemodel.Call{{ID: "c1", Name: "f", Input: `{}`}}, Usage: reported},
			&model.Usage{InputTokens: 100, CacheReadTokens: 40, CacheWriteTokens: 20, OutputTokens: 30, ReasoningTokens: 12}, "tool_use"},
		{"openai", fakemodel.Reply{Calls: []fakemodel.Call{{ID: "c1", Name: "f", Input: `{}`}}, Usage: reported},
			&model.Usage{InputTokens: 120, CacheReadTokens: 40, OutputTokens: 30, ReasoningTokens: 12}, "tool_calls"},
	}
	for _, p := range providers {
		for _, tt := range tests {
			if tt.provider != p.name {
				continue
			}
			name := p.name + "/" + tt.stop
			if tt.reply.NoUsage {
				name += "/no usage"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				srv := fakemodel.New(tt.reply)
				t.Cleanup(srv.Close)
				provider, err := p.open(srv)
				if err != nil {
					t.Fatal(err)
				}
				chunks, err := stream(t, provider)
				if err != nil {
					t.Fatal(err)
				}
				last := chunks[len(chunks)-1]
				if last.End == nil {
					t.Fatalf("the last chunk is not the end: %+v", chunks)
				}
				for _, c := range chunks[:len(chunks)-1] {
					if c.End != nil {
						t.Errorf("an End before the last chunk: %+v", chunks)
					}
				}
				end := last.End
				switch {
				case tt.want == nil && end.Usage != nil:
					t.Errorf("usage %+v from a server that reported none", *end.Usage)
				case tt.want != nil && (end.Usage == nil || *end.Usage != *tt.want):
					t.Errorf("usage %+v, want %+v", end.Usage, *tt.want)
				}
				if (end.Model != "claude-test" && end.Model != "gpt-test") || end.StopReason != tt.stop {
					t.Errorf("end %+v: want the model and stop reason %q", end, tt.stop)
				}
				if p.name == "openai" && !srv.Contains(0, `"stream_options":{"include_usage":true}`) {
					t.Errorf("the request does not ask for usage: %s", srv.Requests()[0])
				}
			})
		}
	}
}

// TestUsageDefault: a reply without scripted usage still reports some, as
// a real API always does, so that tests of the host see usage.
func TestUsageDefault(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := fakemodel.New(fakemodel.Reply{Text: []string{"a fairly long answer of some words"}})
			t.Cleanup(srv.Close)
			provider, _ := p.open(srv)
			chunks, err := stream(t, provider)
			if err != nil {
				t.Fatal(err)
			}
			u := chunks[len(chunks)-1].End.Usage
			if u == nil || u.InputTokens <= 0 || u.OutputTokens <= 0 {
				t.Errorf("usage %+v", u)
			}
		})
	}
}

// TestErrors checks that every failure is a classified *model.Error
// carrying the provider's own message, status and wait.
func TestErrors(t *testing.T) {
	t.Parallel()
	date := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name      string
		only      string // a provider, or both
		reply     fakemodel.Reply
		reason    model.Reason
		status    int
		message   string // in the error's Message
		wait      time.Duration
		waitSlack time.Duration
	}{
		{"rate limited", "", fakemodel.Reply{Status: 429, Header: map[string]string{"retry-after": "1"}}, model.ReasonRateLimited, 429, "ate limit", time.Second, 0},
		{"retry-after-ms", "", fakemodel.Reply{Status: 429, Header: map[string]string{"retry-after-ms": "1500", "retry-after": "2"}}, model.ReasonRateLimited, 429, "", 1500 * time.Millisecond, 0},
		{"retry-after date", "", fakemodel.Reply{Status: 503, Header: map[string]string{"retry-after": date}}, model.ReasonOverloaded, 503, "", 30 * time.Second, 2 * time.Second},
		{"auth", "", fakemodel.Reply{Status: 401}, model.ReasonAuth, 401, "", 0, 0},
		{"permission", "", fakemodel.Reply{Status: 403}, model.ReasonAuth, 403, "", 0, 0},
		{"invalid", "", fakemodel.Reply{Status: 400, Message: "messages.0: bad"}, model.ReasonInvalidRequest, 400, "messages.0: bad", 0, 0},
		{"context length", "", fakemodel.Reply{ContextLength: true}, model.ReasonContextLength, 400, "", 0, 0},
		{"internal", "", fakemodel.Reply{Status: 500}, model.ReasonOverloaded, 500, "", 0, 0},
		{"overloaded 529", "anthropic", fakemodel.Reply{Status: 529}, model.ReasonOverloaded, 529, "Overloaded", 0, 0},
		{"a reset connection", "", fakemodel.Reply{Reset: true}, model.ReasonOverloaded, 0, "", 0, 0},
		{"an error event in the stream", "", fakemodel.Reply{StreamError: true}, model.ReasonOverloaded, 0, "", 0, 0},
	}
	for _, p := range providers {
		for _, tt := range tests {
			if tt.only != "" && tt.only != p.name {
				continue
			}
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				srv := fakemodel.New(tt.reply)
				t.Cleanup(srv.Close)
				provider, _ := p.open(srv)
				_, err := stream(t, provider)
				var merr *model.Error
				if !errors.As(err, &merr) {
					t.Fatalf("error %T %v, want a *model.Error", err, err)
				}
				if merr.Reason != tt.reason || merr.Status != tt.status {
					t.Errorf("reason %s, status %d; want %s, %d (%v)", merr.Reason, merr.Status, tt.reason, tt.status, merr)
				}
				if !strings.Contains(merr.Message, tt.message) || merr.Message == "" {
					t.Errorf("message %q, want one with %q", merr.Message, tt.message)
				}
				if tt.status != 0 && (strings.Contains(merr.Message, "POST") || strings.Contains(merr.Message, `"error"`)) {
					t.Errorf("the message is the SDK's dump, not the provider's: %q", merr.Message)
				}
				if d := merr.RetryAfter - tt.wait; d > tt.waitSlack || d < -tt.waitSlack {
					t.Errorf("RetryAfter %s, want %s", merr.RetryAfter, tt.wait)
				}
				if n := len(srv.Requests()); n != 1 {
					t.Errorf("%d requests: the SDK retried (the turn loop retries)", n)
				}
			})
		}
	}
}

// TestOpenAIErrorMessages: the message of an error in an OpenAI-compatible
// server's own shape is still the server's.
func TestOpenAIErrorMessages(t *testing.T) {
	t.Parallel()
	bodies := map[string]string{
		`{"error":"model \"llama9\" not found, try pulling it first"}`:                                  `model "llama9" not found, try pulling it first`,
		`{"object":"error","message":"This model's maximum context length is 4096 tokens.","code":400}`: "This model's maximum context length is 4096 tokens.",
		`not json at all`: "not json at all",
	}
	for body, want := range bodies {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(body))
		})}
		fake := fakemodel.New()
		fake.Config.Handler = srv.Handler
		p, _ := openai.New(model.Config{Name: "llama9", BaseURL: fake.OpenAIURL(), APIKey: "x"})
		_, err := stream(t, p)
		fake.Close()
		var merr *model.Error
		if !errors.As(err, &merr) || merr.Message != want || merr.Reason != model.ReasonInvalidRequest {
			t.Errorf("%s: %+v, want message %q", body, merr, want)
		}
	}
}

// TestStreamCutShort: a stream that ends before the answer does is a
// broken connection (overloaded), not a short answer.
func TestStreamCutShort(t *testing.T) {
	t.Parallel()
	cut := map[string]string{
		"anthropic": "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n",
		"openai": "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n",
	}
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			fake := fakemodel.New()
			t.Cleanup(fake.Close)
			fake.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Write([]byte(cut[p.name]))
			})
			provider, _ := p.open(fake)
			chunks, err := stream(t, provider)
			var merr *model.Error
			if !errors.As(err, &merr) || merr.Reason != model.ReasonOverloaded || len(chunks) != 1 || chunks[0].Text != "Hel" {
				t.Errorf("chunks %+v, error %v: want the text, then overloaded", chunks, err)
			}
		})
	}
}

package model_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/model/openai"
)

// TestMaxTokens sends a turn through each provider's real client to a fake
// of its API and reads max_tokens off the request body.
func TestMaxTokens(t *testing.T) {
	t.Parallel()
	providers := []struct {
		name string
		open func(srv *fakemodel.Server, maxTokens int) (model.Provider, error)
	}{
		{"anthropic", func(srv *fakemodel.Server, n int) (model.Provider, error) {
			return anthropic.New(model.Config{Name: "claude-test", BaseURL: srv.AnthropicURL(), APIKey: "test", MaxTokens: n})
		}},
		{"openai", func(srv *fakemodel.Server, n int) (model.Provider, error) {
			return openai.New(model.Config{Name: "gpt-test", BaseURL: srv.OpenAIURL(), APIKey: "test", MaxTokens: n})
		}},
	}
	tests := []struct {
		name           string
		cfg, req, want int
	}{
		{"the request's wins", 1000, 123, 123},
		{"the config's when the request has none", 1000, 0, 1000},
		{"the default when neither has one", 0, 0, model.MaxTokensDefault},
	}
	for _, p := range providers {
		for _, tt := range tests {
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				srv := fakemodel.New()
				t.Cleanup(srv.Close)
				provider, err := p.open(srv, tt.cfg)
				if err != nil {
					t.Fatal(err)
				}
				req := &model.Request{Messages: []model.Message{{Role: model.User, Text: "hi"}}, MaxTokens: tt.req}
				for _, err := range provider.Stream(context.Background(), req) {
					if err != nil {
						t.Fatalf("streaming: %v", err)
					}
				}
				reqs := srv.Requests()
				if len(reqs) != 1 {
					t.Fatalf("the server got %d requests, want 1", len(reqs))
				}
				var body struct {
					MaxTokens *int `json:"max_tokens"`
				}
				if err := json.Unmarshal(reqs[0], &body); err != nil {
					t.Fatalf("decoding the request body: %v", err)
				}
				if body.MaxTokens == nil || *body.MaxTokens != tt.want {
					t.Errorf("max_tokens in %s, want %d", reqs[0], tt.want)
				}
			})
		}
	}
}

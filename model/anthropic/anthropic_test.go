package anthropic_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
)

// TestMaxTokens sends a turn through the real client to a fake Messages API
// and reads max_tokens off the request body.
func TestMaxTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		cfg, req, want int
	}{
		{"the request's wins", 1000, 123, 123},
		{"the config's when the request has none", 1000, 0, 1000},
		{"the default when neither has one", 0, 0, model.MaxTokensDefault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := fakemodel.New()
			t.Cleanup(srv.Close)
			p, err := anthropic.New(model.Config{Name: "claude-test", BaseURL: srv.AnthropicURL(), APIKey: "test", MaxTokens: tt.cfg})
			if err != nil {
				t.Fatal(err)
			}
			req := &model.Request{Messages: []model.Message{{Role: model.User, Text: "hi"}}, MaxTokens: tt.req}
			for _, err := range p.Stream(context.Background(), req) {
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

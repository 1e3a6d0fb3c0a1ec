package model_test

import (
	"context"
	"iter"
	"testing"

	"github.com/agentsdk/agentsdk/model"
)

type nopProvider struct{}

func (nopProvider) Stream(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
	return func(func(model.Chunk, error) bool) {}
}

// TestOpenMaxTokens checks that Open hands the provider MaxTokensDefault
// when the configuration has no cap, and the configuration's otherwise.
func TestOpenMaxTokens(t *testing.T) {
	t.Parallel()
	var got int // Open calls the opener before it returns
	model.Register("test-maxtokens", func(cfg model.Config) (model.Provider, error) {
		got = cfg.MaxTokens
		return nopProvider{}, nil
	})
	tests := []struct {
		name      string
		cfg, want int
	}{
		{"unset", 0, model.MaxTokensDefault},
		{"set", 100, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { // sequential: they share got
			if _, err := model.Open(model.Config{Provider: "test-maxtokens", Name: "m", MaxTokens: tt.cfg}); err != nil {
				t.Fatalf("opening: %v", err)
			}
			if got != tt.want {
				t.Errorf("the provider got MaxTokens %d, want %d", got, tt.want)
			}
		})
	}
}

package agentmain

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/model"
	_ "github.com/agentsdk/agentsdk/model/anthropic"
)

// agent.yaml's compaction: reaches the host's options; compaction.model
// is a second provider of the same kind, named in ModelConfig.
func TestCompactionOptions(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "k") // a provider without credentials is not opened (modelkey.go)
	path := filepath.Join(t.TempDir(), "agent.yaml")
	const agent = "model: {provider: anthropic, name: claude-sonnet-4-5, baseURL: http://127.0.0.1:9, thinking: {budgetTokens: 2000}, contextWindow: 100000}\n"
	tests := []struct {
		name, yaml, flag string
		want             host.CompactionOptions
		summarizer       string // the summaries' model, "" for the turns'
		said             string // on stderr
	}{
		{"absent", agent, "", host.CompactionOptions{}, "", ""},
		{"every key", agent + "compaction: {threshold: 0.6, keepTurns: 3, clearBytes: 4096, prompt: Be terse., summaryTokens: 500, model: claude-haiku-4-5}\n", "",
			host.CompactionOptions{Threshold: 0.6, KeepTurns: 3, ClearBytes: 4096, Prompt: "Be terse.", SummaryTokens: 500}, "claude-haiku-4-5", ""},
		{"off", agent + "compaction: {enabled: false, model: claude-haiku-4-5}\n", "", host.CompactionOptions{Off: true}, "", ""},
		{"no clearing", agent + "compaction: {clearBytes: -1}\n", "", host.CompactionOptions{ClearBytes: -1}, "", ""},
		{"clearing every result", agent + "compaction: {clearBytes: 0}\n", "", host.CompactionOptions{ClearBytes: 1}, "", ""},
		{"the turns' own model", agent + "compaction: {model: claude-sonnet-4-5}\n", "", host.CompactionOptions{}, "", ""},
		{"--model of another provider", agent + "compaction: {model: claude-haiku-4-5}\n", "openai/gpt-4o", host.CompactionOptions{}, "",
			"compaction.model claude-haiku-4-5 is left out: --model chose provider openai, not agent.yaml's anthropic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			opts, _, err := hostOptions(path, tt.flag, slog.New(slog.DiscardHandler), Stdio{Out: io.Discard, Err: &stderr}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := opts.Compaction
			if (got.Model != nil) != (tt.summarizer != "") {
				t.Errorf("Model = %v, want one: %v", got.Model, tt.summarizer != "")
			}
			if tt.summarizer != "" {
				want := model.Config{Provider: "anthropic", Name: tt.summarizer, BaseURL: "http://127.0.0.1:9"}
				if got.ModelConfig.Provider != want.Provider || got.ModelConfig.Name != want.Name || got.ModelConfig.BaseURL != want.BaseURL ||
					got.ModelConfig.Thinking != nil || got.ModelConfig.ContextWindow != 0 {
					t.Errorf("ModelConfig = %+v, want %+v", got.ModelConfig, want)
				}
			}
			got.Model, got.ModelConfig = nil, model.Config{}
			if got != tt.want {
				t.Errorf("Compaction = %+v, want %+v", got, tt.want)
			}
			if !strings.Contains(stderr.String(), tt.said) || (tt.said == "" && strings.Contains(stderr.String(), "compaction")) {
				t.Errorf("stderr: %q, want %q", stderr.String(), tt.said)
			}
			if opts.ModelConfig.ContextWindow != 100000 && tt.flag == "" {
				t.Errorf("the turns' ModelConfig lost contextWindow: %+v", opts.ModelConfig)
			}
		})
	}
}

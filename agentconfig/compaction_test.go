package agentconfig

import (
	"strings"
	"testing"
)

// compaction: and model.contextWindow are read, and refused with an error
// naming the key.
func TestCompaction(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml, err string
		check           func(Config) bool
	}{
		{"absent: the defaults", "maxSteps: 3\n", "", func(c Config) bool { return c.Compaction == Compaction{} && !c.Compaction.Off() }},
		{"every key", `
model: {provider: anthropic, name: claude-sonnet-4-5, contextWindow: 100000}
compaction:
  enabled: true
  threshold: 0.5
  keepTurns: 3
  clearBytes: 4096
  model: claude-haiku-4-5
  prompt: Summarise tersely.
  summaryTokens: 1000
`, "", func(c Config) bool {
			m := c.Compaction
			return c.Model.ContextWindow == 100000 && !m.Off() && *m.Threshold == 0.5 && *m.KeepTurns == 3 && *m.ClearBytes == 4096 &&
				m.Model == "claude-haiku-4-5" && *m.Prompt == "Summarise tersely." && *m.SummaryTokens == 1000
		}},
		{"off", "compaction: {enabled: false}\n", "", func(c Config) bool { return c.Compaction.Off() }},
		{"the whole window", "compaction: {threshold: 1}\n", "", func(c Config) bool { return *c.Compaction.Threshold == 1 }},
		{"no clearing", "compaction: {clearBytes: -1}\n", "", func(c Config) bool { return *c.Compaction.ClearBytes == -1 }},
		{"clearing every result", "compaction: {clearBytes: 0}\n", "", func(c Config) bool { return *c.Compaction.ClearBytes == 0 }},
		{"a window over the default answer", "model: {contextWindow: 8192}\n", "", func(c Config) bool { return c.Model.ContextWindow == 8192 }},
		{"a threshold of 0", "compaction: {threshold: 0}\n", "compaction.threshold is 0: want a share of the context window above 0 and at most 1", nil},
		{"a threshold over 1", "compaction: {threshold: 1.5}\n", "compaction.threshold is 1.5", nil},
		{"a percentage", "compaction: {threshold: 80}\n", "compaction.threshold is 80", nil},
		{"no turns kept", "compaction: {keepTurns: 0}\n", "compaction.keepTurns is 0: want 1 or more", nil},
		{"clearBytes below -1", "compaction: {clearBytes: -2}\n", "compaction.clearBytes is -2: want a size in bytes, or -1", nil},
		{"an empty prompt", "compaction: {prompt: \"  \"}\n", "compaction.prompt is empty", nil},
		{"no summary tokens", "compaction: {summaryTokens: 0}\n", "compaction.summaryTokens is 0: want a number of tokens", nil},
		{"a model name with spaces", "compaction: {model: \" claude-haiku-4-5\"}\n", `compaction.model " claude-haiku-4-5"`, nil},
		{"an unknown key", "compaction: {keep: 2}\n", `unknown key "keep" under compaction (did you mean "keepTurns"?)`, nil},
		{"not a number", "compaction: {threshold: high}\n", "line 1: cannot unmarshal", nil},
		{"a negative window", "model: {contextWindow: -1}\n", "model.contextWindow is -1: want the model's context window in tokens", nil},
		{"a window no larger than maxTokens", "model: {maxTokens: 8192, contextWindow: 8192}\n", "model.contextWindow is 8192: not more than model.maxTokens (8192)", nil},
		{"a window under the default answer", "model: {contextWindow: 1000}\n", "model.contextWindow is 1000: not more than model.maxTokens (4096)", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := loadYAML(t, tt.yaml)
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("Load: %v, want an error with %q", err, tt.err)
			case tt.err == "" && err != nil:
				t.Errorf("Load: %v", err)
			case tt.check != nil && !tt.check(c):
				t.Errorf("Load = %+v", c.Compaction)
			}
		})
	}
}

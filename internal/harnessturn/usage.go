package harnessturn

import (
	"encoding/json"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentsdk/agentsdk/api"
)

// usageOf is what a harness said its prompt consumed, as a model.usage
// record (provider: the runtime; model: the one it names, else the
// spec's); Reported is false when it said nothing (Codex's adapter, which
// reports only the context's fill). Claude Code answers with ACP's usage
// (the prompt's tokens), Gemini CLI with _meta.quota.token_count and, per
// model, model_usage.
func usageOf(spec string, specModel string, res acp.PromptResponse, took time.Duration) api.ModelUsage {
	u := api.ModelUsage{Provider: spec, Model: specModel, DurationMs: took.Milliseconds(), StopReason: string(res.StopReason), Reported: true}
	if n := res.Usage; n != nil {
		u.InputTokens, u.OutputTokens = bounded(n.InputTokens), bounded(n.OutputTokens)
		u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens = boundedPtr(n.CachedReadTokens), boundedPtr(n.CachedWriteTokens), boundedPtr(n.ThoughtTokens)
		return u
	}
	raw, ok := res.Meta["quota"]
	if !ok {
		u.Reported = false
		return u
	}
	b, err := json.Marshal(raw)
	var q struct {
		TokenCount *struct {
			Input  int `json:"input_tokens"`
			Output int `json:"output_tokens"`
		} `json:"token_count"`
		ModelUsage []struct {
			Model string `json:"model"`
		} `json:"model_usage"`
	}
	if err != nil || json.Unmarshal(b, &q) != nil || q.TokenCount == nil {
		u.Reported = false
		return u
	}
	u.InputTokens, u.OutputTokens = bounded(q.TokenCount.Input), bounded(q.TokenCount.Output)
	if len(q.ModelUsage) == 1 && q.ModelUsage[0].Model != "" {
		u.Model = clip(q.ModelUsage[0].Model, 128)
	}
	return u
}

// maxTokens bounds a harness's figure of one prompt: a harness is a
// program the host does not control.
const maxTokens = 1 << 40

func bounded(n int) int64 { return min(max(int64(n), 0), maxTokens) }

func boundedPtr(n *int) int64 {
	if n == nil {
		return 0
	}
	return bounded(*n)
}

package agentconfig

import (
	"fmt"
	"strings"

	"github.com/agentsdk/agentsdk/model"
)

// Compaction is agent.yaml's compaction:, which keeps model turns within
// the model's context window (model.contextWindow, else the shipped
// table's): past Threshold of the window, old tool results larger than
// ClearBytes are cleared, then the conversation before the last
// KeepTurns turns is summarised by a model call (Model, else the agent's
// own, with Prompt as its system prompt and at most SummaryTokens of
// answer). Absent keys take the host's defaults.
//
//	compaction:
//	  enabled: true          # the default; false: never compacted nor cleared
//	  threshold: 0.8         # share of the window (above 0, at most 1)
//	  keepTurns: 2           # the last turns kept verbatim (1 or more)
//	  clearBytes: 2048       # old results larger than this are cleared first; -1: none are
//	  model: claude-haiku-4-5 # another model of the same provider writes the summaries
//	  prompt: Summarise the conversation for the agent to go on.
//	  summaryTokens: 2048    # most tokens of a summary
type Compaction struct {
	Enabled       *bool    `yaml:"enabled"`
	Threshold     *float64 `yaml:"threshold"`
	KeepTurns     *int     `yaml:"keepTurns"`
	ClearBytes    *int     `yaml:"clearBytes"`
	Model         string   `yaml:"model"`
	Prompt        *string  `yaml:"prompt"`
	SummaryTokens *int     `yaml:"summaryTokens"`
}

// Off reports whether enabled: false turns compaction and clearing off.
func (c Compaction) Off() bool { return c.Enabled != nil && !*c.Enabled }

// validate checks compaction:'s values, each error naming its key.
func (c Compaction) validate() error {
	if t := c.Threshold; t != nil && (*t <= 0 || *t > 1) {
		return fmt.Errorf("compaction.threshold is %v: want a share of the context window above 0 and at most 1, such as 0.8", *t)
	}
	if k := c.KeepTurns; k != nil && *k < 1 {
		return fmt.Errorf("compaction.keepTurns is %d: want 1 or more (the running turn is always kept)", *k)
	}
	if b := c.ClearBytes; b != nil && *b < -1 {
		return fmt.Errorf("compaction.clearBytes is %d: want a size in bytes, or -1 to clear no results", *b)
	}
	if c.Model != strings.TrimSpace(c.Model) {
		return fmt.Errorf("compaction.model %q: a model name has no spaces around it", c.Model)
	}
	if p := c.Prompt; p != nil && strings.TrimSpace(*p) == "" {
		return fmt.Errorf("compaction.prompt is empty: leave it out for the default prompt")
	}
	if n := c.SummaryTokens; n != nil && *n < 1 {
		return fmt.Errorf("compaction.summaryTokens is %d: want a number of tokens, such as 2048", *n)
	}
	return nil
}

// validateWindow checks model.contextWindow: a number of tokens, 0 for
// the shipped table's, with room for an answer of model.maxTokens (its
// default when absent).
func (c Config) validateWindow() error {
	w, answer := c.Model.ContextWindow, int64(c.Model.MaxTokens)
	if answer == 0 {
		answer = model.MaxTokensDefault
	}
	switch {
	case w < 0:
		return fmt.Errorf("model.contextWindow is %d: want the model's context window in tokens (leave it out for the shipped table's)", w)
	case w > 0 && answer >= w:
		return fmt.Errorf("model.contextWindow is %d: not more than model.maxTokens (%d), it leaves no room for the conversation", w, answer)
	}
	return nil
}

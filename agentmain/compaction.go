package agentmain

import (
	"fmt"
	"io"

	"github.com/agentsdk/agentsdk/agentconfig"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/model"
)

// compactionOptions are agent.yaml's compaction: as the host takes them.
// turns is the turns' model (agent.yaml's, or --model's), opened is
// whether it could be. A compaction.model is opened as another provider
// of the same kind — the same key and base URL, no thinking nor
// reasoning effort (a summary needs neither, and a smaller model may take
// neither) — unless it names the turns' model, the turns have no model,
// or --model chose another provider than agent.yaml's (the name would
// mean nothing there: it is left out, saying so on errOut).
func compactionOptions(c agentconfig.Compaction, yamlProvider string, turns model.Config, opened bool, errOut io.Writer) (host.CompactionOptions, error) {
	o := host.CompactionOptions{Off: c.Off()}
	if c.Threshold != nil {
		o.Threshold = *c.Threshold
	}
	if c.KeepTurns != nil {
		o.KeepTurns = *c.KeepTurns
	}
	if c.ClearBytes != nil {
		switch b := *c.ClearBytes; {
		case b < 0:
			o.ClearBytes = -1
		case b == 0:
			// The host's 0 is its default: agent.yaml's 0 (clear every
			// old result) is results of more than a byte, as near as it
			// gets.
			o.ClearBytes = 1
		default:
			o.ClearBytes = b
		}
	}
	if c.Prompt != nil {
		o.Prompt = *c.Prompt
	}
	if c.SummaryTokens != nil {
		o.SummaryTokens = *c.SummaryTokens
	}
	if c.Model == "" || c.Model == turns.Name || o.Off {
		return o, nil
	}
	if turns.Provider != yamlProvider {
		fmt.Fprintf(errOut, "compaction.model %s is left out: --model chose provider %s, not agent.yaml's %s; the summaries are %s's\n", c.Model, turns.Provider, yamlProvider, turns.Name)
		return o, nil
	}
	if !opened {
		return o, nil
	}
	cfg := turns
	cfg.Name, cfg.Thinking, cfg.ReasoningEffort, cfg.ContextWindow = c.Model, nil, "", 0
	p, err := model.Open(cfg)
	if err != nil {
		return o, fmt.Errorf("compaction.model %s: %w", c.Model, err)
	}
	o.Model, o.ModelConfig = p, cfg
	return o, nil
}

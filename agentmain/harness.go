package agentmain

import (
	"fmt"
	"time"

	"github.com/agentsdk/agentsdk/agentconfig"
	"github.com/agentsdk/agentsdk/internal/harness"
)

// harnessSpecs are the harnesses sessions may run on: the built-in
// claude-code, codex and gemini (with agent.yaml's settings, if any) and
// the agent's own ACP agents.
func harnessSpecs(cfg agentconfig.Config) (map[string]harness.Spec, error) {
	specs := map[string]harness.Spec{}
	for _, name := range agentconfig.BuiltinHarnesses {
		specs[name] = harness.Spec{Name: name}
	}
	for name, c := range cfg.Harnesses {
		s := harness.Spec{Name: name, Command: c.Command, Args: c.Args, Env: c.Env, Model: c.Model,
			Permissions: harness.Permissions{Allow: c.Permissions.Allow, Ask: c.Permissions.Ask, Deny: c.Permissions.Deny, Always: c.Permissions.Always},
			HangTimeout: time.Duration(c.HangTimeout)}
		if err := s.Check(); err != nil {
			return nil, fmt.Errorf("agent.yaml: harnesses.%s: %w", name, err)
		}
		specs[name] = s
	}
	return specs, nil
}

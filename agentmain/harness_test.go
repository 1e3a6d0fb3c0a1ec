package agentmain

import (
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/agentconfig"
)

// The built-in harnesses are always there; agent.yaml's settings and its
// own harnesses join them; a permission rule naming no ACP kind is refused.
func TestHarnessSpecs(t *testing.T) {
	specs, err := harnessSpecs(agentconfig.Config{Harnesses: map[string]agentconfig.Harness{
		"codex": {Model: "gpt-5.4", Permissions: agentconfig.HarnessPermissions{Allow: []string{"read", "execute:go test*"}, Always: []string{"execute:go test*"}}},
		"mine":  {Command: "/bin/mine", Args: []string{"--acp"}, HangTimeout: agentconfig.Duration(-1)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 4 || specs["claude-code"].Name != "claude-code" || specs["codex"].Model != "gpt-5.4" || specs["mine"].Args[0] != "--acp" || specs["codex"].Permissions.Always[0] != "execute:go test*" || specs["mine"].HangTimeout != -1 {
		t.Errorf("specs %+v", specs)
	}
	for _, p := range []agentconfig.HarnessPermissions{{Deny: []string{"shell"}}, {Always: []string{"shell:ls"}}} {
		_, err = harnessSpecs(agentconfig.Config{Harnesses: map[string]agentconfig.Harness{"codex": {Permissions: p}}})
		if err == nil || !strings.Contains(err.Error(), `"shell" is not an ACP tool kind`) {
			t.Errorf("a rule naming no kind (%+v): %v", p, err)
		}
	}
}

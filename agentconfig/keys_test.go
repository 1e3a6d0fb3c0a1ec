package agentconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An unknown key in agent.yaml is named with its line and level, the key
// it most likely meant, and the keys that level takes.
func TestUnknownKeys(t *testing.T) {
	top := "auth, compaction, github, harnesses, limits, maxResumes, maxSteps, mcp, mode, model, modelRetries, modelTimeout, pricing, runtime, slack, system, telemetry, toolConcurrency"
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"a typo at the top", "modle:\n  name: x\n",
			[]string{`line 1: unknown key "modle" (did you mean "model"?); the keys of the top level are: ` + top}},
		{"snake case", "system: hi\nmax_steps: 3\n",
			[]string{`line 2: unknown key "max_steps" (did you mean "maxSteps"?)`}},
		{"under model", "model:\n  provider: openai\n  nmae: gpt-4o\n",
			[]string{`line 3: unknown key "nmae" under model (did you mean "name"?); the keys of model are: apiKey, baseURL, contextWindow, maxTokens, name, provider, reasoningEffort, thinking`}},
		{"under a named MCP server", "mcp:\n  github: {comand: github-mcp-server}\n",
			[]string{`line 2: unknown key "comand" under mcp.github (did you mean "command"?); the keys of mcp.github are: args, bearerToken, command, env, headers, url`}},
		{"deep", "limits:\n  session: {usd: 5, dollars: 3}\n",
			[]string{`unknown key "dollars" under limits.session; the keys of limits.session are: tokens, usd`}},
		{"nothing near", "colour: blue\n",
			[]string{`line 1: unknown key "colour"; the keys of the top level are: ` + top}},
		{"two", "modle: {}\nsytem: hi\n",
			[]string{"unknown keys:\n  line 1: unknown key \"modle\" (did you mean \"model\"?)", "\n  line 2: unknown key \"sytem\" (did you mean \"system\"?)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agent.yaml")
			os.WriteFile(path, []byte(tt.yaml), 0o644)
			_, err := Load(path)
			var uk UnknownKeysError
			if !errors.As(err, &uk) {
				t.Fatalf("error = %v, want an UnknownKeysError", err)
			}
			if !strings.HasPrefix(err.Error(), "reading "+path+": ") {
				t.Errorf("error does not name the file: %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	// Keys under maps are names of the user's, and values that read
	// themselves (durations, dollars) are left to them.
	path := filepath.Join(t.TempDir(), "agent.yaml")
	os.WriteFile(path, []byte("mcp:\n  anything-goes: {url: http://x}\npricing:\n  my-model: {input: 3}\nmodelTimeout: 5m\nbase: &b {maxTokens: 10}\n"), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), `unknown key "base"`) {
		t.Errorf("error = %v, want only base refused", err)
	} else if strings.Contains(err.Error(), "anything-goes") || strings.Contains(err.Error(), "my-model") {
		t.Errorf("a map's key refused: %v", err)
	}
}

func TestClosest(t *testing.T) {
	keys := []string{"mode", "model", "maxSteps", "system", "url", "env"}
	for key, want := range map[string]string{"modle": "model", "mdoe": "mode", "MaxSteps": "maxSteps", "max-steps": "maxSteps", "systme": "system", "ur": "url", "xyz": "", "provider": "", "mod": "mode"} {
		if got := closest(key, keys); got != want {
			t.Errorf("closest(%q) = %q, want %q", key, got, want)
		}
	}
}

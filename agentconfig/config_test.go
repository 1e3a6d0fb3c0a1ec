package agentconfig

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/model/anthropic"
)

// The optional parts built into an agent follow agent.yaml, the OTLP
// variables and the store's location.
func TestExtras(t *testing.T) {
	t.Setenv(StoreEnvVar, "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	os.Unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, yaml, storeFlag, storeEnv string
		want                            []string
	}{
		{"nothing", "", "", "", nil},
		{"mcp and otlp", "mcp:\n  docs: {url: http://x}\ntelemetry: {otlp: true}\n", "", "", []string{"mcpconn", "agentmain/otlp"}},
		{"postgres by flag", "", "postgres://h/db", "", []string{"store/postgres"}},
		{"postgres by variable", "", "", "postgresql://h/db", []string{"store/postgres"}},
		{"the flag wins", "", "state/agent.db", "postgres://h/db", nil},
		{"a SQLite file", "", "/var/lib/agent.db", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(StoreEnvVar, tt.storeEnv)
			if err := os.WriteFile(Path(dir), []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := Extras(dir, tt.storeFlag)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("Extras = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// An empty agent.yaml is an empty configuration; unknown keys are refused.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.yaml")
	os.WriteFile(path, nil, 0o644)
	if _, err := Load(path); err != nil {
		t.Errorf("empty file: %v", err)
	}
	os.WriteFile(path, []byte("modle: x\n"), 0o644)
	if _, err := Load(path); err == nil {
		t.Error("an unknown key was accepted")
	}
	if c, err := Load(filepath.Join(dir, "missing.yaml")); err != nil || c.Model.Provider != "" {
		t.Errorf("missing file: %+v, %v", c, err)
	}
}

// A bare slack: or github: turns the part on with its defaults.
func TestBarePlatformKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.yaml")
	os.WriteFile(path, []byte("slack:\ngithub:\n"), 0o644)
	c, err := Load(path)
	if err != nil || c.Slack == nil || c.GitHub == nil {
		t.Fatalf("Load = %+v, %v", c, err)
	}
	os.WriteFile(path, []byte("model: {provider: anthropic}\n"), 0o644)
	if c, err := Load(path); err != nil || c.Slack != nil || c.GitHub != nil {
		t.Fatalf("without the keys: %+v, %v", c, err)
	}
}

// Message content is captured when agent.yaml or the GenAI
// instrumentations' variable says so, and only then.
func TestContentCaptured(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.yaml")
	tests := []struct {
		name, yaml, env string
		want            bool
	}{
		{"by default", "", "", false},
		{"agent.yaml", "telemetry: {captureContent: true}\n", "", true},
		{"the variable", "", "true", true},
		{"the variable, as newer instrumentations spell it", "", "SPAN_ONLY", true},
		{"spans and events", "", "span_and_event", true},
		{"the variable says no", "", "false", false},
		{"no content", "", "NO_CONTENT", false},
		{"events only, which the host does not emit", "", "EVENT_ONLY", false},
		{"either one", "telemetry: {captureContent: true}\n", "false", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(CaptureContentEnvVar, tt.env)
			if err := os.WriteFile(path, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Telemetry.ContentCaptured(); got != tt.want {
				t.Errorf("ContentCaptured() = %v, want %v", got, tt.want)
			}
		})
	}
}

// The settings of model calls are checked, each error naming its key.
func TestModelSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.yaml")
	tests := []struct {
		name, yaml, err string
		check           func(Config) bool
	}{
		{"retries", "modelRetries: 5\n", "", func(c Config) bool { return c.ModelRetries != nil && *c.ModelRetries == 5 }},
		{"no retries", "modelRetries: 0\n", "", func(c Config) bool { return c.ModelRetries != nil && *c.ModelRetries == 0 }},
		{"retries unset", "maxSteps: 3\n", "", func(c Config) bool { return c.ModelRetries == nil }},
		{"too many retries", "modelRetries: 11\n", "modelRetries is 11: want 0 to 10", nil},
		{"negative retries", "modelRetries: -1\n", "modelRetries is -1", nil},
		{"resumes", "maxResumes: 4\n", "", func(c Config) bool { return c.MaxResumes != nil && *c.MaxResumes == 4 }},
		{"never resume", "maxResumes: 0\n", "", func(c Config) bool { return c.MaxResumes != nil && *c.MaxResumes == 0 }},
		{"resumes unset", "maxSteps: 3\n", "", func(c Config) bool { return c.MaxResumes == nil }},
		{"too many resumes", "maxResumes: 11\n", "maxResumes is 11: want 0 to 10", nil},
		{"negative resumes", "maxResumes: -1\n", "maxResumes is -1", nil},
		{"thinking", "model: {provider: anthropic, name: claude-sonnet-4-5, thinking: {budgetTokens: 8000}}\n", "",
			func(c Config) bool { return c.Model.Thinking != nil && c.Model.Thinking.BudgetTokens == 8000 }},
		{"thinking too small for anthropic", "model: {provider: anthropic, name: x, thinking: {budgetTokens: 512}}\n", "model.thinking.budgetTokens is 512: Anthropic's extended thinking takes 1024 or more", nil},
		{"thinking of nothing", "model: {provider: openai, name: x, thinking: {budgetTokens: 0}}\n", "model.thinking.budgetTokens is 0", nil},
		{"an unknown thinking key", "model: {thinking: {budget: 10}}\n", "budget", nil},
		{"reasoning effort", "model: {provider: openai, name: o3, reasoningEffort: high}\n", "", func(c Config) bool { return c.Model.ReasoningEffort == "high" }},
		{"a reasoning effort unknown", "model: {provider: openai, name: o3, reasoningEffort: extreme}\n", `model.reasoningEffort is "extreme": want one of minimal, low, medium, high`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.WriteFile(path, []byte(tt.yaml), 0o644)
			c, err := Load(path)
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("Load: %v, want an error with %q", err, tt.err)
			case tt.err == "" && err != nil:
				t.Errorf("Load: %v", err)
			case tt.check != nil && !tt.check(c):
				t.Errorf("Load = %+v", c)
			}
		})
	}
}

func TestAnthropicThinkingMin(t *testing.T) {
	if anthropicThinkingMin != anthropic.ThinkingBudgetMin {
		t.Errorf("anthropicThinkingMin %d, model/anthropic's %d", anthropicThinkingMin, anthropic.ThinkingBudgetMin)
	}
}

func TestRuntime(t *testing.T) {
	for _, c := range []struct{ yaml, err string }{
		{"runtime: claude-code\n", ""},
		{"runtime: native\n", ""},
		{"runtime: mine\nharnesses:\n  mine: {command: /bin/mine, args: [--acp]}\n", ""},
		{"harnesses:\n  codex: {model: gpt-5.4, permissions: {allow: [read], deny: [\"execute:rm*\"], always: [\"execute:go test*\"]}, hangTimeout: 10m}\n", ""},
		{"runtime: claud\n", `runtime "claud": want one of native, claude-code, codex, gemini`},
		{"harnesses:\n  mine: {args: [--acp]}\n", "harnesses.mine: command is required"},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "agent.yaml")
		if err := os.WriteFile(path, []byte(c.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(path)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.yaml, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: %v, want %q", c.yaml, err, c.err)
		case c.err == "" && strings.Contains(c.yaml, "codex") && (cfg.Harnesses["codex"].Permissions.Deny[0] != "execute:rm*" || cfg.Harnesses["codex"].Permissions.Always[0] != "execute:go test*" || time.Duration(cfg.Harnesses["codex"].HangTimeout) != 10*time.Minute):
			t.Errorf("%q: %+v", c.yaml, cfg.Harnesses)
		}
	}
}

package agentconfig

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
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

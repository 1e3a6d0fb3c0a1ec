package agentmain

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentsdk/agentsdk/agentconfig"
	"github.com/agentsdk/agentsdk/host"
)

// agent.yaml's model and telemetry: section name the GenAI spans' model
// and turn content capture on.
func TestHostTelemetryOptions(t *testing.T) {
	t.Setenv(agentconfig.CaptureContentEnvVar, "")
	path := filepath.Join(t.TempDir(), "agent.yaml")
	yaml := "model: {provider: anthropic, name: claude-sonnet-4-5}\ntelemetry: {captureContent: true}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	opts, _, err := hostOptions(path, "openai/gpt-4o", slog.New(slog.DiscardHandler), Stdio{Out: io.Discard, Err: io.Discard}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The spans name the model the host is given (ModelConfig, which
	// they default to): --model wins over agent.yaml.
	if want := (host.TelemetryOptions{CaptureContent: true}); opts.Telemetry != want {
		t.Errorf("Telemetry = %+v, want %+v", opts.Telemetry, want)
	}
	if opts.ModelConfig.Provider != "openai" || opts.ModelConfig.Name != "gpt-4o" {
		t.Errorf("ModelConfig = %+v, want openai/gpt-4o", opts.ModelConfig)
	}
}

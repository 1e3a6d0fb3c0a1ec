package agentmain

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/tool"
)

// A provider with no credentials at all is named at startup with the
// variable to set, and the first turn fails model_not_configured saying
// the same, not with the provider SDK's advice or a 401.
func TestMissingKey(t *testing.T) {
	for _, v := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE", "ANTHROPIC_FEDERATION_RULE_ID", "ANTHROPIC_CUSTOM_HEADERS",
		"OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY"} {
		t.Setenv(v, "")
	}
	t.Setenv("ANTHROPIC_CONFIG_DIR", filepath.Join(t.TempDir(), "none")) // no profiles
	tests := []struct {
		name, yaml string
		env        map[string]string
		said       string // on stderr, and the turn's reason; "" for none
	}{
		{"anthropic", "model: {provider: anthropic, name: claude-sonnet-4-5}\n", nil,
			"anthropic: no API key: set ANTHROPIC_API_KEY (or model.apiKey in agent/agent.yaml)"},
		{"anthropic with a key", "model: {provider: anthropic, name: claude-sonnet-4-5}\n", map[string]string{"ANTHROPIC_API_KEY": "k"}, ""},
		{"anthropic with model.apiKey", "model: {provider: anthropic, name: claude-sonnet-4-5, apiKey: k}\n", nil, ""},
		{"anthropic with a profile", "model: {provider: anthropic, name: claude-sonnet-4-5}\n", map[string]string{"ANTHROPIC_PROFILE": "work"}, ""},
		{"openai", "model: {provider: openai, name: gpt-4o}\n", nil,
			"openai: no API key: set OPENAI_API_KEY (or model.apiKey in agent/agent.yaml; OPENAI_BASE_URL or model.baseURL for a server that needs none, such as Ollama)"},
		{"openai on a local server", "model: {provider: openai, name: llama3, baseURL: http://127.0.0.1:11434/v1}\n", nil, ""},
		{"gemini", "model: {provider: gemini, name: gemini-2.5-flash}\n", nil,
			"gemini: no API key: set GEMINI_API_KEY (or GOOGLE_API_KEY, or model.apiKey in agent/agent.yaml)"},
		{"gemini with GOOGLE_API_KEY", "model: {provider: gemini, name: gemini-2.5-flash}\n", map[string]string{"GOOGLE_API_KEY": "k"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			path := filepath.Join(t.TempDir(), "agent.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			opts, _, err := hostOptions(path, "", slog.New(slog.DiscardHandler), Stdio{Out: io.Discard, Err: &stderr}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.said == "" {
				if strings.Contains(stderr.String(), "no API key") {
					t.Errorf("a warning with credentials at hand:\n%s", stderr.String())
				}
				return
			}
			if want := "model turns will fail: " + tt.said + "\n"; stderr.String() != want {
				t.Errorf("stderr:\n%q\nwant\n%q", stderr.String(), want)
			}
			if opts.Model != nil || !errors.Is(opts.ModelError, model.ErrNotConfigured) {
				t.Fatalf("Model %v, ModelError %v: want none, and a kind of model.ErrNotConfigured", opts.Model, opts.ModelError)
			}
			failed := firstTurnFailure(t, opts)
			if failed.Code != api.FailureNotConfigured || failed.Reason != tt.said {
				t.Errorf("turn.failed %+v, want code %s and reason %q", failed, api.FailureNotConfigured, tt.said)
			}
		})
	}
}

// Under --replay the cassettes answer: a provider without a key is
// opened as before, without a warning.
func TestMissingKeyReplaying(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
	t.Setenv("ANTHROPIC_CONFIG_DIR", filepath.Join(t.TempDir(), "none"))
	path := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(path, []byte("model: {provider: anthropic, name: claude-sonnet-4-5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	opts, _, err := hostOptionsFor(path, "", slog.New(slog.DiscardHandler), Stdio{Out: io.Discard, Err: &stderr}, Options{}, hostUse{serving: true, replaying: true})
	if err != nil {
		t.Fatal(err)
	}
	if opts.Model == nil || stderr.Len() != 0 {
		t.Errorf("replaying: Model %v (%v), stderr %q", opts.Model, opts.ModelError, stderr.String())
	}
}

// firstTurnFailure runs a session's first turn on a host with opts (the
// memory store) and returns its turn.failed.
func firstTurnFailure(t *testing.T, opts *host.Options) api.TurnFailed {
	t.Helper()
	ctx := context.Background()
	set, err := tool.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	opts.StateRoot = t.TempDir()
	h, err := host.New(set, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	sess, turnID, err := h.Sessions().Create(ctx, host.SessionOptions{Message: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	for e, err := range h.Sessions().Follow(ctx, sess.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case e.TurnID != turnID:
		case e.Kind == api.KindTurnFailed:
			f, err := api.Decode[api.TurnFailed](e)
			if err != nil {
				t.Fatal(err)
			}
			return f
		case e.Kind == api.KindTurnCompleted:
			t.Fatalf("the turn completed")
		}
	}
	t.Fatal("the stream ended before the turn did")
	return api.TurnFailed{}
}

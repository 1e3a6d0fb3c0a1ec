package agentmain

import (
	"os"
	"path/filepath"

	"github.com/agentsdk/agentsdk/model"
)

// openModel opens the provider of cfg, unless it has no credentials at
// all: then the error says which variable to set (or model.apiKey), where
// the provider's SDK would fail the first turn with advice of its own
// (Anthropic's: to run another product's login command) or with the
// provider's 401.
func openModel(cfg model.Config) (model.Provider, error) {
	if err := missingKey(cfg, os.Getenv); err != nil {
		return nil, err
	}
	return model.Open(cfg)
}

// keyError is a provider without credentials. It is a kind of
// model.ErrNotConfigured, so that a turn failing for it is
// model_not_configured, with its own message.
type keyError struct{ msg string }

func (e *keyError) Error() string        { return e.msg }
func (e *keyError) Is(target error) bool { return target == model.ErrNotConfigured }

// missingKey says which variable to set when cfg's provider has no
// credentials from agent.yaml or the environment (getenv), or nil. It
// holds back where the provider may find them elsewhere: OpenAI with a
// base URL (a local server needs no key), Anthropic with a profile,
// federation or headers of its SDK's.
func missingKey(cfg model.Config, getenv func(string) string) error {
	if cfg.APIKey != "" || cfg.Name == "" {
		return nil // model.Open says what a nameless model lacks
	}
	set := func(names ...string) bool {
		for _, n := range names {
			if getenv(n) != "" {
				return true
			}
		}
		return false
	}
	const yaml = "model.apiKey in agent/agent.yaml"
	switch cfg.Provider {
	case "anthropic":
		if set("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE", "ANTHROPIC_FEDERATION_RULE_ID", "ANTHROPIC_CUSTOM_HEADERS") || anthropicProfiles(getenv) {
			return nil
		}
		return &keyError{"anthropic: no API key: set ANTHROPIC_API_KEY (or " + yaml + ")"}
	case "openai":
		if set("OPENAI_API_KEY", "OPENAI_BASE_URL") || cfg.BaseURL != "" {
			return nil
		}
		return &keyError{"openai: no API key: set OPENAI_API_KEY (or " + yaml + "; OPENAI_BASE_URL or model.baseURL for a server that needs none, such as Ollama)"}
	case "gemini":
		if set("GEMINI_API_KEY", "GOOGLE_API_KEY") {
			return nil
		}
		return &keyError{"gemini: no API key: set GEMINI_API_KEY (or GOOGLE_API_KEY, or " + yaml + ")"}
	}
	return nil
}

// anthropicProfiles reports whether the Anthropic SDK's configuration
// directory exists (ANTHROPIC_CONFIG_DIR, else $XDG_CONFIG_HOME/anthropic,
// else ~/.config/anthropic), where its login keeps profiles that may hold
// credentials.
func anthropicProfiles(getenv func(string) string) bool {
	dir := getenv("ANTHROPIC_CONFIG_DIR")
	switch {
	case dir != "":
	case getenv("XDG_CONFIG_HOME") != "":
		dir = filepath.Join(getenv("XDG_CONFIG_HOME"), "anthropic")
	default:
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return false
		}
		dir = filepath.Join(home, ".config", "anthropic")
	}
	_, err := os.Stat(dir)
	return err == nil
}

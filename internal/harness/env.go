package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Packages are the npm packages of the built-in harnesses, installed with
// npm install -g <package>, and the program each puts on PATH.
var Packages = map[string]struct{ Package, Program string }{
	ClaudeCode: {"@zed-industries/claude-agent-acp", "claude-agent-acp"},
	Codex:      {"@zed-industries/codex-acp", "codex-acp"},
	Gemini:     {"@google/gemini-cli", "gemini"},
}

// command is the harness's argv.
func command(s Spec) ([]string, error) {
	if s.Command != "" {
		return append([]string{s.Command}, s.Args...), nil
	}
	pkg, ok := Packages[s.Name]
	if !ok {
		return nil, fmt.Errorf("harness %s: command is required (the program that speaks ACP on stdio)", s.Name)
	}
	path, err := exec.LookPath(pkg.Program)
	if err != nil {
		return nil, fmt.Errorf("harness %s: %s is not on PATH: install it with `npm install -g %s`, or set harnesses.%s.command in agent.yaml", s.Name, pkg.Program, pkg.Package, s.Name)
	}
	args := s.Args
	if s.Name == Gemini {
		args = append([]string{"--acp"}, args...)
		if s.Model != "" {
			args = append(args, "--model", s.Model)
		}
	}
	return append([]string{path}, args...), nil
}

// environ is the harness's environment: the host's without IS_SANDBOX
// (a value other than 1 makes Claude Code refuse to start as root; 1
// turns its permission prompts off), with HOME its own, what each harness
// needs to run unattended, and the spec's Env last.
func environ(s Spec, home string, host []string) ([]string, error) {
	env := map[string]string{}
	for _, kv := range host {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "IS_SANDBOX" || strings.HasPrefix(k, "AGENT_SDK_") {
			continue
		}
		env[k] = v
	}
	env["HOME"] = home
	env["XDG_CONFIG_HOME"] = filepath.Join(home, ".config")
	env["XDG_DATA_HOME"] = filepath.Join(home, ".local", "share")
	env["XDG_CACHE_HOME"] = filepath.Join(home, ".cache")
	switch s.Name {
	case ClaudeCode:
		env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
		env["DISABLE_TELEMETRY"] = "1"
		env["DISABLE_AUTOUPDATER"] = "1"
		env["DISABLE_ERROR_REPORTING"] = "1"
		if s.Model != "" {
			env["ANTHROPIC_MODEL"] = s.Model
		}
	case Codex:
		env["CODEX_HOME"] = filepath.Join(home, ".codex")
	case Gemini:
		env["GEMINI_CLI_TRUST_WORKSPACE"] = "true" // else the MCP servers given are silently dropped
	}
	for k, v := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("harness %s: env %q is not a variable name and value", s.Name, k)
		}
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}

// lookup is the value of k in env.
func lookup(env []string, k string) string {
	for _, kv := range env {
		if name, v, ok := strings.Cut(kv, "="); ok && name == k {
			return v
		}
	}
	return ""
}

// prepareHome writes what a harness reads from its HOME before it starts:
// Codex's config.toml, where its model, approval policy and provider are
// set (kept if the agent's HOME already has one).
func prepareHome(s Spec, home string, env []string) error {
	if s.Name != Codex {
		return nil
	}
	dir := filepath.Join(home, ".codex")
	path := filepath.Join(dir, "config.toml")
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("harness codex: making CODEX_HOME: %w", err)
	}
	var b strings.Builder
	model := s.Model
	if model == "" {
		model = "gpt-5.4"
	}
	fmt.Fprintf(&b, "model = %s\n", strconv.Quote(model))
	// Every command not known to be safe asks: the agent's permissions
	// policy and its approvals decide. Codex's own sandbox needs
	// bubblewrap and its sandbox helper on PATH; without them sandboxed
	// commands cannot run at all.
	b.WriteString("approval_policy = \"untrusted\"\n")
	if _, err := exec.LookPath("bwrap"); err == nil {
		b.WriteString("sandbox_mode = \"workspace-write\"\n")
	} else {
		b.WriteString("sandbox_mode = \"danger-full-access\"\n")
	}
	if base := lookup(env, "OPENAI_BASE_URL"); base != "" {
		b.WriteString("model_provider = \"agentsdk\"\n\n[model_providers.agentsdk]\nname = \"agentsdk\"\n")
		fmt.Fprintf(&b, "base_url = %s\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n", strconv.Quote(strings.TrimRight(base, "/")))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("harness codex: writing its config.toml: %w", err)
	}
	return nil
}

// Package harness runs a coding-agent harness (Claude Code, Codex, Gemini
// CLI, or any other agent that speaks the Agent Client Protocol) as the
// runtime of a session's turns: it starts the harness's process in the
// session's workspace, in a process group of its own with a HOME of its
// own, drives it over ACP (JSON-RPC on stdio, github.com/coder/acp-go-sdk),
// and hands what it reports and asks to the host.
package harness

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Runtime names. Native is the host's own model loop; the others are
// harnesses driven over ACP. A name that is none of these is a harness
// the agent configures itself (Spec.Command), as is ACP.
const (
	Native     = "native"
	ClaudeCode = "claude-code"
	Codex      = "codex"
	Gemini     = "gemini"
	ACP        = "acp"
)

// Spec is how to run one harness: its program, its model and what it may
// do without asking a person.
type Spec struct {
	// Name is the runtime's name: claude-code, codex, gemini, acp, or
	// one of the agent's own.
	Name string
	// Command and Args start the harness. For the built-in harnesses an
	// empty Command is the package's program found on PATH
	// (claude-agent-acp, codex-acp, gemini --acp).
	Command string
	Args    []string
	// Env is added to the harness's environment (the host's, without
	// IS_SANDBOX, with HOME set to the harness's own).
	Env map[string]string
	// Model is the harness's model, "" for its default.
	Model string
	// Permissions answers the harness's permission requests without a
	// person where it can.
	Permissions Permissions
	// HangTimeout is how long a prompted harness may send nothing before
	// its turn fails as hung (Options.HangTimeout): 0 for
	// DefaultHangTimeout, negative never.
	HangTimeout time.Duration
}

// Permissions is a policy over a harness's permission requests, by ACP
// tool kind (read, edit, delete, move, search, execute, think, fetch,
// other) or kind:pattern, where the pattern is a glob (* for any run of
// characters) over the request's title as the harness gives it (the
// shell command, the file): "execute:go test*", "edit:*.md". Deny is checked
// first, then Allow, then Ask; a request none of them names is asked.
// Always names the requests that, once allowed (by Allow or by a person),
// are answered "allow always" where the harness offers it; every other
// allowed request is answered "allow once", so the harness asks again
// next time.
type Permissions struct {
	Allow  []string `json:"allow,omitempty" yaml:"allow,omitempty"`
	Ask    []string `json:"ask,omitempty" yaml:"ask,omitempty"`
	Deny   []string `json:"deny,omitempty" yaml:"deny,omitempty"`
	Always []string `json:"always,omitempty" yaml:"always,omitempty"`
}

// Kinds are ACP's tool kinds, which Permissions names.
var Kinds = []string{"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"}

// Builtin reports whether name is one of the harnesses the SDK knows how
// to start without a Command.
func Builtin(name string) bool {
	return name == ClaudeCode || name == Codex || name == Gemini
}

// Check says what is wrong with s, if anything: an ACP or custom harness
// without a command, a permission rule naming no kind.
func (s Spec) Check() error {
	if s.Name == "" || s.Name == Native {
		return fmt.Errorf("harness spec: a harness needs a name other than %q", Native)
	}
	if !Builtin(s.Name) && s.Command == "" {
		return fmt.Errorf("harness %s: command is required (the program that speaks ACP on stdio)", s.Name)
	}
	for _, list := range [][]string{s.Permissions.Allow, s.Permissions.Ask, s.Permissions.Deny, s.Permissions.Always} {
		for _, r := range list {
			kind, _, _ := strings.Cut(r, ":")
			if !slices.Contains(Kinds, kind) {
				return fmt.Errorf("harness %s: permission rule %q: %q is not an ACP tool kind (%s)", s.Name, r, kind, strings.Join(Kinds, ", "))
			}
		}
	}
	return nil
}

// Names lists the runtimes a host with the harnesses specs can run: native
// and the harnesses, sorted.
func Names(specs map[string]Spec) []string {
	names := []string{Native}
	for n := range specs {
		names = append(names, n)
	}
	sort.Strings(names[1:])
	return names
}

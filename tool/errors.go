package tool

import (
	"fmt"
	"strings"
)

// UnknownToolError is returned for a call of a tool that is not in the set.
type UnknownToolError struct {
	Name      string   // the name asked for
	Available []string // the tools there are, sorted
}

func (e *UnknownToolError) Error() string {
	if len(e.Available) == 0 {
		return fmt.Sprintf("unknown tool %q: no tools are defined", e.Name)
	}
	return fmt.Sprintf("unknown tool %q (available: %s)", e.Name, strings.Join(e.Available, ", "))
}

// AgentToolError is returned for a call on the host of an agent tool, which
// only runs as a script where the agent runs.
type AgentToolError struct {
	Name string
}

func (e *AgentToolError) Error() string {
	return fmt.Sprintf("tool %q is an agent tool: it runs as a script in the agent's workspace, not on the host", e.Name)
}

// InputError is returned for input that does not match a tool's schema. It
// lists every violation, each with its path.
type InputError struct {
	Tool       string
	Violations []Violation
}

func (e *InputError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid input for tool %s: ", e.Tool)
	for i, v := range e.Violations {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(v.String())
	}
	return b.String()
}

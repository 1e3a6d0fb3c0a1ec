package tool

import (
	"fmt"

	"github.com/agentsdk/agentsdk/internal/define"
)

// registry holds the tools defined with Define and DefineScript, like
// database/sql's driver registry: written at package init, read at start.
// Channels and schedules keep theirs the same way (internal/define).
var registry = toolRegistry{define.New[*Tool]("tool", "; use tool.New for explicit names")}

type toolRegistry struct{ *define.Registry[*Tool] }

// add records a definition made at file:line and returns the tool, or nil
// if the definition failed. A second tool in one file is refused, though
// it is returned.
func (r toolRegistry) add(t *Tool, err error, file string, line int) *Tool {
	r.Add(t, err, file, line)
	if err != nil {
		return nil
	}
	return t
}

// Registered returns the set of tools defined with [Define] and
// [DefineScript] in the packages this program imports. The error reports
// every invalid definition, every file that defines more than one tool, and
// every name defined twice; a program should refuse to start on it.
func Registered() (*Set, error) {
	tools, err := registry.All()
	if err != nil {
		return nil, err
	}
	set, err := NewSet(tools...)
	if err != nil {
		return nil, fmt.Errorf("defining tools: %w", err)
	}
	return set, nil
}

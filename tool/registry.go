package tool

import (
	"errors"
	"fmt"
	"sync"
)

// registry holds the tools defined with Define and DefineScript, like
// database/sql's driver registry: written at package init, read at start.
var registry = &toolRegistry{byFile: map[string]string{}}

type toolRegistry struct {
	mu     sync.Mutex
	tools  []*Tool
	byFile map[string]string // file -> file:line of the tool it defines
	errs   []error
}

// add records a definition made at file:line and returns the tool, or nil
// if the definition failed.
func (r *toolRegistry) add(t *Tool, err error, file string, line int) *Tool {
	r.mu.Lock()
	defer r.mu.Unlock()
	pos := fmt.Sprintf("%s:%d", file, line)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %w", pos, err))
		return nil
	}
	if first, ok := r.byFile[file]; ok {
		r.errs = append(r.errs, fmt.Errorf("two tools defined in one file: %s and %s (a file defines one tool, named after the file; use tool.New for explicit names)", first, pos))
		return t
	}
	r.byFile[file] = pos
	r.tools = append(r.tools, t)
	return t
}

// Registered returns the set of tools defined with [Define] and
// [DefineScript] in the packages this program imports. The error reports
// every invalid definition, every file that defines more than one tool, and
// every name defined twice; a program should refuse to start on it.
func Registered() (*Set, error) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	set, err := NewSet(registry.tools...)
	if errs := registry.errs; len(errs) > 0 || err != nil {
		return nil, fmt.Errorf("defining tools: %w", errors.Join(append(errs, err)...))
	}
	return set, nil
}

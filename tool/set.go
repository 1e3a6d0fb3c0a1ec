package tool

import (
	"fmt"
	"slices"
	"strings"
)

// Set is a collection of tools with unique names, listed in name order.
type Set struct {
	byName map[string]*Tool
	sorted []*Tool
}

// NewSet returns a set of the given tools. Two tools with one name are an
// error naming both definitions.
func NewSet(tools ...*Tool) (*Set, error) {
	s := &Set{byName: make(map[string]*Tool, len(tools))}
	for i, t := range tools {
		if t == nil {
			return nil, fmt.Errorf("building tool set: tool %d is nil", i)
		}
		if prev, ok := s.byName[t.name]; ok {
			return nil, fmt.Errorf("building tool set: two tools are named %s (%s and %s)", t.name, orUnknown(prev.pos), orUnknown(t.pos))
		}
		s.byName[t.name] = t
		s.sorted = append(s.sorted, t)
	}
	slices.SortFunc(s.sorted, func(a, b *Tool) int { return strings.Compare(a.name, b.name) })
	return s, nil
}

func orUnknown(pos string) string {
	if pos == "" {
		return "unknown position"
	}
	return pos
}

// Lookup returns the tool with the given name.
func (s *Set) Lookup(name string) (*Tool, bool) {
	t, ok := s.byName[name]
	return t, ok
}

// Len returns the number of tools.
func (s *Set) Len() int { return len(s.sorted) }

// Tools returns the tools in name order.
func (s *Set) Tools() []*Tool { return slices.Clone(s.sorted) }

// Names returns the tools' names in order.
func (s *Set) Names() []string {
	names := make([]string, len(s.sorted))
	for i, t := range s.sorted {
		names[i] = t.name
	}
	return names
}

// Infos describes every tool, in name order.
func (s *Set) Infos() []Info {
	infos := make([]Info, len(s.sorted))
	for i, t := range s.sorted {
		infos[i] = t.Info()
	}
	return infos
}

package host

import "github.com/agentsdk/agentsdk/internal/harness"

// TEMPORARY until the plumb branch merges.
func (h *Host) Harness(name string) (harness.Spec, bool) {
	s, ok := h.opts.Harnesses[name]
	return s, ok
}


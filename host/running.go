package host

import "slices"

// RunningTurns returns the ids of the sessions whose turn this host is
// running now (a model turn, or a direct call's), sorted. A short-lived
// host, such as the agent binary's call command, waits for it to be empty
// before it closes: closing ends the turns it runs (turn.failed,
// interrupted).
func (h *Host) RunningTurns() []string {
	l := h.leases
	l.mu.Lock()
	ids := make([]string, 0, len(l.running))
	for id := range l.running {
		ids = append(ids, id)
	}
	l.mu.Unlock()
	slices.Sort(ids)
	return ids
}

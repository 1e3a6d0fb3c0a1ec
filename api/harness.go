package api

// Plan is a harness's plan for the turn, whole each time it changes (ACP's
// plan update): the entries replace the previous plan's.
type Plan struct {
	Entries []PlanEntry `json:"entries"`
}

// PlanEntry is one task of a [Plan].
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority,omitempty"` // high, medium, low
	Status   string `json:"status,omitempty"`   // pending, in_progress, completed
}

// EventKind returns [KindPlan].
func (Plan) EventKind() Kind { return KindPlan }

// HarnessSession records which session of a harness a turn ran in: the
// harness's own id for it, which a later turn continues (ACP's
// session/load) where the harness can. Loaded says the turn continued it;
// FromHistory says a new harness session was started with the
// conversation so far in its first prompt (the harness could not
// continue its own).
type HarnessSession struct {
	Runtime     string `json:"runtime"`
	SessionID   string `json:"sessionId"`
	Agent       string `json:"agent,omitempty"` // the harness's name and version, as it says
	Loaded      bool   `json:"loaded,omitempty"`
	FromHistory bool   `json:"fromHistory,omitempty"`
}

// EventKind returns [KindHarnessSession].
func (HarnessSession) EventKind() Kind { return KindHarnessSession }

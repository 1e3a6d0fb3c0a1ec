package api

import (
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// Mode says where a session's turns run.
type Mode string

// Session modes.
const (
	ModeLocal Mode = "local" // turns run in the host
	ModeCloud Mode = "cloud" // turns run on a remote runner
)

// Session is a conversation on a channel, with its own workspace.
type Session struct {
	ID        string `json:"id"`
	Channel   string `json:"channel"`
	Mode      Mode   `json:"mode"`
	Principal string `json:"principal"`
	// Runtime is what runs its turns: "" for the host's own model loop
	// (native), else a harness (claude-code, codex, gemini, an ACP agent).
	Runtime   string    `json:"runtime,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// LastSeq is the sequence number of the session's newest event.
	LastSeq int64 `json:"lastSeq"`
	// RunningTurn is the id of the running turn, or "".
	RunningTurn string `json:"runningTurn,omitempty"`
	// CompactedSeq is the seq of the session's latest context.compacted
	// event (0: never compacted): a turn reads the session from there.
	CompactedSeq int64 `json:"compactedSeq,omitempty"`
	// Usage is what the session's model calls consumed, when the host
	// says (GET /v1/session/{id}, the session list).
	Usage *Usage `json:"usage,omitempty"`
}

// TurnKind says what a turn runs.
type TurnKind string

// Turn kinds.
const (
	TurnModel   TurnKind = "model"   // a model turn, started by a message
	TurnCall    TurnKind = "call"    // a direct call made in the session
	TurnCompact TurnKind = "compact" // POST /v1/session/{id}/compact
)

// TurnStatus is where a turn stands.
type TurnStatus string

// Turn statuses. A parked turn (waiting for approvals) is running.
const (
	TurnStatusRunning   TurnStatus = "running"
	TurnStatusCompleted TurnStatus = "completed"
	TurnStatusFailed    TurnStatus = "failed"
)

// Turn is one model run or one direct call in a session.
type Turn struct {
	SessionID string     `json:"sessionId"`
	ID        string     `json:"id"`
	Kind      TurnKind   `json:"kind"`
	Status    TurnStatus `json:"status"`
	Reason    string     `json:"reason,omitempty"`
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
}

// ApprovalStatus is where a parked call stands. It is declared in package
// tool, so that a tool.Handle can read and decide approvals.
type ApprovalStatus = tool.ApprovalStatus

// Approval statuses.
const (
	ApprovalPending  = tool.ApprovalPending
	ApprovalApproved = tool.ApprovalApproved
	ApprovalDenied   = tool.ApprovalDenied
	ApprovalExpired  = tool.ApprovalExpired
	// ApprovalCancelled: its turn was cancelled while it waited
	// (POST /v1/session/{id}/cancel); a decision after that is refused
	// with already_resolved, and the call never runs.
	ApprovalCancelled = tool.ApprovalCancelled
)

// ApprovalStatuses lists every approval status.
var ApprovalStatuses = tool.ApprovalStatuses

// Approval is a gated call parked until a person decides. Its input is the
// validated input as stored when it parked: approving runs exactly that.
// It is declared in package tool (tool.ApprovalState), so that a
// tool.Handle can read and decide approvals.
type Approval = tool.ApprovalState

// Outcome is the result of a direct call.
type Outcome = tool.Outcome

package tool

import (
	"encoding/json"
	"time"
)

// ApprovalStatus is where a parked call stands (api.ApprovalStatus is
// this type).
type ApprovalStatus string

// Approval statuses.
const (
	ApprovalPending  ApprovalStatus = "pending"
	ApprovalApproved ApprovalStatus = "approved"
	ApprovalDenied   ApprovalStatus = "denied"
	ApprovalExpired  ApprovalStatus = "expired"
	// ApprovalCancelled: its turn was cancelled while it waited; nobody
	// can decide it any more, and it never runs.
	ApprovalCancelled ApprovalStatus = "cancelled"
)

// ApprovalStatuses lists every approval status.
var ApprovalStatuses = []ApprovalStatus{ApprovalPending, ApprovalApproved, ApprovalDenied, ApprovalExpired, ApprovalCancelled}

// Valid reports whether s is one of [ApprovalStatuses].
func (s ApprovalStatus) Valid() bool {
	for _, v := range ApprovalStatuses {
		if s == v {
			return true
		}
	}
	return false
}

// ApprovalState is a gated call parked until a person decides, and the
// decision once made (api.Approval is this type). Its input is the
// validated input as stored when it parked: approving runs exactly that.
type ApprovalState struct {
	CallID      string          `json:"callId"`
	SessionID   string          `json:"sessionId,omitempty"`
	TurnID      string          `json:"turnId,omitempty"`
	ModelCallID string          `json:"modelCallId,omitempty"`
	Tool        string          `json:"tool"`
	Input       json.RawMessage `json:"input"`
	RequestedBy string          `json:"requestedBy"`
	RequestedAt time.Time       `json:"requestedAt"`
	ExpiresAt   time.Time       `json:"expiresAt"`
	Status      ApprovalStatus  `json:"status"`
	DecidedBy   string          `json:"decidedBy,omitempty"`
	DecidedAt   *time.Time      `json:"decidedAt,omitempty"`
	Reason      string          `json:"reason,omitempty"`
	// Outcome is the call's outcome once known, or nil.
	Outcome *Outcome `json:"outcome,omitempty"`

	// OriginalInput is the input asked for when an approver changed it
	// (Input is then what runs); absent otherwise.
	OriginalInput json.RawMessage `json:"originalInput,omitempty"`
	// Quorum is how many distinct approvals the call needs, under its
	// tool's [ApprovalPolicy]; absent (0) for one.
	Quorum int `json:"quorum,omitempty"`
	// Approvals are the approvals recorded so far (of the input as it
	// stands: an edit drops those before it), oldest first; absent for a
	// call decided by one decision.
	Approvals []ApprovalVote `json:"approvals,omitempty"`
}

// ApprovalVote is one principal's approval of a call that needs several.
type ApprovalVote struct {
	// By is who approved, as recorded ("key:<id>", "bearer-token:alice").
	By string    `json:"by"`
	At time.Time `json:"at"`
	// Edited says this approval changed the input.
	Edited bool `json:"edited,omitempty"`
}

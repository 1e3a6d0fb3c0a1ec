package api

import (
	"encoding/json"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// The request and response bodies of the HTTP API. Every response has
// "ok": true, or is an [ErrorResponse] with "ok": false. (Structs whose
// fields are in alphabetical order keep the order the API has always
// written.)

// OKResponse is the body of GET /healthz and of POST …/session/<id>/cancel.
type OKResponse struct {
	OK bool `json:"ok"`
}

// ToolList is the body of GET /<slug>/v1/tools.
type ToolList struct {
	OK    bool        `json:"ok"`
	Tools []tool.Info `json:"tools"`
}

// CallRequest is the body of POST /<slug>/v1/tools/<name>.
type CallRequest struct {
	// Input is the tool's input; absent means {}.
	Input     json.RawMessage `json:"input,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
}

// CallResponse is the body of a direct call that ran (200).
type CallResponse struct {
	OK bool `json:"ok"`
	Outcome
}

// CallState is where a gated direct call stands: [CallAwaitingApproval],
// [CallRunning], or once it has its outcome the approval's status.
type CallState string

// Call states that are not approval statuses.
const (
	CallAwaitingApproval CallState = "approval_pending"
	CallRunning          CallState = "running"
)

// CallPending is the body of a direct call of a gated tool still waiting
// for a decision (202): how to decide it, and where its outcome will be.
type CallPending struct {
	Approve string    `json:"approve"`
	CallID  string    `json:"callId"`
	OK      bool      `json:"ok"`
	Outcome string    `json:"outcome"`
	Status  CallState `json:"status"`
}

// CallStatus is the body of GET /<slug>/v1/calls/<callId> while the call
// has no outcome: Status is approval_pending or running.
type CallStatus struct {
	Approval Approval  `json:"approval"`
	CallID   string    `json:"callId"`
	OK       bool      `json:"ok"`
	Status   CallState `json:"status"`
}

// CallDone is the body of GET /<slug>/v1/calls/<callId> once the call has
// its outcome: Status is the decision (approved, denied, expired, or
// cancelled with its turn).
type CallDone struct {
	CallID     string          `json:"callId"`
	DurationMs int64           `json:"durationMs"`
	IsError    bool            `json:"isError"`
	OK         bool            `json:"ok"`
	Result     json.RawMessage `json:"result"`
	Status     CallState       `json:"status"`
	ToolName   string          `json:"toolName"`
}

// CreateSessionRequest is the body of POST /<slug>/v1/session; all of it
// is optional.
type CreateSessionRequest struct {
	Channel string `json:"channel,omitempty"`
	Message string `json:"message,omitempty"`
	// Mode is where the session's turns run: local (in the host) or cloud
	// (on a runner); "" for the agent's default.
	Mode Mode `json:"mode,omitempty"`
	// Runtime is what runs its turns: native (the host's model loop) or a
	// harness the agent configures (claude-code, codex, gemini, an ACP
	// agent); "" for the agent's default (runtime: in agent.yaml).
	Runtime string `json:"runtime,omitempty"`
}

// SendRequest is the body of POST /<slug>/v1/session/<id>/messages.
type SendRequest struct {
	Message string `json:"message"`
}

// TurnStartedResponse is the body of a new session (201) and of a message
// sent (202). TurnID is "" for a session opened without a message.
type TurnStartedResponse struct {
	OK        bool   `json:"ok"`
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId"`
}

// SessionResponse is the body of GET /<slug>/v1/session/<id>.
type SessionResponse struct {
	OK      bool    `json:"ok"`
	Session Session `json:"session"`
}

// SessionList is the body of GET /<slug>/v1/sessions: newest first, and
// the cursor of the next page ("" after the last).
type SessionList struct {
	Next     string    `json:"next"`
	OK       bool      `json:"ok"`
	Sessions []Session `json:"sessions"`
}

// EventList is the body of GET /<slug>/v1/session/<id>/events?follow=false.
type EventList struct {
	Events []Event `json:"events"`
	OK     bool    `json:"ok"`
}

// ResolveRequest is the body of POST …/approvals/<callId>. Approved is
// required.
//
// The decider is the request's principal. OnBehalfOf names a person the
// caller decides for, recorded as "<principal>:<onBehalfOf>": only an
// admin may say it (on_behalf_not_allowed), and the decision still counts
// as the admin's for a tool's approver policy. By, its older name, is
// refused: from a principal that is not an admin as on_behalf_not_allowed,
// from an admin as malformed_json naming onBehalfOf. It stays a field so
// that the refusal can say so.
//
// Input, with an approval, is the input the approver wants run instead of
// the one asked for: it is validated against the tool's schema
// (invalid_input, the call stays parked), the tool's NeedsApproval is asked
// again (an edit that no longer needs approval runs at once), and a tool
// whose policy says NoEdit refuses it (edit_not_allowed).
type ResolveRequest struct {
	Approved *bool  `json:"approved"`
	Reason   string `json:"reason,omitempty"`
	// By is refused by the host (see above): send OnBehalfOf.
	By         string          `json:"by,omitempty"`
	OnBehalfOf string          `json:"onBehalfOf,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
}

// ApprovalResponse is the body of a decision taken.
type ApprovalResponse struct {
	Approval Approval `json:"approval"`
	OK       bool     `json:"ok"`
}

// ApprovalList is the body of GET /<slug>/v1/approvals: oldest first, and
// the cursor of the next page.
type ApprovalList struct {
	Approvals []Approval `json:"approvals"`
	Next      string     `json:"next"`
	OK        bool       `json:"ok"`
}

// ArtifactList is the body of GET /<slug>/v1/session/<id>/artifacts.
type ArtifactList struct {
	Artifacts []tool.FileInfo `json:"artifacts"`
	OK        bool            `json:"ok"`
}

// ErrorResponse is the body of every error: {"ok": false, "error": {…}}.
type ErrorResponse struct {
	OK    bool   `json:"ok"`
	Error *Error `json:"error"`
}

// UsageReport is the body of GET /<slug>/v1/usage: what model calls made
// in [From, To) consumed, in total and, with by=, a group per principal,
// channel, model or session — the costliest first. To is null for "until
// now".
type UsageReport struct {
	OK     bool         `json:"ok"`
	From   time.Time    `json:"from"`
	To     *time.Time   `json:"to"`
	By     string       `json:"by,omitempty"`
	Total  Usage        `json:"total"`
	Groups []UsageGroup `json:"groups"`
}

// UsageGroup is one group of a [UsageReport]: its principal, channel,
// model or session, and what its calls consumed.
type UsageGroup struct {
	Key   string `json:"key"`
	Usage Usage  `json:"usage"`
}

// CompactResponse answers POST /v1/session/{id}/compact: the turn it ran
// and, when Compacted, the context.compacted event's payload and seq;
// else Reason says why nothing was compacted, and Code why it failed.
type CompactResponse struct {
	OK        bool              `json:"ok"`
	TurnID    string            `json:"turnId,omitempty"`
	Compacted bool              `json:"compacted"`
	Seq       int64             `json:"seq,omitempty"`
	Context   *ContextCompacted `json:"context,omitempty"`
	// Code, when the compaction failed, classifies why (as turn.failed's
	// code: rate_limited, budget_exceeded, model_not_configured, …).
	Code   FailureCode `json:"code,omitempty"`
	Reason string      `json:"reason,omitempty"`
}

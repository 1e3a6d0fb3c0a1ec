package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"time"
)

// Handle is what every entry point of an agent acts through: a tool's
// call (a [Call] embeds it), a channel's routes and onStart hook, a
// schedule's run, and the serve host itself (host.Host.Handle). The same
// methods with the same semantics everywhere: call a tool directly, send a
// message into a session on any channel, read and follow a session, read
// and decide parked calls, and reach the host's services. A channel needs
// nothing else: the built-in Slack channel is made of a Handle.
type Handle struct {
	// Host holds the host's shared services: KV, Files, MCP, Otel,
	// Reminders.
	Host Services

	backend Backend
}

// Backend is the host side of a [Handle]; hosts implement it.
type Backend interface {
	Sessions
	Approvals
	CallTool(ctx context.Context, name string, input any, opts *CallToolOptions) (*Outcome, error)
}

// Approvals reads and decides parked calls; hosts provide it, as part of
// a [Backend].
type Approvals interface {
	GetApproval(ctx context.Context, callID string) (ApprovalState, error)
	ListApprovals(ctx context.Context, status ApprovalStatus, opts *ListOptions) ([]ApprovalState, string, error)
	Decide(ctx context.Context, channelID, callID string, d Decision) (ApprovalState, error)
}

// ListOptions page a listing. Nil means defaults.
type ListOptions struct {
	Limit  int    // at most this many (default 100, at most 1000)
	Cursor string // from the previous page
}

// Decision is a person's decision on a parked call, made through a
// channel ([Handle.Decide]).
type Decision struct {
	Approved bool
	// Reason says why; a denial should give one.
	Reason string
	// User is the channel's authenticated user who decided (a Slack user
	// id, a GitHub login): 1 to 200 bytes, no spaces or control
	// characters. The decision is recorded as by "<channel>:<user>".
	User string
}

// NewHandle returns a handle on a host's services and backend. Hosts call
// it; agents are given handles.
func NewHandle(services Services, b Backend) Handle {
	return Handle{Host: services.withDefaults(), backend: b}
}

// CallToolOptions modify Handle.CallTool. Nil means defaults.
type CallToolOptions struct {
	// SessionID binds the call to a session: it runs in the session's
	// workspace and is recorded on its stream under a turn of its own; it
	// fails with session_busy while another turn runs there.
	SessionID string
	// Wait is how long a call of a gated tool waits for a person's
	// decision; after it the call stays parked and CallTool returns an
	// error saying so (the host's ApprovalPendingError). Zero: at once.
	Wait time.Duration
	// Principal is who asks, recorded on a parked call.
	Principal string
}

// Outcome is a direct call's outcome: the envelope of POST
// /<slug>/v1/tools/<name> (api.Outcome is this type).
type Outcome struct {
	ToolName   string          `json:"toolName"`
	CallID     string          `json:"callId"`
	IsError    bool            `json:"isError"`
	Result     json.RawMessage `json:"result"`
	DurationMs int64           `json:"durationMs"`
}

var errHandleNotConfigured = fmt.Errorf("handle: %w: this handle belongs to no host; hosts make handles (host.Host.Handle)", ErrNotConfigured)

// CallTool calls one of the agent's server tools directly, with no model:
// the same validation, execution and errors as POST /<slug>/v1/tools/<name>.
// input is raw JSON (json.RawMessage or []byte) or any value that encodes to
// a JSON object. A tool's failure is an Outcome with IsError; an error is a
// call that did not run (unknown tool, invalid input, busy, parked).
func (h Handle) CallTool(ctx context.Context, name string, input any, opts *CallToolOptions) (*Outcome, error) {
	if h.backend == nil {
		return nil, errHandleNotConfigured
	}
	return h.backend.CallTool(ctx, name, input, opts)
}

// Send starts a model turn with message on a channel: in a new session, in
// opts.SessionID's, or in the session opts.Key names on that channel (made
// on first use, resumed after). It returns the session's id and the id of
// the turn it started, whose events [Handle.Follow] reads. A session whose
// turn is running refuses it with session_busy.
func (h Handle) Send(ctx context.Context, channelID, message string, opts *SendOptions) (sessionID, turnID string, err error) {
	if h.backend == nil {
		return "", "", errSessionsNotConfigured
	}
	return h.backend.Send(ctx, channelID, message, opts)
}

// Follow yields a session's events after seq after: the stored ones, then
// each new one once it is stored, in seq order, each once, until ctx ends
// (then it returns without an error) or the loop breaks. A failed read is
// yielded as an error, after which the sequence ends; follow again after
// the last seq seen to resume. api.Decode reads an event's payload.
func (h Handle) Follow(ctx context.Context, sessionID string, after int64) iter.Seq2[Event, error] {
	if h.backend == nil {
		return func(yield func(Event, error) bool) { yield(Event{}, errSessionsNotConfigured) }
	}
	return h.backend.Follow(ctx, sessionID, after)
}

// GetApproval reads a parked (or decided) call.
func (h Handle) GetApproval(ctx context.Context, callID string) (ApprovalState, error) {
	if h.backend == nil {
		return ApprovalState{}, errSessionsNotConfigured
	}
	return h.backend.GetApproval(ctx, callID)
}

// ListApprovals lists the calls in a status (pending: those waiting for a
// decision), oldest first, and the cursor of the next page ("" after the
// last).
func (h Handle) ListApprovals(ctx context.Context, status ApprovalStatus, opts *ListOptions) ([]ApprovalState, string, error) {
	if h.backend == nil {
		return nil, "", errSessionsNotConfigured
	}
	return h.backend.ListApprovals(ctx, status, opts)
}

// Decide approves or denies a parked call as a channel's authenticated
// user, recorded as by "<channel>:<user>" — exactly as POST
// /<slug>/v1/approvals/<id> decides it: once (a call decided already is
// already_resolved), approved calls run, and the decision is on the
// session's stream. It returns the call as decided.
func (h Handle) Decide(ctx context.Context, channelID, callID string, d Decision) (ApprovalState, error) {
	if h.backend == nil {
		return ApprovalState{}, errSessionsNotConfigured
	}
	return h.backend.Decide(ctx, channelID, callID, d)
}

// GetSession reads a session on a channel.
func (h Handle) GetSession(ctx context.Context, channelID, sessionID string) (SessionState, error) {
	if h.backend == nil {
		return SessionState{}, errSessionsNotConfigured
	}
	return h.backend.GetSession(ctx, channelID, sessionID)
}

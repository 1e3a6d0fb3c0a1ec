package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Handle is what every entry point of an agent acts through: a tool's
// call (a [Call] embeds it), a channel's routes and onStart hook, a
// schedule's run, and the serve host itself (host.Host.Handle). The same
// methods with the same semantics everywhere: call a tool directly, send a
// message into a session on any channel, read a session, and reach the
// host's services.
type Handle struct {
	// Host holds the host's shared services: KV, Files, MCP, Otel,
	// Reminders.
	Host Services

	backend Backend
}

// Backend is the host side of a [Handle]; hosts implement it.
type Backend interface {
	Sessions
	CallTool(ctx context.Context, name string, input any, opts *CallToolOptions) (*Outcome, error)
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
// on first use, resumed after). It returns the session's id. A session
// whose turn is running refuses it with session_busy.
func (h Handle) Send(ctx context.Context, channelID, message string, opts *SendOptions) (string, error) {
	if h.backend == nil {
		return "", errSessionsNotConfigured
	}
	return h.backend.Send(ctx, channelID, message, opts)
}

// GetSession reads a session on a channel.
func (h Handle) GetSession(ctx context.Context, channelID, sessionID string) (SessionState, error) {
	if h.backend == nil {
		return SessionState{}, errSessionsNotConfigured
	}
	return h.backend.GetSession(ctx, channelID, sessionID)
}

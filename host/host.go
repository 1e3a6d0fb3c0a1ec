// Package host runs an agent's tools: direct calls from Go today, and the
// sessions, model turns and approvals built on them. A Host is made from a
// [tool.Set] and a state root:
//
//	set, err := tool.Registered()
//	…
//	h, err := host.New(set, &host.Options{StateRoot: ".agent-sdk"})
//	…
//	out, err := h.CallTool(ctx, "inspect_pr", map[string]any{"prUrl": "https://github.com/acme/checkout/pull/42"}, nil)
package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentsdk/agentsdk/internal/agenttool"
	"github.com/agentsdk/agentsdk/tool"
)

// Options configure a [Host]. The zero value is not enough: StateRoot is
// required.
type Options struct {
	// StateRoot is the agent's durable state directory. Direct calls made
	// outside a session work in scratch directories under
	// <StateRoot>/tool-calls.
	StateRoot string
	// Logger receives the host's logs, including handler panics with their
	// stacks. Nil discards them.
	Logger *slog.Logger
}

// Host runs calls of the tools in a set. It is safe for concurrent use.
type Host struct {
	tools     *tool.Set
	stateRoot string
	logger    *slog.Logger
}

// New returns a Host for the tools in set.
func New(set *tool.Set, opts *Options) (*Host, error) {
	if set == nil {
		return nil, errors.New("creating host: the tool set is nil")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.StateRoot == "" {
		return nil, errors.New("creating host: Options.StateRoot is required")
	}
	root, err := filepath.Abs(o.StateRoot)
	if err != nil {
		return nil, fmt.Errorf("creating host: resolving state root: %w", err)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Host{tools: set, stateRoot: root, logger: o.Logger}, nil
}

// Tools returns the host's tools.
func (h *Host) Tools() *tool.Set { return h.tools }

// StateRoot returns the absolute path of the host's state root.
func (h *Host) StateRoot() string { return h.stateRoot }

// CallOptions modify one [Host.CallTool] call. Nil means defaults.
type CallOptions struct {
	// SessionID binds the call to a session, whose workspace it then runs
	// in. This host has no session store yet, so a non-empty SessionID is
	// refused with [ErrNoSessions].
	SessionID string
}

// ErrNoSessions is returned for a session-bound call on a host without a
// session store.
var ErrNoSessions = errors.New("this host has no session store: calls cannot be bound to a session")

// ApprovalRequiredError is returned for a direct call whose tool needs a
// person's approval for this input. This host cannot park calls for
// approval, so it refuses them rather than run them unapproved.
type ApprovalRequiredError struct {
	Tool   string
	Reason error // set when the approval predicate panicked
}

func (e *ApprovalRequiredError) Error() string {
	msg := fmt.Sprintf("tool %s needs approval for this input, and this host cannot park calls for approval", e.Tool)
	if e.Reason != nil {
		msg += ": " + e.Reason.Error()
	}
	return msg
}

// Outcome is the result of a direct call, in the shape the HTTP API and the
// CLI print.
type Outcome struct {
	ToolName   string          `json:"toolName"`
	CallID     string          `json:"callId"`
	IsError    bool            `json:"isError"`
	Result     json.RawMessage `json:"result"`
	DurationMs int64           `json:"durationMs"`
}

// CallTool calls a server tool directly, with no model turn: the input is
// validated exactly as for a model's call, the handler runs in a scratch
// workspace under <StateRoot>/tool-calls/<callId> (removed when the call
// returns, whatever happened), and the outcome carries the normalised result.
//
// input is raw JSON (json.RawMessage or []byte) or any value that encodes to
// a JSON object, such as a map or the tool's input struct.
//
// A handler's error, panic or timeout is an Outcome with IsError set, not an
// error. The error is one of [*tool.UnknownToolError], [*tool.AgentToolError],
// [*tool.InputError], [*ApprovalRequiredError] or [ErrNoSessions]: the call
// did not run.
func (h *Host) CallTool(ctx context.Context, name string, input any, opts *CallOptions) (*Outcome, error) {
	start := time.Now()
	if opts != nil && opts.SessionID != "" {
		return nil, ErrNoSessions
	}
	t, ok := h.tools.Lookup(name)
	if !ok {
		return nil, &tool.UnknownToolError{Name: name, Available: h.tools.Names()}
	}
	if t.Execution() != tool.Server {
		return nil, &tool.AgentToolError{Name: name}
	}
	raw, err := inputJSON(input)
	if err != nil {
		return nil, &tool.InputError{Tool: name, Violations: []tool.Violation{{Path: "input", Message: err.Error()}}}
	}
	in, err := t.Validate(raw)
	if err != nil {
		return nil, err
	}
	if needed, reason := in.NeedsApproval(); needed {
		if reason != nil {
			h.logger.Warn("approval predicate failed; treating the call as needing approval", "tool", name, "err", reason)
		}
		return nil, &ApprovalRequiredError{Tool: name, Reason: reason}
	}

	id := tool.NewCallID(name)
	ws := &scratch{root: h.stateRoot, id: id, tools: h.tools}
	defer ws.remove(h.logger)
	call := tool.NewCall(tool.CallInfo{
		ID:        id,
		Tool:      name,
		StateRoot: h.stateRoot,
		Logger:    h.logger,
		Workspace: ws.open,
	})
	out, err := t.Run(ctx, call, in)
	if err != nil {
		return nil, err
	}
	return &Outcome{
		ToolName:   name,
		CallID:     id,
		IsError:    out.IsError,
		Result:     out.Result,
		DurationMs: time.Since(start).Milliseconds(),
	}, nil
}

// inputJSON returns a call's input as JSON text.
func inputJSON(input any) (json.RawMessage, error) {
	switch v := input.(type) {
	case json.RawMessage:
		return v, nil
	case []byte:
		return v, nil
	case nil:
		return nil, nil
	}
	b, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("cannot be encoded as JSON: %w", err)
	}
	return b, nil
}

// scratch is a call's workspace outside any session: created on first use,
// removed when the call returns, and refused after that.
type scratch struct {
	mu      sync.Mutex
	root    string    // the state root
	id      string    // the call id
	dir     string    // <root>/tool-calls/<id>, once created
	tools   *tool.Set // agent tools are materialised into it, like a session's
	created bool
	closed  bool
}

func (s *scratch) open() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", fmt.Errorf("%w: the call has returned and its scratch workspace is gone", tool.ErrNoWorkspace)
	}
	// MkdirAll each time, so the directory exists even if the handler
	// removed it since it last asked.
	s.dir = filepath.Join(s.root, "tool-calls", s.id)
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return "", fmt.Errorf("creating scratch workspace: %w", err)
	}
	if !s.created {
		if err := agenttool.Materialize(s.dir, s.tools); err != nil {
			return "", fmt.Errorf("creating scratch workspace: %w", err)
		}
	}
	s.created = true
	return s.dir, nil
}

func (s *scratch) remove(logger *slog.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if !s.created {
		return
	}
	if err := os.RemoveAll(s.dir); err != nil {
		logger.Warn("removing scratch workspace", "dir", s.dir, "err", err)
	}
}

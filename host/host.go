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

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentsdk/agentsdk/internal/agenttool"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// Options configure a [Host]. The zero value is not enough: StateRoot is
// required.
type Options struct {
	// StateRoot is the agent's durable state directory. Direct calls made
	// outside a session work in scratch directories under
	// <StateRoot>/tool-calls; sessions in <StateRoot>/sessions/<id>.
	StateRoot string
	// Logger receives the host's logs, including handler panics with their
	// stacks. Nil discards them.
	Logger *slog.Logger

	// Store holds sessions, turns and events. Nil: the host has no
	// sessions, and session calls fail with ErrNoSessions.
	Store store.Store
	// Model answers model turns. Nil: every model turn fails, with
	// ModelError (default model.ErrNotConfigured) as the reason.
	Model      model.Provider
	ModelError error
	// System is the system prompt of model turns.
	System string
	// MaxTokens bounds each model answer; zero means 4096.
	MaxTokens int
	// MaxSteps bounds the model calls of one turn; zero means
	// MaxStepsDefault.
	MaxSteps int
	// ToolConcurrency bounds the tool calls one turn runs at once; zero
	// means ToolConcurrencyDefault.
	ToolConcurrency int
	// ModelTimeout bounds each model call; zero means ModelTimeoutDefault.
	ModelTimeout time.Duration
	// LeaseTTL is how long a turn holds its session without renewing the
	// lease: after a host dies, its turns are closed within about this
	// long. Zero means LeaseTTLDefault.
	LeaseTTL time.Duration
	// ApprovalTimeout is how long a gated call waits for a decision before
	// it expires, unless its tool says otherwise; zero means
	// ApprovalTimeoutDefault.
	ApprovalTimeout time.Duration
	// Namespace separates this agent's KV entries and files from other
	// agents' in a shared store; default "agent".
	Namespace string
	// MaxFileBytes bounds one file of call.Host.Files and artifacts; zero
	// means MaxFileBytesDefault.
	MaxFileBytes int64
	// MCP is call.Host.MCP (see package mcpconn); nil: not configured. If
	// it is an io.Closer, Close closes it.
	MCP tool.MCP
	// TracerProvider and MeterProvider receive a span per turn and per tool
	// call and the call metrics (agent.tool.calls, agent.tool.duration,
	// agent.turns), and the tools' own metrics. Nil: no-op, at no cost.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
}

// Defaults of [Options].
const (
	MaxStepsDefault        = 16
	ToolConcurrencyDefault = 4
	ModelTimeoutDefault    = 5 * time.Minute
	LeaseTTLDefault        = 15 * time.Second
)

// Host runs calls of the tools in a set, and with a store, sessions and
// model turns. It is safe for concurrent use.
type Host struct {
	tools     *tool.Set
	stateRoot string
	logger    *slog.Logger

	store           store.Store
	model           model.Provider
	modelErr        error
	system          string
	maxTokens       int
	maxSteps        int
	toolConcurrency int
	modelTimeout    time.Duration
	leaseTTL        time.Duration
	approvalTimeout time.Duration
	id              string                     // this host's lease holder name
	waiters         map[string][]chan struct{} // direct calls waiting for a decision, by call id
	services        tool.Services              // call.Host, but for Otel
	telemetry       *telemetry
	namespace       string
	maxFileBytes    int64

	hub     hub
	ctx     context.Context // ends when the host closes
	stop    context.CancelCauseFunc
	mu      sync.Mutex
	running map[string]*runningTurn // by session id
	wg      sync.WaitGroup
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
	if o.ModelError == nil {
		o.ModelError = model.ErrNotConfigured
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = 4096
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = MaxStepsDefault
	}
	if o.ToolConcurrency == 0 {
		o.ToolConcurrency = ToolConcurrencyDefault
	}
	if o.ModelTimeout == 0 {
		o.ModelTimeout = ModelTimeoutDefault
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = LeaseTTLDefault
	}
	if o.ApprovalTimeout == 0 {
		o.ApprovalTimeout = ApprovalTimeoutDefault
	}
	if o.MaxSteps < 0 || o.ToolConcurrency < 0 || o.ModelTimeout < 0 || o.LeaseTTL < 0 {
		return nil, errors.New("creating host: MaxSteps, ToolConcurrency, ModelTimeout and LeaseTTL cannot be negative")
	}
	if o.Namespace == "" {
		o.Namespace = "agent"
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = MaxFileBytesDefault
	}
	var services tool.Services
	if o.Store != nil {
		services.KV = kvService{store: o.Store, ns: o.Namespace}
		services.Files = filesService{store: o.Store, root: filepath.Join(root, "files"), ns: o.Namespace, max: o.MaxFileBytes}
	}
	services.MCP = o.MCP
	ctx, stop := context.WithCancelCause(context.Background())
	return &Host{
		services: services, namespace: o.Namespace, maxFileBytes: o.MaxFileBytes,
		telemetry: newTelemetry(o.TracerProvider, o.MeterProvider),
		tools:     set, stateRoot: root, logger: o.Logger,
		store: o.Store, model: o.Model, modelErr: o.ModelError, system: o.System, maxTokens: o.MaxTokens,
		maxSteps: o.MaxSteps, toolConcurrency: o.ToolConcurrency, modelTimeout: o.ModelTimeout, leaseTTL: o.LeaseTTL,
		approvalTimeout: o.ApprovalTimeout,
		id:              newID("host"), ctx: ctx, stop: stop, running: map[string]*runningTurn{},
	}, nil
}

// Tools returns the host's tools.
func (h *Host) Tools() *tool.Set { return h.tools }

// StateRoot returns the absolute path of the host's state root.
func (h *Host) StateRoot() string { return h.stateRoot }

// CallOptions modify one [Host.CallTool] call. Nil means defaults.
type CallOptions struct {
	// SessionID binds the call to a session: it runs in the session's
	// workspace, is recorded on the session's stream under a turn of its
	// own (turn.started, action.result, turn.completed), and fails with
	// ErrSessionBusy while another turn runs.
	SessionID string
	// Wait is how long a call of a gated tool waits for a person's decision
	// before CallTool returns an *ApprovalPendingError (the call stays
	// parked; fetch its outcome with CallOutcome). Zero returns at once.
	Wait time.Duration
	// Principal is who asks, recorded on a parked call.
	Principal string
}

// ErrNoSessions is returned for session work on a host without a store.
var ErrNoSessions = errors.New("this host has no session store: calls cannot be bound to a session")

// ApprovalRequiredError is returned for a direct call whose tool needs a
// person's approval for this input on a host without a store: it cannot
// park calls, so it refuses them rather than run them unapproved.
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
// [*tool.InputError], [*ApprovalRequiredError], [ErrNoSessions],
// [ErrSessionNotFound] or [ErrSessionBusy]: the call did not run; or
// [*ApprovalPendingError]: the tool needs a person's approval for this
// input, and the call is parked until someone decides (see Resolve).
func (h *Host) CallTool(ctx context.Context, name string, input any, opts *CallOptions) (*Outcome, error) {
	start := time.Now()
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
	var o CallOptions
	if opts != nil {
		o = *opts
	}
	if needed, reason := in.NeedsApproval(); needed {
		if reason != nil {
			h.logger.Warn("approval predicate failed; treating the call as needing approval", "tool", name, "err", reason)
		}
		if h.store == nil {
			return nil, &ApprovalRequiredError{Tool: name, Reason: reason}
		}
		return h.callGated(ctx, t, in, o)
	}
	if o.SessionID != "" {
		return h.callInSession(ctx, t, in, o.SessionID, start)
	}
	id := tool.NewCallID(name)
	ws := &scratch{root: h.stateRoot, id: id, tools: h.tools}
	defer ws.remove(h.logger)
	call := tool.NewCall(tool.CallInfo{
		ID:        id,
		Tool:      name,
		Host:      h.servicesFor("", ""),
		Sessions:  h.sessionsFor(),
		StateRoot: h.stateRoot,
		Logger:    h.logger,
		Workspace: ws.open,
	})
	tctx, end := h.telemetry.startTool(ctx, name, id, "")
	out, err := t.Run(tctx, call, in)
	if err != nil {
		return nil, err
	}
	end(out)
	return &Outcome{
		ToolName:   name,
		CallID:     id,
		IsError:    out.IsError,
		Result:     out.Result,
		DurationMs: time.Since(start).Milliseconds(),
	}, nil
}

// servicesFor returns call.Host for a call in a session (or none).
func (h *Host) servicesFor(sessionID, turnID string) tool.Services {
	s := h.services
	s.Otel = otelService{h: h, sessionID: sessionID, turnID: turnID}
	return s
}

// sessionsFor returns what backs Call.Send and GetSession: nil (not
// configured) without a store.
func (h *Host) sessionsFor() tool.Sessions {
	if h.store == nil {
		return nil
	}
	return sessionService{h}
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

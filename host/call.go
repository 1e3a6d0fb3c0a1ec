package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/agenttool"
	"github.com/agentsdk/agentsdk/internal/progress"
	"github.com/agentsdk/agentsdk/tool"
)

// CallOptions modify one [Host.CallTool] call. Nil means defaults.
type CallOptions struct {
	// SessionID binds the call to a session: it runs in the session's
	// workspace, is recorded on the session's stream under a turn of its
	// own (turn.started, action.result, turn.completed), and fails with
	// api.ErrSessionBusy while another turn runs.
	SessionID string
	// Wait is how long a call of a gated tool waits for a person's decision
	// before CallTool returns an *ApprovalPendingError (the call stays
	// parked; fetch its outcome with CallOutcome). Zero returns at once.
	Wait time.Duration
	// Principal is who asks, recorded on a parked call.
	Principal string
	// Progress, if set, receives the call's progress and live output as it
	// runs (api.ActionProgress and api.ActionOutput, coalesced as on the
	// session's stream), from another goroutine, before CallTool returns;
	// it must not block for long. Not for a gated call's run after it was
	// parked.
	Progress func(api.Payload)
	// Overrun, if set, runs a server tool's handler on the calling
	// goroutine rather than on a new one, which saves a goroutine switch
	// per call, for a call outside any session. The tool's timeout and
	// ctx still bound the call, but by telling: if either ends before the
	// handler returns, Overrun receives the call's outcome (the timeout or
	// cancellation) at once, from another goroutine, and CallTool returns
	// the same outcome only once the handler has returned (its DurationMs
	// counted to then). ctx's end counts once the call watches its
	// context (tool.CallInfo.Overrun): a handler that never looks at it
	// runs to its result. For a caller that answers someone else — serve
	// answers the HTTP request from Overrun. Ignored for a call in a
	// session, a gated call and an agent tool.
	Overrun func(*api.Outcome)
}

// CallTool calls a server tool directly, with no model turn: the input is
// validated exactly as for a model's call, the handler runs in a scratch
// workspace under <StateRoot>/tool-calls/<callId> (removed when the call
// returns, whatever happened), and the outcome carries the normalised result.
//
// input is raw JSON (json.RawMessage, a pointer to one, or []byte) or any
// value that encodes to a JSON object, such as a map or the input struct.
//
// A handler's error, panic or timeout is an Outcome with IsError set, not an
// error. An error is an [*api.Error] when the call did not run — unknown
// tool, agent tool, invalid input (each wrapping the tool package's typed
// error, for errors.As), session not found or busy — or an
// [*ApprovalPendingError]: the tool needs a person's approval for this
// input, and the call is parked until someone decides (see Resolve).
func (h *Host) CallTool(ctx context.Context, name string, input any, opts *CallOptions) (*api.Outcome, error) {
	start := time.Now()
	t, in, err := h.validate(name, input)
	if err != nil {
		return nil, err
	}
	var o CallOptions
	if opts != nil {
		o = *opts
	}
	if h.needsApproval(t, in) {
		return h.callGated(ctx, t, in, o)
	}
	release, err := h.acquireDirect(ctx, t, in, o.SessionID)
	if err != nil {
		return nil, err
	}
	defer release()
	if o.SessionID != "" {
		return h.callInSession(ctx, t, in, o, start)
	}
	id := tool.NewCallID(name)
	spec := callSpec{id: id, tool: t, in: in, observe: o.Progress, held: true}
	if o.Overrun != nil {
		spec.overrun = func(out tool.Output) {
			o.Overrun(outcomeOf(name, id, out, time.Since(start)))
		}
	}
	out := h.run(ctx, spec)
	return outcomeOf(name, id, out, time.Since(start)), nil
}

// outcomeOf is the outcome of the call id of tool name that gave out after
// took.
func outcomeOf(name, id string, out tool.Output, took time.Duration) *api.Outcome {
	return &api.Outcome{ToolName: name, CallID: id, IsError: out.IsError, Result: out.Result, DurationMs: took.Milliseconds()}
}

// validate finds a server tool and validates a direct call's input.
func (h *Host) validate(name string, input any) (*tool.Tool, *tool.Input, error) {
	t, ok := h.tools.Lookup(name)
	if !ok {
		return nil, nil, api.AsError(&tool.UnknownToolError{Name: name, Available: h.tools.Names()})
	}
	if t.Execution() != tool.Server {
		return nil, nil, api.AsError(&tool.AgentToolError{Name: name})
	}
	raw, err := inputJSON(input)
	if err != nil {
		return nil, nil, api.AsError(&tool.InputError{Tool: name, Violations: []tool.Violation{{Path: "input", Message: err.Error()}}})
	}
	in, err := t.Validate(raw)
	if err != nil {
		return nil, nil, api.AsError(err)
	}
	return t, in, nil
}

// needsApproval reports whether a call must wait for a person. A predicate
// that fails counts as needing approval: approvals fail closed.
func (h *Host) needsApproval(t *tool.Tool, in *tool.Input) bool {
	needed, reason := in.NeedsApproval()
	if needed && reason != nil {
		h.logger.Warn("approval predicate failed; treating the call as needing approval", "tool", t.Name(), "err", reason)
	}
	return needed
}

// inputJSON returns a call's input as JSON text.
func inputJSON(input any) (json.RawMessage, error) {
	switch v := input.(type) {
	case json.RawMessage:
		return v, nil
	case *json.RawMessage:
		if v != nil {
			return *v, nil
		}
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

// callSpec is one validated call to run.
type callSpec struct {
	id          string
	modelCallID string // the id a model gave its call; "" for a direct call
	tool        *tool.Tool
	in          *tool.Input
	session     *api.Session // nil outside a session
	turnID      string
	observe     func(api.Payload) // a caller following the call's progress; nil for none
	held        bool              // the caller holds the call's place under the tool's limits
	overrun     func(tool.Output) // CallOptions.Overrun, for a direct call outside any session
}

// run runs a validated call — a server tool in process, an agent tool
// through the script runner — in its workspace, with the host's services
// and a span. Every failure is a result.
func (h *Host) run(ctx context.Context, c callSpec) (out tool.Output) {
	sessionID := ""
	ws := h.scratchWorkspace(c.id)
	if c.session != nil {
		sessionID = c.session.ID
		ws = h.sessionWorkspace(sessionID)
	}
	defer ws.close(h.logger)
	ctx, end := h.telemetry.startTool(ctx, c)
	defer func() { end(out) }()
	if !c.held {
		release, err := h.acquire(ctx, c.tool, c.in, sessionID)
		if err != nil {
			return tool.ErrorOutput(err.Error())
		}
		defer release()
	}
	rep := h.newReporter(ctx, c)
	defer rep.Close() // what the call reported is recorded before its result
	// Calls run on goroutines of the host's (a turn's, an approval's): a
	// panic on the way to the tool or back fails the call, not the host.
	defer func() {
		if p := recover(); p != nil {
			h.logger.Error("running a tool call panicked", "tool", c.tool.Name(), "call_id", c.id, "panic", p, "stack", string(debug.Stack()))
			out = tool.ErrorOutput(fmt.Sprintf("the call failed: %v", p))
		}
	}()
	if c.tool.Execution() == tool.Agent {
		dir, err := ws.open()
		if err != nil {
			return tool.ErrorOutput(err.Error())
		}
		opts := agenttool.RunOptions{Workspace: dir, CallID: c.id, SessionID: sessionID, Records: h.runsDir(), Private: []string{h.opts.StateRoot}}
		if rep != nil {
			opts.Stderr = rep.Output
		}
		return agenttool.Run(ctx, c.tool, c.in, opts)
	}
	out, err := c.tool.Run(ctx, h.newCall(c, ws, rep), c.in)
	if err != nil {
		return tool.ErrorOutput(err.Error())
	}
	return out
}

// acquireDirect takes a direct call's place under its tool's limits: a
// call over a limit is refused as busy (429), before it begins a turn.
func (h *Host) acquireDirect(ctx context.Context, t *tool.Tool, in *tool.Input, sessionID string) (release func(), err error) {
	release, err = h.acquire(ctx, t, in, sessionID)
	if err != nil {
		var busy *busyError
		if errors.As(err, &busy) {
			return nil, busyAPIError(busy)
		}
		return nil, api.Errorf(api.CodeBadRequest, "the call was cancelled while it waited for the tool: %v", err)
	}
	return release, nil
}

// newCall builds what a handler receives: the one place a tool.Call is
// made. Its progress goes to rep (nil: nowhere).
func (h *Host) newCall(c callSpec, ws *workspace, rep *progress.Reporter) *tool.Call {
	info := tool.CallInfo{
		MaxResultBytes: max(h.opts.MaxResultBytes, 0),
		ID:             c.id,
		Tool:           c.tool.Name(),
		StateRoot:      h.opts.StateRoot,
		Logger:         h.logger,
		Host:           h.servicesFor(c),
		Backend:        backend{h},
		Workspace:      ws.open,
		Overrun:        c.overrun,
	}
	if rep != nil {
		info.Reporter = rep
	}
	if s := c.session; s != nil {
		info.Session = tool.Session{ID: s.ID, Channel: s.Channel, Mode: string(s.Mode), Principal: s.Principal}
		info.Artifacts = artifacts{h: h, sessionID: s.ID, turnID: c.turnID, callID: c.id}
	}
	return tool.NewCall(info)
}

// servicesFor returns call.Host for a call.
func (h *Host) servicesFor(c callSpec) tool.Services {
	return h.sessionServices(c.session, c.turnID)
}

// sessionServices returns the host's services bound to a session (nil:
// none) and a turn: Otel's session tags, Reminders.
func (h *Host) sessionServices(sess *api.Session, turnID string) tool.Services {
	if sess == nil && turnID == "" {
		return h.direct // made once: a call outside any session
	}
	s := h.services
	o := otelService{h: h, turnID: turnID}
	if sess != nil {
		o.sessionID = sess.ID
		s.Reminders = h.reminders(sess.ID)
	}
	s.Otel = o
	return s
}

package host

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/tool"
)

// SessionHooks are what a subsystem takes over of one session's local
// model turns on this host (package evals: a case's stubs and its
// replayed answers). Set them with [Host.HookSession]. They apply to the
// turns this host runs (Call also to a harness turn's calls of the
// agent's server tools; Model to native turns only): a turn of the session another host continues
// (after an approval decided there) runs without them.
type SessionHooks struct {
	// Model, if set, answers the session's model calls instead of
	// Options.Model.
	Model model.Provider
	// Call, if set, is asked about each of the model's tool calls in the
	// session once its input is valid for the tool, before its approval
	// predicate and before it runs. Answering ok, out is the call's
	// result: the tool's handler does not run, the call is never parked
	// for approval, and its action.result is marked stubbed. Not ok, the
	// call goes on as any other. It must not block for long: the turn
	// waits for it.
	Call func(ctx context.Context, c HookedCall) (out tool.Output, ok bool)
}

// HookedCall is a model's tool call that SessionHooks.Call is asked
// about.
type HookedCall struct {
	SessionID, TurnID string
	// CallID is the host's id of the call (tool_<name>_…).
	CallID string
	Tool   *tool.Tool
	// Input is the call's input, valid for the tool's schema.
	Input json.RawMessage
}

// hooks are the sessions' hooks on this host, by session id.
type hooks struct{ m sync.Map }

// HookSession sets hooks for the model turns of the session with id
// sessionID on this host, until release is called (release is safe to
// call more than once). Set them before the session's first turn starts
// (Sessions.Create with an ID made by NewSessionID): a turn reads them
// as it runs. A session has one set of hooks: setting them again
// replaces them.
func (h *Host) HookSession(sessionID string, hk SessionHooks) (release func()) {
	p := &hk
	h.hooks.m.Store(sessionID, p)
	var once sync.Once
	return func() { once.Do(func() { h.hooks.m.CompareAndDelete(sessionID, p) }) }
}

// sessionHooks returns a session's hooks, nil without.
func (h *Host) sessionHooks(sessionID string) *SessionHooks {
	if v, ok := h.hooks.m.Load(sessionID); ok {
		return v.(*SessionHooks)
	}
	return nil
}

// turnModel is the model of a session's turns: its hooks', or the
// host's.
func (h *Host) turnModel(sessionID string) model.Provider {
	if hk := h.sessionHooks(sessionID); hk != nil && hk.Model != nil {
		return hk.Model
	}
	return h.opts.Model
}

// hookedCall asks the session's Call hook about a valid call.
func (h *Host) hookedCall(ctx context.Context, sessionID, turnID, callID string, t *tool.Tool, input json.RawMessage) (tool.Output, bool) {
	hk := h.sessionHooks(sessionID)
	if hk == nil || hk.Call == nil {
		return tool.Output{}, false
	}
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	return hk.Call(ctx, HookedCall{SessionID: sessionID, TurnID: turnID, CallID: callID, Tool: t, Input: input})
}

// stubbedCalls are the calls of a turn's run a hook answered, by call
// id, until their action.result is emitted (marked stubbed).
type stubbedCalls struct{ m sync.Map }

func (s *stubbedCalls) add(callID string) { s.m.Store(callID, true) }

// take reports whether a hook answered the call, forgetting it.
func (s *stubbedCalls) take(callID string) bool {
	_, ok := s.m.LoadAndDelete(callID)
	return ok
}

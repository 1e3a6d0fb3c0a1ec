package host

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// callInSession runs a direct call inside a session, as a turn of its own.
func (h *Host) callInSession(ctx context.Context, t *tool.Tool, in *tool.Input, sessionID string, start time.Time) (*Outcome, error) {
	st, err := h.sessions()
	if err != nil {
		return nil, err
	}
	sess, err := h.Session(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	turnID := newID("turn")
	begun, err := st.BeginTurn(ctx, store.Turn{SessionID: sessionID, ID: turnID, Kind: "call"}, h.lease(),
		store.Event{Kind: EventTurnStarted, Data: data(map[string]string{"kind": "call", "tool": t.Name()})})
	if err != nil {
		return nil, h.turnError(err, sessionID)
	}
	h.hub.publish(sessionID, begun)
	tctx := h.track(sessionID, turnID)
	defer h.untrack(sessionID, turnID)
	// The caller's cancellation reaches the handler too.
	tctx, cancel := context.WithCancel(tctx)
	stopAfter := context.AfterFunc(ctx, cancel)
	defer stopAfter()
	defer cancel()

	id := tool.NewCallID(t.Name())
	out := h.run(tctx, sess, turnID, t, in, id)
	outcome := &Outcome{ToolName: t.Name(), CallID: id, IsError: out.IsError, Result: out.Result, DurationMs: time.Since(start).Milliseconds()}
	if err := h.append(ctx, sessionID, turnID, store.Event{Kind: EventActionResult, Data: data(actionResult{
		CallID: id, Tool: t.Name(), IsError: out.IsError, Result: out.Result, DurationMs: outcome.DurationMs, Direct: true,
	})}); err != nil {
		h.logger.Error("recording a session call", "session", sessionID, "err", err)
	}
	status, reason, kind := store.TurnCompleted, "", EventTurnCompleted
	if cause := context.Cause(tctx); errors.Is(cause, errLeaseLost) || errors.Is(cause, errStopping) {
		status, reason, kind = store.TurnFailed, cause.Error(), EventTurnFailed
	}
	ended, err := st.EndTurn(context.WithoutCancel(ctx), sessionID, turnID, status, reason,
		store.Event{Kind: kind, Data: data(map[string]string{"reason": reason})})
	if err != nil && !errors.Is(err, store.ErrNotRunning) {
		h.logger.Error("ending a session call's turn", "session", sessionID, "err", err)
	}
	h.hub.publish(sessionID, ended)
	return outcome, nil
}

// callGated parks a direct call of a gated tool (in its session, as a turn
// of its own, when it has one) and waits up to o.Wait for the decision.
func (h *Host) callGated(ctx context.Context, t *tool.Tool, in *tool.Input, o CallOptions) (*Outcome, error) {
	id := tool.NewCallID(t.Name())
	turnID := ""
	by := o.Principal
	if o.SessionID != "" {
		sess, err := h.Session(ctx, o.SessionID)
		if err != nil {
			return nil, err
		}
		if by == "" {
			by = sess.Principal
		}
		turnID = newID("turn")
		begun, err := h.store.BeginTurn(ctx, store.Turn{SessionID: sess.ID, ID: turnID, Kind: "call"}, h.lease(),
			store.Event{Kind: EventTurnStarted, Data: data(map[string]string{"kind": "call", "tool": t.Name()})})
		if err != nil {
			return nil, h.turnError(err, sess.ID)
		}
		h.hub.publish(sess.ID, begun)
	}
	a, err := h.park(ctx, t, in, id, o.SessionID, turnID, "", by)
	if err != nil {
		return nil, err
	}
	if turnID != "" {
		if err := h.store.ParkTurn(context.WithoutCancel(ctx), o.SessionID, turnID); err != nil {
			return nil, err
		}
	}
	if o.Wait > 0 {
		if got, ok := h.waitOutcome(ctx, id, o.Wait); ok {
			var out Outcome
			if err := json.Unmarshal(got.Outcome, &out); err == nil {
				return &out, nil
			}
		}
	}
	return nil, &ApprovalPendingError{CallID: id, Approval: a}
}

// sessionWorkspace returns the Workspace hook of calls in a session.
func (h *Host) sessionWorkspace(sessionID string) func() (string, error) {
	dir := h.WorkspaceDir(sessionID)
	return func() (string, error) {
		if err := osMkdirAll(dir); err != nil {
			return "", err
		}
		return dir, nil
	}
}

// actionResult is the data of an action.result event.
type actionResult struct {
	CallID      string          `json:"callId"`
	ModelCallID string          `json:"modelCallId,omitempty"`
	Tool        string          `json:"tool"`
	IsError     bool            `json:"isError"`
	Result      json.RawMessage `json:"result"`
	DurationMs  int64           `json:"durationMs"`
	// Direct marks a call made directly (HTTP, CLI, Go), not by the model.
	Direct bool `json:"direct,omitempty"`
}

package host

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// harnessServerCall is a call of one of the agent's server tools that a
// harness made over the MCP endpoint, in the harness turn this host runs:
// announced and recorded on the turn's stream once (the harness's own
// report of the call is not recorded: harnessturn skips calls of the
// agent's MCP server), validated, gated and run as a native turn's call.
// A call that needs approval is parked and the MCP request waits for the
// decision, as the harness waits for it; approved, it runs here. The
// session's hooks (SessionHooks.Call: an eval's stubs) answer it first,
// as they answer a native turn's call.
func (h *Host) harnessServerCall(ctx context.Context, t *tool.Tool, tin *tool.Input, sess api.Session, in InTurn) (*api.Outcome, error) {
	start := time.Now()
	defer h.harnessTurns.calling(sess.ID)()
	callID := tool.NewCallID(t.Name())
	if err := h.emit(ctx, sess.ID, in.TurnID, api.ActionsRequested{Actions: []api.Action{{CallID: callID, ModelCallID: in.ModelCallID, Tool: t.Name(), Input: tin.JSON()}}}); err != nil {
		return nil, err
	}
	if out, ok := h.hookedCall(ctx, sess.ID, in.TurnID, callID, t, tin.JSON()); ok {
		// Answered by the session's hooks (an eval's stub): not run, not
		// parked, and marked so on the stream.
		out = h.fitForModel(ctx, sess.ID, in.TurnID, callID, out)
		if err := h.emit(context.WithoutCancel(ctx), sess.ID, in.TurnID, api.ActionResult{CallID: callID, ModelCallID: in.ModelCallID, Tool: t.Name(),
			IsError: out.IsError, Result: out.Result, DurationMs: time.Since(start).Milliseconds(), Stubbed: true}); err != nil {
			h.logger.Error("recording a harness's stubbed call", "session", sess.ID, "call", callID, "err", err)
		}
		return outcomeOf(t.Name(), callID, out, time.Since(start)), nil
	}
	if h.needsApproval(t, tin) {
		p := parkSpec{callID: callID, sessionID: sess.ID, turnID: in.TurnID, modelCallID: in.ModelCallID, by: sess.Principal}
		if _, err := h.park(ctx, t, tin, p); err != nil {
			out := tool.ErrorOutput("parking the call for approval failed: " + err.Error())
			h.emitResult(ctx, sess.ID, in.TurnID, callID, in.ModelCallID, t.Name(), out, time.Since(start))
			return outcomeOf(t.Name(), callID, out, time.Since(start)), nil
		}
		a, ok := h.awaitDecision(ctx, ctx, callID)
		if ok && a.Status == api.ApprovalApproved {
			begun := time.Now()
			out := h.runApproved(ctx, ctx, a)
			if _, err := h.record(ctx, h.log, a, out, time.Since(begun)); err != nil {
				return nil, err
			}
			h.waiters.notify(callID)
			return outcomeOf(t.Name(), callID, out, time.Since(begun)), nil
		}
		// Denied, expired, or abandoned: the decision recorded the result.
		if out, ok := h.waitOutcome(ctx, callID, time.Minute); ok {
			return out, nil
		}
		return outcomeOf(t.Name(), callID, tool.ErrorOutput("not run: the call was not approved"), time.Since(start)), nil
	}
	out := h.run(ctx, callSpec{id: callID, modelCallID: in.ModelCallID, tool: t, in: tin, session: &sess, turnID: in.TurnID, observe: in.Progress})
	out = h.fitForModel(ctx, sess.ID, in.TurnID, callID, out)
	h.emitResult(ctx, sess.ID, in.TurnID, callID, in.ModelCallID, t.Name(), out, time.Since(start))
	return outcomeOf(t.Name(), callID, out, time.Since(start)), nil
}

// harnessRefusedCall records a harness's call of a server tool whose
// input does not match the tool's schema, as a native turn's refused call
// is: requested, and its result the violations the harness is answered
// with (which it may correct).
func (h *Host) harnessRefusedCall(ctx context.Context, name string, input any, sessionID string, in InTurn, err error) {
	if api.AsError(err).Code != api.CodeInvalidInput {
		return // an unknown tool or an agent tool: the harness's own mistake, not a call
	}
	raw, jerr := inputJSON(input)
	if jerr != nil || !json.Valid(raw) {
		raw = json.RawMessage(`{}`)
	}
	callID := tool.NewCallID(name)
	if err := h.emit(ctx, sessionID, in.TurnID, api.ActionsRequested{Actions: []api.Action{{CallID: callID, ModelCallID: in.ModelCallID, Tool: name, Input: raw}}}); err != nil {
		h.logger.Error("recording a harness's refused call", "session", sessionID, "call", callID, "err", err)
		return
	}
	h.emitResult(ctx, sessionID, in.TurnID, callID, in.ModelCallID, name, tool.ErrorOutput(api.AsError(err).Message), 0)
}

// emitResult records a call's action.result on its turn's stream.
func (h *Host) emitResult(ctx context.Context, sessionID, turnID, callID, modelCallID, name string, out tool.Output, took time.Duration) {
	if err := h.emit(context.WithoutCancel(ctx), sessionID, turnID, api.ActionResult{CallID: callID, ModelCallID: modelCallID, Tool: name,
		IsError: out.IsError, Result: out.Result, DurationMs: took.Milliseconds()}); err != nil {
		h.logger.Error("recording a harness's call of a server tool", "session", sessionID, "call", callID, "err", err)
	}
}

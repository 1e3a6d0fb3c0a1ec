package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// runTurn runs a model turn to its end: model calls and tool calls in
// turn, until the model stops calling tools or the step limit is reached.
// A turn with calls waiting for approval parks instead, and runs again
// from its history once they are decided.
func (h *Host) runTurn(ctx context.Context, sess api.Session, f store.Fence) {
	turnID := f.TurnID
	ctx, span := h.telemetry.tracer.Start(ctx, "agent.turn", trace.WithAttributes(
		attribute.String("session.id", sess.ID), attribute.String("turn.id", turnID), attribute.String("session.channel", sess.Channel)))
	defer span.End()
	ctx = context.WithValue(ctx, turnSpanKey{}, span)
	steps, err := h.loop(ctx, sess, turnID)
	span.SetAttributes(attribute.Int("turn.steps", steps))
	status := "completed"
	switch {
	case errors.Is(err, errParked):
		status = "parked"
	case err != nil:
		status = "failed"
		span.SetStatus(codes.Error, err.Error())
	}
	span.SetAttributes(attribute.String("turn.status", status))
	h.telemetry.turns.Add(context.WithoutCancel(ctx), 1, metric.WithAttributes(attribute.String("turn.status", status)))
	// A turn with calls parked parks, even when the host is shutting down:
	// the parked state is durable, and the decisions can come after a
	// restart.
	if errors.Is(err, errParked) {
		// Stop holding the turn before parking it, and before a resumption
		// (possibly right here) tracks it afresh.
		h.leases.untrack(sess.ID, turnID)
		if err := h.log.ParkTurn(context.WithoutCancel(ctx), f); err != nil {
			h.logger.Error("parking a turn", "session", sess.ID, "turn", turnID, "err", err)
			return
		}
		// Decisions may have come while the turn ran its other calls.
		h.drive(ctx, sess.ID, turnID)
		return
	}
	defer h.leases.untrack(sess.ID, turnID)
	var end api.Payload = api.TurnCompleted{Steps: &steps}
	if err != nil {
		end = api.TurnFailed{Reason: failureReason(ctx, err), Steps: &steps}
	}
	if err := h.endTurn(ctx, f, end); err != nil {
		h.logger.Error("ending a turn", "session", sess.ID, "turn", turnID, "err", err)
	}
}

// failureReason is what turn.failed says: why the turn's context ended
// (cancelled, shut down, lease lost), or the error.
func failureReason(ctx context.Context, err error) string {
	cause := context.Cause(ctx)
	if cause == nil || ctx.Err() == nil {
		return err.Error()
	}
	switch {
	case errors.Is(cause, errCancelled):
		return "cancelled"
	case errors.Is(cause, errStopping):
		return reasonShutdown
	}
	return cause.Error()
}

func (h *Host) loop(ctx context.Context, sess api.Session, turnID string) (int, error) {
	if h.opts.Model == nil {
		return 0, h.opts.ModelError
	}
	history, tags, err := h.history(ctx, sess.ID)
	if err != nil {
		return 0, fmt.Errorf("reading the session's history: %w", err)
	}
	span := trace.SpanFromContext(ctx)
	for k, v := range tags {
		span.SetAttributes(attribute.String("session.tag."+k, v))
	}
	specs := make([]model.Tool, 0, h.tools.Len())
	for _, t := range h.tools.Tools() {
		specs = append(specs, model.Tool{Name: t.Name(), Description: t.Description(), InputSchema: t.InputSchema()})
	}
	for step := 1; step <= h.opts.MaxSteps; step++ {
		req := &model.Request{System: h.opts.System, Messages: history, Tools: specs, MaxTokens: h.opts.MaxTokens}
		text, calls, err := h.callModel(ctx, sess.ID, turnID, req)
		if err != nil {
			return step, err
		}
		if text != "" {
			if err := h.emit(ctx, sess.ID, turnID, api.Message{Role: api.RoleAssistant, Text: text}); err != nil {
				return step, err
			}
		}
		history = append(history, model.Message{Role: model.Assistant, Text: text, ToolCalls: calls})
		if len(calls) == 0 {
			return step, nil
		}
		results, err := h.runActions(ctx, sess, turnID, calls)
		if err != nil {
			return step, err
		}
		history = append(history, model.Message{Role: model.User, ToolResults: results})
		if ctx.Err() != nil {
			return step, ctx.Err()
		}
	}
	return h.opts.MaxSteps, fmt.Errorf("step limit reached: the model was still calling tools after %d steps", h.opts.MaxSteps)
}

// callModel streams one model answer, storing text deltas as they come.
func (h *Host) callModel(ctx context.Context, sessionID, turnID string, req *model.Request) (string, []model.ToolCall, error) {
	timeout := h.opts.ModelTimeout
	mctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("the model did not answer within %s", timeout))
	defer cancel()
	var text strings.Builder
	var calls []model.ToolCall
	for chunk, err := range h.opts.Model.Stream(mctx, req) {
		if err != nil {
			if cause := context.Cause(mctx); mctx.Err() != nil && ctx.Err() == nil {
				return "", nil, fmt.Errorf("model: %w", cause)
			}
			return "", nil, fmt.Errorf("model: %w", err)
		}
		if chunk.Text != "" {
			text.WriteString(chunk.Text)
			if err := h.emit(ctx, sessionID, turnID, api.MessageDelta{Text: chunk.Text}); err != nil {
				return "", nil, err
			}
		}
		if chunk.ToolCall != nil {
			c := *chunk.ToolCall
			if c.ID == "" {
				c.ID = fmt.Sprintf("call_%d", len(calls)+1) // some servers send none
			}
			calls = append(calls, c)
		}
	}
	if err := context.Cause(mctx); mctx.Err() != nil {
		if ctx.Err() != nil {
			return "", nil, ctx.Err()
		}
		return "", nil, fmt.Errorf("model: %w", err)
	}
	return text.String(), calls, nil
}

// runActions announces the model's tool calls, runs them with bounded
// concurrency and records each result as it comes.
func (h *Host) runActions(ctx context.Context, sess api.Session, turnID string, calls []model.ToolCall) ([]model.ToolResult, error) {
	actions := make([]api.Action, len(calls))
	for i, c := range calls {
		name := c.Name
		if tool.CheckName(name) != nil {
			name = "invalid"
		}
		actions[i] = api.Action{CallID: tool.NewCallID(name), ModelCallID: c.ID, Tool: c.Name}
		if json.Valid(c.Input) {
			actions[i].Input = c.Input
		} else {
			actions[i].InputText = string(c.Input)
		}
	}
	if err := h.emit(ctx, sess.ID, turnID, api.ActionsRequested{Actions: actions}); err != nil {
		return nil, err
	}
	results := make([]model.ToolResult, len(calls))
	sem := make(chan struct{}, h.opts.ToolConcurrency)
	var wg sync.WaitGroup
	var appendErr error
	var mu sync.Mutex
	parked := false
	for i, c := range calls {
		wg.Go(func() {
			defer guard(h.logger, "running a turn's tool call", "session", sess.ID, "call", actions[i].CallID)
			sem <- struct{}{}
			defer func() { <-sem }()
			start := time.Now()
			out, waits := h.execute(ctx, sess, turnID, actions[i].CallID, c)
			if waits {
				mu.Lock()
				parked = true
				mu.Unlock()
				return // its result comes when someone decides
			}
			results[i] = model.ToolResult{CallID: c.ID, Content: resultText(out), IsError: out.IsError}
			err := h.emit(ctx, sess.ID, turnID, api.ActionResult{
				CallID: actions[i].CallID, ModelCallID: c.ID, Tool: c.Name, IsError: out.IsError, Result: out.Result,
				DurationMs: time.Since(start).Milliseconds(),
			})
			if err != nil {
				mu.Lock()
				appendErr = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if appendErr == nil && parked {
		return results, errParked
	}
	return results, appendErr
}

// errParked ends a turn's goroutine while calls of it wait for approval:
// the turn stays running, parked in the store, and resumes from its
// history when the last decision is carried out.
var errParked = errors.New("waiting for approval")

// execute runs one of the model's tool calls. Every failure becomes a
// result the model can read and act on. A call that needs approval is
// parked instead: waits is true, and its result comes later.
func (h *Host) execute(ctx context.Context, sess api.Session, turnID, callID string, c model.ToolCall) (out tool.Output, waits bool) {
	t, ok := h.tools.Lookup(c.Name)
	if !ok {
		return tool.ErrorOutput((&tool.UnknownToolError{Name: c.Name, Available: h.tools.Names()}).Error()), false
	}
	in, err := t.Validate(c.Input)
	if err != nil {
		return tool.ErrorOutput(err.Error()), false
	}
	if h.needsApproval(t, in) {
		if _, err := h.park(ctx, t, in, parkSpec{callID: callID, sessionID: sess.ID, turnID: turnID, modelCallID: c.ID, by: sess.Principal}); err != nil {
			return tool.ErrorOutput("parking the call for approval failed: " + err.Error()), false
		}
		return tool.Output{}, true
	}
	return h.run(ctx, callSpec{id: callID, tool: t, in: in, session: &sess, turnID: turnID}), false
}

package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentsdk/agentsdk/internal/agenttool"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

func osMkdirAll(dir string) error { return os.MkdirAll(dir, 0o700) }

// requestedAction is one entry of an actions.requested event.
type requestedAction struct {
	CallID      string          `json:"callId"`
	ModelCallID string          `json:"modelCallId"`
	Tool        string          `json:"tool"`
	Input       json.RawMessage `json:"input,omitempty"`
	// InputText holds input that is not valid JSON, as the model sent it.
	InputText string `json:"inputText,omitempty"`
}

// runTurn runs a model turn to its end: model calls and tool calls in
// turn, until the model stops calling tools or the step limit is reached.
func (h *Host) runTurn(ctx context.Context, sess store.Session, turnID string) {
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
		h.untrack(sess.ID, turnID)
		if err := h.store.ParkTurn(context.WithoutCancel(ctx), sess.ID, turnID); err != nil {
			h.logger.Error("parking a turn", "session", sess.ID, "turn", turnID, "err", err)
			return
		}
		// Decisions may have come while the turn ran its other calls.
		h.maybeResume(context.WithoutCancel(ctx), sess.ID, turnID)
		return
	}
	defer h.untrack(sess.ID, turnID)
	status, kind, payload := store.TurnCompleted, EventTurnCompleted, map[string]any{"steps": steps}
	reason := ""
	if err != nil {
		status, kind, reason = store.TurnFailed, EventTurnFailed, err.Error()
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			switch {
			case errors.Is(cause, errCancelled):
				reason = "cancelled"
			case errors.Is(cause, errStopping):
				reason = reasonShutdown
			default:
				reason = cause.Error()
			}
		}
		payload = map[string]any{"steps": steps, "reason": reason}
	}
	ended, err := h.store.EndTurn(context.WithoutCancel(ctx), sess.ID, turnID, status, reason, store.Event{Kind: kind, Data: data(payload)})
	if err != nil && !errors.Is(err, store.ErrNotRunning) {
		h.logger.Error("ending a turn", "session", sess.ID, "turn", turnID, "err", err)
	}
	h.hub.publish(sess.ID, ended)
}

func (h *Host) loop(ctx context.Context, sess store.Session, turnID string) (int, error) {
	if h.model == nil {
		return 0, h.modelErr
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
	for step := 1; step <= h.maxSteps; step++ {
		text, calls, err := h.callModel(ctx, sess.ID, turnID, &model.Request{System: h.system, Messages: history, Tools: specs, MaxTokens: h.maxTokens})
		if err != nil {
			return step, err
		}
		if text != "" {
			if err := h.append(ctx, sess.ID, turnID, store.Event{Kind: EventMessage, Data: data(map[string]string{"role": "assistant", "text": text})}); err != nil {
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
	return h.maxSteps, fmt.Errorf("step limit reached: the model was still calling tools after %d steps", h.maxSteps)
}

// callModel streams one model answer, storing text deltas as they come.
func (h *Host) callModel(ctx context.Context, sessionID, turnID string, req *model.Request) (string, []model.ToolCall, error) {
	mctx, cancel := context.WithTimeoutCause(ctx, h.modelTimeout, fmt.Errorf("the model did not answer within %s", h.modelTimeout))
	defer cancel()
	var text strings.Builder
	var calls []model.ToolCall
	for chunk, err := range h.model.Stream(mctx, req) {
		if err != nil {
			if cause := context.Cause(mctx); mctx.Err() != nil && ctx.Err() == nil {
				return "", nil, fmt.Errorf("model: %w", cause)
			}
			return "", nil, fmt.Errorf("model: %w", err)
		}
		if chunk.Text != "" {
			text.WriteString(chunk.Text)
			if err := h.append(ctx, sessionID, turnID, store.Event{Kind: EventMessageDelta, Data: data(map[string]string{"text": chunk.Text})}); err != nil {
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
func (h *Host) runActions(ctx context.Context, sess store.Session, turnID string, calls []model.ToolCall) ([]model.ToolResult, error) {
	actions := make([]requestedAction, len(calls))
	for i, c := range calls {
		name := c.Name
		if tool.CheckName(name) != nil {
			name = "invalid"
		}
		actions[i] = requestedAction{CallID: tool.NewCallID(name), ModelCallID: c.ID, Tool: c.Name}
		if json.Valid(c.Input) {
			actions[i].Input = c.Input
		} else {
			actions[i].InputText = string(c.Input)
		}
	}
	if err := h.append(ctx, sess.ID, turnID, store.Event{Kind: EventActionsRequested, Data: data(map[string]any{"actions": actions})}); err != nil {
		return nil, err
	}
	results := make([]model.ToolResult, len(calls))
	sem := make(chan struct{}, h.toolConcurrency)
	var wg sync.WaitGroup
	var appendErr error
	var mu sync.Mutex
	parked := false
	for i, c := range calls {
		wg.Go(func() {
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
			err := h.append(ctx, sess.ID, turnID, store.Event{Kind: EventActionResult, Data: data(actionResult{
				CallID: actions[i].CallID, ModelCallID: c.ID, Tool: c.Name, IsError: out.IsError, Result: out.Result,
				DurationMs: time.Since(start).Milliseconds(),
			})})
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
func (h *Host) execute(ctx context.Context, sess store.Session, turnID, callID string, c model.ToolCall) (out tool.Output, waits bool) {
	t, ok := h.tools.Lookup(c.Name)
	if !ok {
		return tool.ErrorOutput((&tool.UnknownToolError{Name: c.Name, Available: h.tools.Names()}).Error()), false
	}
	in, err := t.Validate(c.Input)
	if err != nil {
		return tool.ErrorOutput(err.Error()), false
	}
	if needed, reason := in.NeedsApproval(); needed {
		if reason != nil {
			h.logger.Warn("approval predicate failed; treating the call as needing approval", "tool", c.Name, "err", reason)
		}
		if _, err := h.park(ctx, t, in, callID, sess.ID, turnID, c.ID, sess.Principal); err != nil {
			return tool.ErrorOutput("parking the call for approval failed: " + err.Error()), false
		}
		return tool.Output{}, true
	}
	return h.run(ctx, sess, turnID, t, in, callID), false
}

// run runs a validated call in a session.
func (h *Host) run(ctx context.Context, sess store.Session, turnID string, t *tool.Tool, in *tool.Input, callID string) (out tool.Output) {
	ctx, end := h.telemetry.startTool(ctx, t.Name(), callID, sess.ID)
	defer func() { end(out) }()
	ws := h.WorkspaceDir(sess.ID)
	if t.Execution() == tool.Agent {
		if err := osMkdirAll(ws); err != nil {
			return tool.ErrorOutput("creating the session workspace: " + err.Error())
		}
		if err := agenttool.Materialize(ws, h.tools); err != nil {
			return tool.ErrorOutput(err.Error())
		}
		return agenttool.Run(ctx, t, in, agenttool.RunOptions{Workspace: ws, CallID: callID, SessionID: sess.ID})
	}
	call := tool.NewCall(tool.CallInfo{
		ID: callID, Tool: t.Name(), StateRoot: h.stateRoot, Logger: h.logger, Host: h.servicesFor(sess.ID, turnID), Sessions: h.sessionsFor(),
		Artifacts: artifacts{h: h, sessionID: sess.ID, turnID: turnID, callID: callID},
		Session:   tool.Session{ID: sess.ID, Channel: sess.Channel, Mode: sess.Mode, Principal: sess.Principal},
		Workspace: h.sessionWorkspace(sess.ID),
	})
	out, err := t.Run(ctx, call, in)
	if err != nil {
		return tool.ErrorOutput(err.Error())
	}
	return out
}

// resultText is what the model reads of a result: a string as it is, the
// text of a Result's content, or the JSON.
func resultText(out tool.Output) string {
	var s string
	if json.Unmarshal(out.Result, &s) == nil {
		return s
	}
	var r tool.Result
	if json.Unmarshal(out.Result, &r) == nil && r.Content != nil {
		var parts []string
		for _, c := range r.Content {
			switch c.Type {
			case "text":
				parts = append(parts, c.Text)
			case "resource":
				if c.Resource != nil {
					parts = append(parts, c.Resource.Text)
				}
			default:
				parts = append(parts, fmt.Sprintf("[%s content, %s]", c.Type, c.MimeType))
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, "\n")
		}
	}
	return string(out.Result)
}

// history rebuilds the conversation from the session's stored events: user
// and assistant messages, the model's tool calls and their results. Calls
// made directly are not part of it; a call whose result never came (its
// host died) gets a result saying so, as the APIs require one.
func (h *Host) history(ctx context.Context, sessionID string) ([]model.Message, map[string]string, error) {
	var msgs []model.Message
	tags := map[string]string{}
	requested := map[string]int{} // model call id -> index of its assistant message
	answered := map[string]bool{}
	err := h.eachEvent(ctx, sessionID, func(e store.Event) {
		switch e.Kind {
		case EventSessionTagged:
			var tag struct{ Key, Value string }
			if json.Unmarshal(e.Data, &tag) == nil {
				tags[tag.Key] = tag.Value
			}
		case EventMessage:
			var m struct{ Role, Text string }
			if json.Unmarshal(e.Data, &m) != nil {
				return
			}
			if m.Role == "assistant" {
				msgs = append(msgs, model.Message{Role: model.Assistant, Text: m.Text})
			} else if n := len(msgs); n > 0 && msgs[n-1].Role == model.User {
				msgs[n-1].Text = strings.TrimPrefix(msgs[n-1].Text+"\n\n"+m.Text, "\n\n")
			} else {
				msgs = append(msgs, model.Message{Role: model.User, Text: m.Text})
			}
		case EventActionsRequested:
			var a struct{ Actions []requestedAction }
			if json.Unmarshal(e.Data, &a) != nil {
				return
			}
			if n := len(msgs); n == 0 || msgs[n-1].Role != model.Assistant {
				msgs = append(msgs, model.Message{Role: model.Assistant})
			}
			last := len(msgs) - 1
			for _, act := range a.Actions {
				input := act.Input
				if input == nil {
					input = json.RawMessage(act.InputText)
				}
				msgs[last].ToolCalls = append(msgs[last].ToolCalls, model.ToolCall{ID: act.ModelCallID, Name: act.Tool, Input: input})
				requested[act.ModelCallID] = last
			}
		case EventActionResult:
			var r actionResult
			if json.Unmarshal(e.Data, &r) != nil || r.Direct || r.ModelCallID == "" {
				return
			}
			if _, ok := requested[r.ModelCallID]; !ok || answered[r.ModelCallID] {
				return
			}
			answered[r.ModelCallID] = true
			res := model.ToolResult{CallID: r.ModelCallID, Content: resultText(tool.Output{Result: r.Result}), IsError: r.IsError}
			if n := len(msgs); n > 0 && msgs[n-1].Role == model.User && msgs[n-1].Text == "" {
				msgs[n-1].ToolResults = append(msgs[n-1].ToolResults, res)
			} else {
				msgs = append(msgs, model.Message{Role: model.User, ToolResults: []model.ToolResult{res}})
			}
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return fillMissingResults(msgs, answered), tags, nil
}

// fillMissingResults gives every tool call without a result one that says
// so, right after its assistant message.
func fillMissingResults(msgs []model.Message, answered map[string]bool) []model.Message {
	var out []model.Message
	for i, m := range msgs {
		out = append(out, m)
		if m.Role != model.Assistant {
			continue
		}
		var missing []model.ToolResult
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				missing = append(missing, model.ToolResult{CallID: c.ID, Content: "no result: the turn ended before this call finished", IsError: true})
			}
		}
		if len(missing) == 0 {
			continue
		}
		if i+1 < len(msgs) && msgs[i+1].Role == model.User {
			msgs[i+1].ToolResults = append(missing, msgs[i+1].ToolResults...)
			continue
		}
		out = append(out, model.Message{Role: model.User, ToolResults: missing})
	}
	return out
}

package host

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/internal/harnessturn"
	"github.com/agentsdk/agentsdk/internal/turnloop"
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
	ctx, span := h.telemetry.startTurn(ctx, sess, turnID)
	defer span.End()
	steps, err := h.loop(ctx, sess, turnID)
	span.SetAttributes(attribute.Int("turn.steps", steps))
	status := "completed"
	switch {
	case errors.Is(err, turnloop.ErrParked):
		status = "parked"
	case err != nil:
		status = "failed"
		span.SetAttributes(keyErrorType.String(errorType(err)))
		span.SetStatus(codes.Error, err.Error())
	}
	span.SetAttributes(attribute.String("turn.status", status))
	h.telemetry.turns.Add(context.WithoutCancel(ctx), 1, metric.WithAttributes(attribute.String("turn.status", status)))
	// A turn with calls parked parks, even when the host is shutting down:
	// the parked state is durable, and the decisions can come after a
	// restart.
	if errors.Is(err, turnloop.ErrParked) {
		// Stop holding the turn before parking it, and before a resumption
		// (possibly right here) tracks it afresh.
		h.leases.untrack(sess.ID, turnID)
		if err := h.log.ParkTurn(context.WithoutCancel(ctx), f); err != nil {
			h.logger.Error("parking a turn", "session", sess.ID, "turn", turnID, "err", err)
			return
		}
		if h.cancelledParking(ctx, sess.ID, turnID) {
			return
		}
		// Decisions may have come while the turn ran its other calls.
		h.drive(ctx, sess.ID, turnID)
		return
	}
	defer h.leases.untrack(sess.ID, turnID)
	var end api.Payload = api.TurnCompleted{Steps: &steps}
	if err != nil {
		code, reason := failure(ctx, err)
		end = api.TurnFailed{Code: code, Reason: reason, Steps: &steps}
	}
	if err := h.endTurn(ctx, f, end); err != nil {
		h.logger.Error("ending a turn", "session", sess.ID, "turn", turnID, "err", err)
	}
}

// failure is what turn.failed says: why the turn's context ended
// (cancelled, shut down, lease lost), or the error, classified.
func failure(ctx context.Context, err error) (api.FailureCode, string) {
	cause := context.Cause(ctx)
	if cause == nil || ctx.Err() == nil {
		return failureCode(err), err.Error()
	}
	switch {
	case errors.Is(cause, errCancelled):
		return api.FailureCancelled, "cancelled"
	case errors.Is(cause, errStopping):
		return api.FailureInterrupted, reasonShutdown
	}
	return api.FailureInterrupted, cause.Error()
}

// failureCode classifies why a turn failed: a model call's failure by its
// reason, a usage limit, the step limit, a missing model; else internal
// (the host's own trouble: its store, its lease).
func failureCode(err error) api.FailureCode {
	if me, ok := errors.AsType[*model.Error](err); ok {
		return api.FailureCode(me.Reason)
	}
	switch {
	case isOverLimit(err):
		return api.FailureBudgetExceeded
	case errors.Is(err, turnloop.ErrStepLimit):
		return api.FailureStepLimit
	case errors.Is(err, model.ErrNotConfigured):
		return api.FailureNotConfigured
	}
	if _, ok := errors.AsType[*harnessturn.Failure](err); ok {
		return api.FailureHarness
	}
	return api.FailureInternal
}

func (h *Host) loop(ctx context.Context, sess api.Session, turnID string) (int, error) {
	if sess.Runtime != "" && sess.Runtime != harness.Native {
		return h.harnessTurn(ctx, sess, turnID)
	}
	m := h.turnModel(sess.ID)
	if m == nil {
		return 0, h.opts.ModelError
	}
	var asked []api.Event // the raise_usage_limit requests and decisions
	hist, err := h.readContext(ctx, sess, func(e api.Event) {
		if e.Kind == api.KindApprovalRequested || e.Kind == api.KindApprovalResolved {
			asked = append(asked, e)
		}
	})
	if err != nil {
		return 0, err
	}
	raised := readRaises(asked, turnID, time.Now().UTC().Format(time.DateOnly))
	if err := h.startChannel(ctx, sess, turnID, hist); err != nil {
		return 0, err
	}
	span := trace.SpanFromContext(ctx)
	for k, v := range hist.Tags() {
		span.SetAttributes(attribute.String("session.tag."+k, v))
	}
	cfg := h.turnConfig(h.modelTools(), sess.ID)
	if m != h.opts.Model && cfg.Context.Summarizer == nil {
		// A session's hooked model (an eval's replayed answers) answers
		// its turns, not its summaries: those are the host's model's.
		cfg.Context.Summarizer = h.opts.Model
	}
	cfg.Model = m
	return turnloop.Run(ctx, cfg, turnEnv{h, sess, turnID, raised, &stubbedCalls{}}, hist)
}

// toolSpecs are the agent's tools as a model is offered them.
func (h *Host) toolSpecs() []model.Tool {
	specs := make([]model.Tool, 0, h.tools.Len()+1)
	for _, t := range h.tools.Tools() {
		specs = append(specs, model.Tool{Name: t.Name(), Description: t.Description(), InputSchema: t.InputSchema()})
	}
	return specs
}

// turnConfig is the loop's configuration from the host's options, for a
// turn of the session.
func (h *Host) turnConfig(tools []model.Tool, sessionID string) turnloop.Config {
	return turnloop.Config{Model: h.opts.Model, System: h.opts.System, Tools: tools, MaxSteps: h.opts.MaxSteps, MaxTokens: h.opts.MaxTokens,
		ModelTimeout: h.opts.ModelTimeout, ToolConcurrency: h.opts.ToolConcurrency, Retries: h.opts.ModelRetries, Logger: h.logger,
		Provider: h.opts.ModelConfig.Provider, ModelName: h.opts.ModelConfig.Name, Prices: h.prices,
		CacheKey: sessionID, Context: h.contextConfig()}
}

// turnEnv is a local turn's environment: the host's stream, fenced by the
// turn's lease, and its tools.
type turnEnv struct {
	h      *Host
	sess   api.Session
	turnID string
	raised raises // the usage limits raised for it
	// stubbed are the calls the session's hooks answered, whose
	// action.result Emit marks stubbed.
	stubbed *stubbedCalls
}

func (e turnEnv) Admit(ctx context.Context, req *model.Request) (func(), error) {
	if !e.h.opts.Limits.set() {
		return func() {}, nil
	}
	next := e.h.estimate(turnloop.RequestBytes(req), model.MaxTokensFor(req, model.Config{MaxTokens: e.h.opts.MaxTokens}), e.h.opts.ModelConfig.Name)
	return e.h.admit(ctx, e.sess, e.turnID, e.raised, next, "res_"+tool.NewCallID("model"))
}

func (e turnEnv) Emit(ctx context.Context, payloads ...api.Payload) error {
	for i, p := range payloads {
		if r, ok := p.(api.ActionResult); ok && e.stubbed.take(r.CallID) {
			r.Stubbed = true
			payloads[i] = r
		}
	}
	return e.h.emit(ctx, e.sess.ID, e.turnID, payloads...)
}

func (e turnEnv) Execute(ctx context.Context, callID string, c model.ToolCall) (tool.Output, bool) {
	out, waits, stubbed := e.h.execute(ctx, e.sess, e.turnID, callID, c)
	if stubbed {
		e.stubbed.add(callID)
	}
	return out, waits
}

// execute runs one of the model's tool calls. Every failure becomes a
// result the model can read and act on. A call that needs approval is
// parked instead: waits is true, and its result comes later. A valid
// call the session's hooks answer (SessionHooks.Call) neither runs nor
// parks: stubbed is true.
func (h *Host) execute(ctx context.Context, sess api.Session, turnID, callID string, c model.ToolCall) (out tool.Output, waits, stubbed bool) {
	t, ok := h.lookupForModel(c.Name)
	if !ok {
		return tool.ErrorOutput((&tool.UnknownToolError{Name: c.Name, Available: h.tools.Names()}).Error()), false, false
	}
	in, err := t.Validate(c.Input)
	if err != nil {
		return tool.ErrorOutput(err.Error()), false, false
	}
	if out, ok := h.hookedCall(ctx, sess.ID, turnID, callID, t, c.Input); ok {
		return h.fitForModel(ctx, sess.ID, turnID, callID, out), false, true
	}
	if h.needsApproval(t, in) {
		if _, err := h.park(ctx, t, in, parkSpec{callID: callID, sessionID: sess.ID, turnID: turnID, modelCallID: c.ID, by: sess.Principal}); err != nil {
			return tool.ErrorOutput("parking the call for approval failed: " + err.Error()), false, false
		}
		return tool.Output{}, true, false
	}
	out = h.run(ctx, callSpec{id: callID, modelCallID: c.ID, tool: t, in: in, session: &sess, turnID: turnID})
	return h.fitForModel(ctx, sess.ID, turnID, callID, out), false, false
}

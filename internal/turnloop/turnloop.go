// Package turnloop is a model turn's loop: model calls and tool calls in
// turn, until the model stops calling tools or the step limit is reached.
// The host runs it for a local turn (host.Host) and a runner for a cloud
// turn (internal/runner): the same loop, so both record the same events in
// the same order. What a turn records and how it runs a tool call is the
// Env's.
//
// A model call streams its text as message.delta events and its reasoning
// as reasoning.delta events, batched (DeltaBatch), with a reasoning event
// for each complete block (its signature or redacted data kept whole) in
// its place among them — all before the answer's message and
// actions.requested. History rebuilds the blocks from those events, so a
// turn resumed from its stored history (after a park for approval, or a
// later turn) sends them back to the provider unchanged.
//
// A call that fails with a *model.Error worth retrying (a rate limit, an
// overload, a broken connection: model.Error.Retryable) before it yielded
// anything is tried again, up to Config.Retries times: after the wait the
// provider asked for (RetryAfter), or else an exponential backoff with
// full jitter (RetryBase doubling to RetryCap). Each retry is recorded
// first as a model.retry event (attempt, code, status, wait, the
// provider's message). Config.ModelTimeout bounds the whole call, its
// retries and waits included: a wait that would end past it is not waited
// — the call fails with the provider's error — and a call that runs past
// it fails with a *model.Error of reason timeout. Errors of the model
// reach Run's caller wrapping a *model.Error; the step limit is
// ErrStepLimit, wrapped.
//
// A tool result's images (tool.Result content of type image) reach the
// model as model.ToolResult.Images (ResultContent); each provider sends
// them as it can.
package turnloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/tool"
)

// Env is what a turn's loop records to, and how it runs a tool call.
type Env interface {
	// Emit records payloads on the turn's stream, in order. An error ends
	// the turn (the stream refused it: the lease was lost, the host is
	// gone).
	Emit(ctx context.Context, payloads ...api.Payload) error
	// Execute runs one of the model's calls, announced under callID.
	// Every failure is an output the model can read; waits says the call
	// was parked for a person's decision instead, and its result comes
	// later.
	Execute(ctx context.Context, callID string, c model.ToolCall) (out tool.Output, waits bool)
	// Admit is asked before each model call, with the request: an error
	// ends the turn without the call (a budget reached: the host's
	// budget error, or ErrParked when it parked the turn for a person to
	// raise the budget). done is called once the call's usage is
	// recorded, or the call failed.
	Admit(ctx context.Context, req *model.Request) (done func(), err error)
}

// Config is a turn's model, tools and limits.
type Config struct {
	Model     model.Provider
	System    string
	Tools     []model.Tool
	MaxSteps  int
	MaxTokens int
	// ModelTimeout bounds each model call, its retries and their waits
	// included; 0: no bound.
	ModelTimeout    time.Duration
	ToolConcurrency int
	// Provider and ModelName label each call's usage (model.usage): the
	// configured provider and model; a provider's answer may name the
	// model more precisely, and then that is recorded.
	Provider, ModelName string
	// Prices prices each call's usage; a model without an entry has no
	// cost (null), never a made-up one.
	Prices model.Prices
	// Retries bounds the retries of one model call that failed in a way
	// worth retrying (model.Error.Retryable) before it streamed anything;
	// 0: none.
	Retries int
	// Logger receives a panic in a tool call's goroutine, recovered.
	Logger *slog.Logger
	// CacheKey is each request's model.Request.CacheKey: the session's id.
	CacheKey string
	// Context keeps the requests within the model's window (context.go).
	Context ContextConfig
}

// ErrParked ends a turn while calls of it wait for approval: the turn
// stays running, parked, and runs again from its history once they are
// decided.
var ErrParked = errors.New("waiting for approval")

// ErrStepLimit ends a turn whose model was still calling tools after
// Config.MaxSteps model calls; Run returns it wrapped.
var ErrStepLimit = errors.New("step limit reached")

// Run runs a turn from its history and returns how many steps it took:
// nil when the model answered without calling tools, ErrParked when calls
// wait for a decision, else why the turn failed — ErrStepLimit wrapped, a
// *model.Error wrapped when the model call failed (a timeout too:
// model.ReasonTimeout; a request that does not fit the window even
// compacted: model.ReasonContextLength), or the Env's error. The turn's
// messages are pushed onto hist as they come.
func Run(ctx context.Context, cfg Config, env Env, hist *History) (int, error) {
	if cfg.ToolConcurrency < 1 {
		cfg.ToolConcurrency = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	for step := 1; step <= cfg.MaxSteps; step++ {
		req := rebuild(cfg, hist)
		req, bytes, err := fitContext(ctx, cfg, env, hist, req, RequestBytes(req))
		if err != nil {
			return step, err
		}
		done, err := env.Admit(ctx, req)
		if err != nil {
			return step, err
		}
		start := time.Now()
		ans, err := callModel(ctx, cfg, env, req)
		if err != nil {
			done()
			return step, err
		}
		var records []api.Payload
		if ans.text != "" {
			records = append(records, api.Message{Role: api.RoleAssistant, Text: ans.text})
		}
		usage := UsageOf(cfg, ans.end, time.Since(start))
		usage.RequestBytes = bytes
		if usage.Reported {
			hist.calibrate(usage.InputTokens+usage.CacheReadTokens+usage.CacheWriteTokens, usage.RequestBytes)
		}
		records = append(records, usage)
		err = env.Emit(ctx, records...)
		done()
		if err != nil {
			return step, err
		}
		hist.Push(model.Message{Role: model.Assistant, Text: ans.text, Reasoning: ans.reasoning, ToolCalls: ans.calls})
		if len(ans.calls) == 0 {
			return step, nil
		}
		results, err := runActions(ctx, cfg, env, ans.calls)
		if err != nil {
			return step, err
		}
		hist.Push(model.Message{Role: model.User, ToolResults: results})
		if ctx.Err() != nil {
			return step, ctx.Err()
		}
	}
	return cfg.MaxSteps, fmt.Errorf("%w: the model was still calling tools after %d steps", ErrStepLimit, cfg.MaxSteps)
}

// UsageOf is the model.usage record of one call that ended with end (nil:
// the provider said nothing of usage) after took.
func UsageOf(cfg Config, end *model.End, took time.Duration) api.ModelUsage {
	rec := api.ModelUsage{Provider: cfg.Provider, Model: cfg.ModelName, DurationMs: took.Milliseconds()}
	var u model.Usage
	if end != nil {
		if end.Model != "" {
			rec.Model = end.Model
		}
		rec.StopReason = end.StopReason
		if end.Usage != nil {
			u, rec.Reported = *end.Usage, true
		}
	}
	rec.InputTokens, rec.OutputTokens, rec.CacheReadTokens, rec.CacheWriteTokens, rec.ReasoningTokens =
		u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens
	if cost, ok := cfg.Prices.CostOf(u, cfg.ModelName, rec.Model); ok {
		c := int64(cost)
		rec.CostMicroUsd = &c
	}
	return rec
}

// answer is a model call's answer: its text, its reasoning blocks, its
// tool calls and its end (usage, model, stop reason; nil if the provider
// sent none).
type answer struct {
	text      string
	reasoning []model.Reasoning
	calls     []model.ToolCall
	end       *model.End
}

// callModel streams one model answer, recording its text and reasoning
// deltas as they come, a batch at a time (DeltaBatch), and its complete
// reasoning blocks in their place among them, all of them before it
// returns. A failure worth retrying before anything streamed is retried
// (retry.go), each retry recorded first; ModelTimeout bounds the whole
// call, retries and their waits included.
func callModel(ctx context.Context, cfg Config, env Env, req *model.Request) (answer, error) {
	mctx := ctx
	if cfg.ModelTimeout > 0 {
		var cancel context.CancelFunc
		mctx, cancel = context.WithTimeoutCause(ctx, cfg.ModelTimeout,
			&model.Error{Reason: model.ReasonTimeout, Message: fmt.Sprintf("the model did not answer within %s", cfg.ModelTimeout)})
		defer cancel()
	}
	batch := newDeltas(ctx, env)
	defer batch.flush() // an answer cut short keeps what it streamed
	for attempt := 1; ; attempt++ {
		ans, streamed, err := streamAnswer(mctx, cfg, batch, req)
		if err == nil {
			err = context.Cause(mctx)
			if mctx.Err() == nil {
				return ans, batch.flush()
			}
		}
		if _, ok := errors.AsType[emitError](err); ok {
			return answer{}, err
		}
		switch {
		case ctx.Err() != nil:
			return answer{}, fmt.Errorf("model: %w", err)
		case mctx.Err() != nil:
			return answer{}, fmt.Errorf("model: %w", context.Cause(mctx))
		}
		merr := model.Classify(err)
		if streamed || !merr.Retryable() || attempt > cfg.Retries {
			return answer{}, fmt.Errorf("model: %w", merr)
		}
		if err := retryAfter(ctx, mctx, env, batch, attempt, merr); err != nil {
			return answer{}, err
		}
	}
}

// emitError is a record the stream refused while the model streamed.
type emitError struct{ err error }

func (e emitError) Error() string { return e.err.Error() }
func (e emitError) Unwrap() error { return e.err }

// streamAnswer is one attempt at a model call. streamed says it yielded
// something (and so cannot be retried).
func streamAnswer(ctx context.Context, cfg Config, batch *deltas, req *model.Request) (ans answer, streamed bool, err error) {
	var text strings.Builder
	for chunk, err := range cfg.Model.Stream(ctx, req) {
		if err != nil {
			return answer{}, streamed, err
		}
		streamed = streamed || chunk.End == nil
		if chunk.Text != "" {
			text.WriteString(chunk.Text)
			if err := batch.add(api.MessageDelta{Text: chunk.Text}); err != nil {
				return answer{}, true, emitError{err}
			}
		}
		if chunk.ReasoningText != "" {
			if err := batch.add(api.ReasoningDelta{Text: chunk.ReasoningText}); err != nil {
				return answer{}, true, emitError{err}
			}
		}
		if r := chunk.Reasoning; r != nil {
			ans.reasoning = append(ans.reasoning, *r)
			if err := batch.add(api.Reasoning{Text: r.Text, Signature: r.Signature, Redacted: r.Redacted}); err != nil {
				return answer{}, true, emitError{err}
			}
		}
		if chunk.ToolCall != nil {
			c := *chunk.ToolCall
			if c.ID == "" {
				c.ID = fmt.Sprintf("call_%d", len(ans.calls)+1) // some servers send none
			}
			ans.calls = append(ans.calls, c)
		}
		if chunk.End != nil {
			ans.end = chunk.End
		}
	}
	ans.text = text.String()
	return ans, streamed, nil
}

// runActions announces the model's tool calls, runs them with bounded
// concurrency and records each result as it comes.
func runActions(ctx context.Context, cfg Config, env Env, calls []model.ToolCall) ([]model.ToolResult, error) {
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
	if err := env.Emit(ctx, api.ActionsRequested{Actions: actions}); err != nil {
		return nil, err
	}
	results := make([]model.ToolResult, len(calls))
	sem := make(chan struct{}, cfg.ToolConcurrency)
	var wg sync.WaitGroup
	var appendErr error
	var mu sync.Mutex
	parked := false
	for i, c := range calls {
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					cfg.Logger.Error("running a turn's tool call panicked", "call", actions[i].CallID, "panic", p, "stack", string(debug.Stack()))
				}
			}()
			sem <- struct{}{}
			defer func() { <-sem }()
			start := time.Now()
			out, waits := env.Execute(ctx, actions[i].CallID, c)
			if waits {
				mu.Lock()
				parked = true
				mu.Unlock()
				return // its result comes when someone decides
			}
			text, images := ResultContent(out)
			results[i] = model.ToolResult{CallID: c.ID, Content: text, Images: images, IsError: out.IsError}
			err := env.Emit(ctx, api.ActionResult{
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
		return results, ErrParked
	}
	return results, appendErr
}

// RequestBytes is the size of what a model call sends — its system
// prompt, tools and messages — from which a budget estimates its input
// (a token per four bytes).
func RequestBytes(req *model.Request) int64 {
	n := len(req.System)
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	for _, m := range req.Messages {
		n += len(m.Text) + 8
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Input) + 8
		}
		for _, r := range m.ToolResults {
			n += len(r.Content) + 8
		}
		for _, b := range m.Reasoning {
			n += len(b.Text) + len(b.Signature) + len(b.Redacted)
		}
	}
	return int64(n)
}

// Package turnloop is a model turn's loop: model calls and tool calls in
// turn, until the model stops calling tools or the step limit is reached.
// The host runs it for a local turn (host.Host) and a runner for a cloud
// turn (internal/runner): the same loop, so both record the same events in
// the same order. What a turn records and how it runs a tool call is the
// Env's.
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
	Model           model.Provider
	System          string
	Tools           []model.Tool
	MaxSteps        int
	MaxTokens       int
	ModelTimeout    time.Duration
	ToolConcurrency int
	// Provider and ModelName label each call's usage (model.usage): the
	// configured provider and model; a provider's answer may name the
	// model more precisely, and then that is recorded.
	Provider, ModelName string
	// Prices prices each call's usage; a model without an entry has no
	// cost (null), never a made-up one.
	Prices model.Prices
	// Logger receives a panic in a tool call's goroutine, recovered.
	Logger *slog.Logger
}

// ErrParked ends a turn while calls of it wait for approval: the turn
// stays running, parked, and runs again from its history once they are
// decided.
var ErrParked = errors.New("waiting for approval")

// ErrStepLimit ends a turn whose model was still calling tools after
// Config.MaxSteps model calls.
var ErrStepLimit = errors.New("step limit reached")

// Run runs a turn from its history and returns how many steps it took:
// nil when the model answered without calling tools, ErrParked when calls
// wait for a decision, else why the turn failed.
func Run(ctx context.Context, cfg Config, env Env, history []model.Message) (int, error) {
	if cfg.ToolConcurrency < 1 {
		cfg.ToolConcurrency = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	for step := 1; step <= cfg.MaxSteps; step++ {
		req := &model.Request{System: cfg.System, Messages: history, Tools: cfg.Tools, MaxTokens: cfg.MaxTokens}
		done, err := env.Admit(ctx, req)
		if err != nil {
			return step, err
		}
		start := time.Now()
		text, calls, end, err := callModel(ctx, cfg, env, req)
		if err != nil {
			done()
			return step, err
		}
		var answer []api.Payload
		if text != "" {
			answer = append(answer, api.Message{Role: api.RoleAssistant, Text: text})
		}
		answer = append(answer, UsageOf(cfg, end, time.Since(start)))
		err = env.Emit(ctx, answer...)
		done()
		if err != nil {
			return step, err
		}
		history = append(history, model.Message{Role: model.Assistant, Text: text, ToolCalls: calls})
		if len(calls) == 0 {
			return step, nil
		}
		results, err := runActions(ctx, cfg, env, calls)
		if err != nil {
			return step, err
		}
		history = append(history, model.Message{Role: model.User, ToolResults: results})
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
	price, ok := cfg.Prices.Lookup(cfg.ModelName)
	if !ok {
		price, ok = cfg.Prices.Lookup(rec.Model)
	}
	if ok {
		cost := int64(price.Cost(u))
		rec.CostMicroUsd = &cost
	}
	return rec
}

// callModel streams one model answer, recording its text deltas as they
// come, a batch at a time (DeltaBatch), all of them before it returns.
func callModel(ctx context.Context, cfg Config, env Env, req *model.Request) (string, []model.ToolCall, *model.End, error) {
	mctx, cancel := context.WithTimeoutCause(ctx, cfg.ModelTimeout, fmt.Errorf("the model did not answer within %s", cfg.ModelTimeout))
	defer cancel()
	var text strings.Builder
	var calls []model.ToolCall
	var end *model.End
	batch := newDeltas(ctx, env)
	defer batch.flush() // an answer cut short keeps what it streamed
	for chunk, err := range cfg.Model.Stream(mctx, req) {
		if err != nil {
			if cause := context.Cause(mctx); mctx.Err() != nil && ctx.Err() == nil {
				return "", nil, nil, fmt.Errorf("model: %w", cause)
			}
			return "", nil, nil, fmt.Errorf("model: %w", err)
		}
		if chunk.Text != "" {
			text.WriteString(chunk.Text)
			if err := batch.add(chunk.Text); err != nil {
				return "", nil, nil, err
			}
		}
		if chunk.End != nil {
			end = chunk.End
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
			return "", nil, nil, ctx.Err()
		}
		return "", nil, nil, fmt.Errorf("model: %w", err)
	}
	if err := batch.flush(); err != nil {
		return "", nil, nil, err
	}
	return text.String(), calls, end, nil
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
			results[i] = model.ToolResult{CallID: c.ID, Content: ResultText(out), IsError: out.IsError}
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

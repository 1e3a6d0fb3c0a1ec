package tool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
)

// Run runs a server tool's handler with validated input and returns its
// normalised [Output]. It never panics and never returns a Go error for what
// the handler did: an error the handler returns, a panic (whose stack goes
// to the call's logger, not into the result), a panic in a goroutine the
// handler started with [Call.Go], a value JSON cannot encode, and running
// past the tool's timeout all become an Output with IsError set.
//
// Run returns once the handler has returned and so have the goroutines it
// started with [Call.Go] (see there). On a timeout, or when ctx is
// cancelled, the handler's ctx is cancelled and Run returns at once,
// without waiting for a handler or goroutines that ignore ctx. A goroutine
// a handler starts with a bare go statement is not the call's: Run neither
// waits for it nor recovers its panic, which ends the process.
//
// The error is an [*AgentToolError] for an agent tool, which does not run
// in-process, or a plain error for input validated for another tool.
func (t *Tool) Run(ctx context.Context, call *Call, in *Input) (Output, error) {
	if t.execution != Server {
		return Output{}, &AgentToolError{Name: t.name}
	}
	if in == nil || in.tool != t {
		return Output{}, fmt.Errorf("running tool %s: the input was not validated for it", t.name)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, t.timeout, errTimeout)
	defer cancel()
	// work is what the handler and its goroutines see: ctx, also
	// cancelled when the handler fails or anything of the call panics.
	work, stop := context.WithCancelCause(ctx)
	defer stop(errHandlerReturned)
	g := &call.goroutines
	g.start(work, stop)

	// The handler runs in its own goroutine so that a call can return on
	// time even when the handler ignores ctx; its result is normalised back
	// here, where the stack is already grown.
	done := make(chan handlerResult, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				call.Logger().Error("tool handler panicked", slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
				g.panicked("the tool panicked: "+fmt.Sprint(p), errHandlerReturned)
				done <- handlerResult{panicked: true}
			}
		}()
		v, err := t.handler(work, call, in.value)
		done <- handlerResult{value: v, err: err}
	}()
	var r handlerResult
	select {
	case r = <-done:
	case <-ctx.Done():
		return g.end(t.interrupted(ctx, call)), nil
	}
	if r.err != nil {
		stop(errHandlerReturned) // the goroutines' work is moot
	}
	select {
	case <-g.wait():
	case <-ctx.Done():
		return g.end(t.interrupted(ctx, call)), nil
	}
	if r.panicked {
		return g.end(ErrorOutput("the tool panicked")), nil // g names the panic
	}
	return g.end(t.checkOutput(normaliseSafely(call, r.value, r.err, t.maxResult(call)))), nil
}

// interrupted is the result of a call whose ctx ended before it did.
func (t *Tool) interrupted(ctx context.Context, call *Call) Output {
	if errors.Is(context.Cause(ctx), errTimeout) {
		call.Logger().Warn("tool call timed out", slog.Duration("timeout", t.timeout))
		return ErrorOutput(fmt.Sprintf("timed out after %s", t.timeout))
	}
	return ErrorOutput("cancelled: " + context.Cause(ctx).Error())
}

type handlerResult struct {
	value    any
	err      error
	panicked bool // the panic is recorded in the call's goroutines
}

// normaliseSafely normalises a handler's result, turning a panic in a
// MarshalJSON method or an Error method into an error result.
func normaliseSafely(call *Call, v any, err error, limit int64) (out Output) {
	defer func() {
		if p := recover(); p != nil {
			call.Logger().Error("encoding tool result panicked", slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
			out = ErrorOutput(fmt.Sprintf("encoding the tool's result panicked: %v", p))
		}
	}()
	return normalise(v, err, limit)
}

var errTimeout = errors.New("tool call timed out")

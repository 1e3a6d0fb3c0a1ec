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
// to the call's logger, not into the result), a value JSON cannot encode,
// and running past the tool's timeout all become an Output with IsError set.
// On a timeout the handler's ctx is cancelled and Run returns at once,
// without waiting for a handler that ignores ctx.
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

	// The handler runs in its own goroutine so that a call can return on
	// time even when the handler ignores ctx; its result is normalised back
	// here, where the stack is already grown.
	done := make(chan handlerResult, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				call.Logger().Error("tool handler panicked", slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
				done <- handlerResult{panicked: fmt.Sprint(p)}
			}
		}()
		v, err := t.handler(ctx, call, in.value)
		done <- handlerResult{value: v, err: err}
	}()
	select {
	case r := <-done:
		if r.panicked != "" {
			return ErrorOutput("the tool panicked: " + r.panicked), nil
		}
		return normaliseSafely(call, r.value, r.err), nil
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), errTimeout) {
			call.Logger().Warn("tool call timed out", slog.Duration("timeout", t.timeout))
			return ErrorOutput(fmt.Sprintf("timed out after %s", t.timeout)), nil
		}
		return ErrorOutput("cancelled: " + context.Cause(ctx).Error()), nil
	}
}

type handlerResult struct {
	value    any
	err      error
	panicked string
}

// normaliseSafely normalises a handler's result, turning a panic in a
// MarshalJSON method or an Error method into an error result.
func normaliseSafely(call *Call, v any, err error) (out Output) {
	defer func() {
		if p := recover(); p != nil {
			call.Logger().Error("encoding tool result panicked", slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
			out = ErrorOutput(fmt.Sprintf("encoding the tool's result panicked: %v", p))
		}
	}()
	return normalise(v, err)
}

var errTimeout = errors.New("tool call timed out")

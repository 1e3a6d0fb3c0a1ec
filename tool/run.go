package tool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
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
// A call made with [CallInfo.Overrun] runs its handler on Run's own
// goroutine instead, which saves a goroutine switch per call: on a timeout
// or cancellation, Overrun gets the result at once, and Run returns it only
// once the handler has returned (ctx's end counts once the call watches
// its context: see CallInfo.Overrun).
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
	// work is what the handler and its goroutines see: ctx with the
	// tool's timeout, also cancelled when the handler fails or anything of
	// the call panics, and once the call has returned.
	var w *watchdog
	var onExpire expirer
	if call.overrun != nil {
		w = &watchdog{t: t, call: call}
		onExpire = w
	}
	g := &call.goroutines
	g.start()
	work := newCallCtx(ctx, t.timeout, onExpire, w != nil) // onExpire may end g's run at once, or any time from here
	defer work.release()
	g.attach(work)
	if w != nil {
		return t.runInline(work, w, call, in), nil
	}

	// The handler runs in its own goroutine so that a call can return on
	// time even when the handler ignores ctx; its result is normalised back
	// here, where the stack is already grown.
	done := resultChans.Get().(chan handlerResult)
	var left atomic.Int32 // handlerRunning, then handlerReturned or handlerLeft
	go func() {
		r := t.runHandler(work, call, in)
		if !left.CompareAndSwap(handlerRunning, handlerReturned) {
			t.overrunning.Add(-1) // Run returned without it
		}
		done <- r
	}()
	var r handlerResult
	select {
	case r = <-done:
		resultChans.Put(done) // empty again, and no one else sends on it
	case <-work.expiry():
		if left.CompareAndSwap(handlerRunning, handlerLeft) {
			t.overrunning.Add(1)
		}
		return g.end(t.interrupted(work, call)), nil
	}
	return t.finish(work, call, r), nil
}

// Where a handler Run started on a goroutine of its own stands.
const (
	handlerRunning int32 = iota
	handlerReturned
	handlerLeft // Run returned without it: it runs on
)

// Overrunning returns how many of the tool's handlers run on after their
// call returned without them — on its timeout or cancellation, which they
// ignore — among the calls whose handler Run starts on a goroutine of its
// own (calls in sessions, model turns, streamed direct calls). A direct
// call whose handler runs on its caller's goroutine (CallInfo.Overrun) is
// counted by its caller (serve's --max-overrun counts both).
func (t *Tool) Overrunning() int64 { return t.overrunning.Load() }

// runInline runs the handler on the caller's goroutine. A watchdog, w,
// is called when work expires: if it does before the handler returns, the
// watchdog settles the call at once with the interrupted result, which
// goes to call.overrun, and that is the result once the handler has
// returned. Whichever comes first, the handler's return or the watchdog,
// settles the call; the other finds it settled.
func (t *Tool) runInline(work *callCtx, w *watchdog, call *Call, in *Input) Output {
	r := t.runHandler(work, call, in)
	w.mu.Lock()
	late := w.settled // the watchdog answered, and has finished: it holds mu while it does
	w.settled = true
	w.mu.Unlock()
	if late {
		return w.early
	}
	return t.finish(work, call, r)
}

// watchdog settles an inline call whose ctx ends before its handler
// returns.
type watchdog struct {
	t       *Tool
	call    *Call
	mu      sync.Mutex
	settled bool
	early   Output // the result given to call.overrun
}

func (w *watchdog) expired(work *callCtx) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.settled {
		return
	}
	w.settled = true
	w.early = w.call.goroutines.end(w.t.interrupted(work, w.call))
	defer func() {
		if p := recover(); p != nil { // the host's, not the tool's: logged, and the result stands
			w.call.Logger().Error("answering a call that ran past its context panicked", slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
		}
	}()
	w.call.overrun(w.early)
}

// runHandler calls the handler, recovering a panic: it is logged with its
// stack and recorded as the call's, which cancels the call's context.
func (t *Tool) runHandler(work context.Context, call *Call, in *Input) (r handlerResult) {
	defer func() {
		if p := recover(); p != nil {
			call.Logger().Error("tool handler panicked", slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
			call.goroutines.panicked("the tool panicked: "+fmt.Sprint(p), errHandlerReturned)
			r = handlerResult{panicked: true}
		}
	}()
	v, err := t.handler(work, call, in.value)
	return handlerResult{value: v, err: err}
}

// finish turns what the handler returned into the call's result, once the
// goroutines it started with Call.Go have returned too (or ctx has ended).
func (t *Tool) finish(work *callCtx, call *Call, r handlerResult) Output {
	g := &call.goroutines
	if r.err != nil {
		work.stop(errHandlerReturned) // the goroutines' work is moot
	}
	if wait := g.wait(); wait != closed { // goroutines of the call run on
		select {
		case <-wait:
		case <-work.expiry():
			return g.end(t.interrupted(work, call))
		}
	}
	if r.panicked {
		return g.end(ErrorOutput("the tool panicked")) // g names the panic
	}
	return g.end(t.checkOutput(normaliseSafely(call, r.value, r.err, t.maxResult(call))))
}

// interrupted is the result of a call whose ctx ended before it did.
func (t *Tool) interrupted(work *callCtx, call *Call) Output {
	cause := work.expiryCause()
	if errors.Is(cause, errTimeout) {
		call.Logger().Warn("tool call timed out", slog.Duration("timeout", t.timeout))
		return ErrorOutput(fmt.Sprintf("timed out after %s", t.timeout))
	}
	return ErrorOutput("cancelled: " + cause.Error())
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

// resultChans holds the channels on which handlers' goroutines hand back
// their results, for reuse: one goes back once its result has been
// received, never when Run has given up on it (its goroutine may still
// send).
var resultChans = sync.Pool{New: func() any { return make(chan handlerResult, 1) }}

package tool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
)

// GoroutinePanicsMetric counts panics in goroutines started with
// [Call.Go], by tool (attribute tool.name) and by whether the panic
// reached the call's result (attribute tool.reported).
const GoroutinePanicsMetric = "agent.tool.goroutine_panics"

// errGoroutinePanicked is the cause of a call's context cancelled because
// a goroutine started with Call.Go panicked.
var errGoroutinePanicked = errors.New("a goroutine of the tool panicked")

// errHandlerReturned is the cause of a call's context cancelled because its
// handler returned an error or panicked.
var errHandlerReturned = errors.New("the tool's handler returned")

// Go runs fn in a new goroutine that belongs to the call. Use it instead of
// a bare go statement in a handler: Go cannot recover a panic in a
// goroutine other than the one it happens in, so a panic in a goroutine a
// handler starts with go ends the whole host, with every call and turn it
// runs. A panic in fn is recovered instead.
//
// fn receives the call's context: it is cancelled when the call times out
// or its caller goes away, when the handler returns an error or panics,
// when any goroutine of the call panics, and once the call has returned.
//
// While the call runs, [Tool.Run] does not record its result until the
// handler has returned and every goroutine started with Go has returned
// too: when the handler returns a result, the goroutines go on (their
// context is not cancelled) and the call waits for them; when it returns an
// error or panics, their context is cancelled first. The call's timeout
// bounds the wait: a call whose goroutines run past it times out, and Run
// returns without waiting for goroutines that ignore their context, as it
// does for a handler that ignores it. A goroutine that needs the call's
// workspace or services must finish within the call; one whose result the
// handler needs is joined by the handler itself (a channel, a
// sync.WaitGroup).
//
// A panic in fn is logged, with its stack, to the call's logger (tagged
// with the tool and call id) and counted in [GoroutinePanicsMetric] through
// call.Host.Otel. If the call has not returned yet, its context is
// cancelled and its result becomes an error, "a goroutine of the tool
// panicked: <value>", whatever the handler returns (the stack is never in
// the result). The first panic of a call, in the handler or in one of its
// goroutines, is the one the result names. A panic after the call has
// returned (it timed out, or fn was started once it had returned) is
// logged and counted only.
//
// Go may be called from the handler and from goroutines started with Go.
// On a Call that is not being run by [Tool.Run] (one made with [NewCall]
// for a test), fn runs with context.Background(), and a panic is logged
// and counted only.
func (c *Call) Go(fn func(ctx context.Context)) {
	g := &c.goroutines
	g.mu.Lock()
	var ctx context.Context = context.Background()
	if g.ctx != nil {
		ctx = g.ctx
	}
	counted := g.ctx != nil && !g.ended
	if counted {
		g.running++
	}
	g.mu.Unlock()
	go func() {
		defer func() {
			if p := recover(); p != nil {
				c.goroutinePanicked(p, debug.Stack())
			}
			if counted {
				g.exited()
			}
		}()
		fn(ctx)
	}()
}

// goroutinePanicked records, logs and counts a panic in a goroutine started
// with Go.
func (c *Call) goroutinePanicked(p any, stack []byte) {
	reported := c.goroutines.panicked(fmt.Sprintf("a goroutine of the tool panicked: %v", p), fmt.Errorf("%w: %v", errGoroutinePanicked, p))
	c.Logger().Error("a goroutine of the tool panicked", slog.Any("panic", p), slog.Bool("reported", reported), slog.String("stack", string(stack)))
	rep := "false"
	if reported {
		rep = "true"
	}
	c.Host.Otel.Count(context.Background(), GoroutinePanicsMetric, 1, map[string]string{"tool.name": c.Tool, "tool.reported": rep})
}

// goGroup is the goroutines a call started with Call.Go, and the first
// panic of the call while it runs.
type goGroup struct {
	mu      sync.Mutex
	ctx     *callCtx      // the running call's context; nil until Run starts
	running int           // goroutines started while the call runs, not yet returned
	idle    chan struct{} // closed when running drops to zero; nil unless Run waits
	panic   string        // what the result says about the call's first panic
	ended   bool          // Run has returned
}

// start begins a run of the call; attach gives it its context.
func (g *goGroup) start() {
	g.mu.Lock()
	g.ctx, g.ended, g.panic = nil, false, ""
	g.mu.Unlock()
}

// attach sets the context of the run begun (and maybe ended) since start.
func (g *goGroup) attach(ctx *callCtx) {
	g.mu.Lock()
	g.ctx = ctx
	g.mu.Unlock()
}

// panicked records the call's first panic, described by msg, and cancels
// the call's context with cause; false if the call has already returned
// (or never ran), so the panic cannot reach its result.
func (g *goGroup) panicked(msg string, cause error) bool {
	g.mu.Lock()
	if g.ctx == nil || g.ended {
		g.mu.Unlock()
		return false
	}
	first := g.panic == ""
	if first {
		g.panic = msg
	}
	ctx := g.ctx
	g.mu.Unlock()
	if first {
		ctx.stop(cause)
	}
	return true
}

// exited notes that a goroutine started while the call ran has returned.
func (g *goGroup) exited() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	if g.running == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// wait returns a channel closed once no goroutine of the call is running.
func (g *goGroup) wait() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running == 0 {
		return closed
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	return g.idle
}

// end ends the run: a panic from now on cannot reach the result. It
// returns out, or the error naming the run's first panic.
func (g *goGroup) end(out Output) Output {
	g.mu.Lock()
	g.ended = true
	msg := g.panic
	g.mu.Unlock()
	if msg != "" {
		return ErrorOutput(msg)
	}
	return out
}

var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

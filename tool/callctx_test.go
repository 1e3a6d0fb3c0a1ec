package tool

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// stdCallCtx is what callCtx replaces: the tool's timeout under the
// caller's context, and a context cancelled with a cause under that.
func stdCallCtx(parent context.Context, timeout time.Duration) (context.Context, context.CancelCauseFunc, func()) {
	t, cancel := context.WithTimeoutCause(parent, timeout, errTimeout)
	w, stop := context.WithCancelCause(t)
	return w, stop, func() { stop(errHandlerReturned); cancel() }
}

// seen is what a handler can tell of its context, and of contexts it
// derives from it.
type seen struct {
	err, cause               error
	derivedErr, derivedCause error
	timeoutErr               error // of a context.WithTimeout derived before it ended
	afterFunc                bool  // a context.AfterFunc registered before it ended ran
}

type ctxKey struct{}

// watchCtx derives what seen reports from ctx before it ends.
func watchCtx(ctx context.Context) func() seen {
	derived, cancel := context.WithCancel(ctx)
	timed, cancelTimed := context.WithTimeout(ctx, time.Hour)
	ran := make(chan struct{})
	context.AfterFunc(ctx, func() { close(ran) })
	return func() seen {
		defer cancel()
		defer cancelTimed()
		<-ctx.Done()
		<-derived.Done()
		<-timed.Done()
		var after bool
		select {
		case <-ran:
			after = true
		case <-time.After(5 * time.Second):
		}
		return seen{err: ctx.Err(), cause: context.Cause(ctx), derivedErr: derived.Err(), derivedCause: context.Cause(derived),
			timeoutErr: timed.Err(), afterFunc: after}
	}
}

// A call's context behaves as the two standard contexts it replaces, and
// so do contexts derived from it: at the timeout, when the caller's
// context ends (with its cause, or at its earlier deadline), when the call
// stops it with a cause, and when the call returns.
func TestCallCtxAsStandardContexts(t *testing.T) {
	errCaller := errors.New("the caller went away")
	errPanic := errors.New("a goroutine of the tool panicked: boom")
	type scenario struct {
		name    string
		timeout time.Duration
		parent  func() (context.Context, func()) // the caller's context, and what ends it
		act     func(stop func(error), release func(), end func())
	}
	scenarios := []scenario{
		{"timeout", 200 * time.Millisecond, func() (context.Context, func()) { return context.Background(), func() {} },
			func(stop func(error), release func(), end func()) {}},
		{"caller cancelled with a cause", time.Hour, func() (context.Context, func()) {
			ctx, cancel := context.WithCancelCause(context.WithValue(context.Background(), ctxKey{}, "v"))
			return ctx, func() { cancel(errCaller) }
		}, func(stop func(error), release func(), end func()) { end() }},
		{"caller's earlier deadline", time.Hour, func() (context.Context, func()) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			return ctx, cancel
		}, func(stop func(error), release func(), end func()) {}},
		{"stopped with a cause, then the caller cancelled", time.Hour, func() (context.Context, func()) {
			ctx, cancel := context.WithCancelCause(context.Background())
			return ctx, func() { cancel(errCaller) }
		}, func(stop func(error), release func(), end func()) { stop(errPanic); end() }},
		{"released", time.Hour, func() (context.Context, func()) { return context.Background(), func() {} },
			func(stop func(error), release func(), end func()) { release() }},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			run := func(ours, lazy bool) (seen, time.Time) {
				parent, end := sc.parent()
				var (
					ctx     context.Context
					stop    func(error)
					release func()
				)
				if ours {
					c := newCallCtx(parent, sc.timeout, nil, lazy)
					ctx, stop, release = c, c.stop, c.release
				} else {
					ctx, stop, release = stdCallCtx(parent, sc.timeout)
				}
				defer release()
				if ctx.Err() != nil || context.Cause(ctx) != nil {
					t.Errorf("before it ends: err %v, cause %v", ctx.Err(), context.Cause(ctx))
				}
				if got := ctx.Value(ctxKey{}); got != parent.Value(ctxKey{}) {
					t.Errorf("value %v, want the caller's %v", got, parent.Value(ctxKey{}))
				}
				deadline, _ := ctx.Deadline()
				observe := watchCtx(ctx)
				sc.act(stop, release, end)
				return observe(), deadline
			}
			want, wantDeadline := run(false, false)
			for _, lazy := range []bool{false, true} {
				got, gotDeadline := run(true, lazy)
				if got != want {
					t.Errorf("call context (lazy %v): %+v\nstandard contexts: %+v", lazy, got, want)
				}
				if d := gotDeadline.Sub(wantDeadline); d < -time.Second || d > time.Second {
					t.Errorf("deadline %v, standard %v", gotDeadline, wantDeadline)
				}
			}
		})
	}
}

// Only the deadline and the caller expire a call's context: not stop, and
// not release.
func TestCallCtxExpiry(t *testing.T) {
	errCaller := errors.New("the caller went away")
	parent, cancel := context.WithCancelCause(context.Background())
	fired := make(chan struct{}, 2)
	c := newCallCtx(parent, time.Hour, expireFunc(func(*callCtx) { fired <- struct{}{} }), false)
	c.stop(errHandlerReturned)
	select {
	case <-c.expiry():
		t.Fatal("stop expired the context")
	default:
	}
	cancel(errCaller)
	<-c.expiry()
	<-fired
	if c.expiryCause() != errCaller || context.Cause(c) != errHandlerReturned {
		t.Errorf("expiry cause %v (want the caller's), cause %v (want the first, stop's)", c.expiryCause(), context.Cause(c))
	}

	timed := newCallCtx(context.Background(), 10*time.Millisecond, nil, false)
	<-timed.expiry()
	if !errors.Is(timed.expiryCause(), errTimeout) || timed.Err() != context.DeadlineExceeded {
		t.Errorf("at the timeout: expiry cause %v, err %v", timed.expiryCause(), timed.Err())
	}

	called := false
	ended := newCallCtx(parent, 10*time.Millisecond, expireFunc(func(*callCtx) { called = true }), false) // the parent has ended: expired at once
	if !called || ended.expiryCause() != errCaller {
		t.Errorf("a call under an ended context: onExpire called %v, expiry cause %v", called, ended.expiryCause())
	}
	r := newCallCtx(context.Background(), 20*time.Millisecond, expireFunc(func(*callCtx) { t.Error("a released context expired") }), false)
	r.release()
	time.Sleep(50 * time.Millisecond)
}

// Contexts derived from a call's context register with it, as with a
// standard context: no goroutine each.
func TestCallCtxDerivedWithoutGoroutines(t *testing.T) {
	c := newCallCtx(context.Background(), time.Hour, nil, false)
	before := runtime.NumGoroutine()
	var cancels []context.CancelFunc
	for range 100 {
		d, cancel := context.WithCancel(c)
		cancels = append(cancels, cancel)
		_ = d
	}
	if n := runtime.NumGoroutine() - before; n > 10 {
		t.Errorf("100 derived contexts started %d goroutines", n)
	}
	for _, cancel := range cancels[:50] {
		cancel()
	}
	c.mu.Lock()
	left := len(c.afters)
	c.mu.Unlock()
	if left != 50 {
		t.Errorf("after 50 of 100 derived contexts were cancelled, %d are registered", left)
	}
	c.release()
	for _, cancel := range cancels[50:] {
		cancel()
	}
}

// Timers are reused once stopped, never once fired: a call with a long
// timeout made right after calls whose timers fire as they are released
// never expires, and a reused timer still fires for its new call.
func TestCallTimersReusedSafely(t *testing.T) {
	var wrong atomic.Int32
	expireIsWrong := expireFunc(func(*callCtx) { wrong.Add(1) })
	for i := range 2000 {
		short := newCallCtx(context.Background(), time.Duration(1+i%50)*time.Microsecond, nil, false)
		long := newCallCtx(context.Background(), time.Hour, expireIsWrong, false)
		short.release()
		next := newCallCtx(context.Background(), time.Hour, expireIsWrong, false)
		long.release()
		next.release()
	}
	time.Sleep(50 * time.Millisecond)
	if n := wrong.Load(); n != 0 {
		t.Errorf("%d calls with an hour's timeout expired", n)
	}
	for range 100 { // fill the pool with stopped timers
		newCallCtx(context.Background(), time.Hour, nil, false).release()
	}
	c := newCallCtx(context.Background(), 10*time.Millisecond, nil, false)
	defer c.release()
	select {
	case <-c.expiry():
	case <-time.After(5 * time.Second):
		t.Fatal("a call's 10 ms timeout did not fire")
	}
}

// A lazy call context notices its caller's end once watched: not before
// (the caller's end is not told to onExpire), at once after — by Err and
// context.Cause without registering, by Done and derived contexts by
// registering — and its own deadline expires it unwatched.
func TestCallCtxLazy(t *testing.T) {
	errCaller := errors.New("the caller went away")
	fired := make(chan struct{}, 4)
	onExpire := expireFunc(func(*callCtx) { fired <- struct{}{} })
	expiredOnce := func(what string) {
		t.Helper()
		select {
		case <-fired:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: onExpire was not told", what)
		}
		select {
		case <-fired:
			t.Fatalf("%s: onExpire told twice", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
	notExpired := func(what string) {
		t.Helper()
		select {
		case <-fired:
			t.Fatalf("%s: onExpire told", what)
		case <-time.After(20 * time.Millisecond):
		}
	}

	// Unwatched: the caller's end goes unnoticed; Err notices it.
	parent, cancel := context.WithCancelCause(context.Background())
	c := newCallCtx(parent, time.Hour, onExpire, true)
	cancel(errCaller)
	notExpired("unwatched")
	if err := c.Err(); err != context.Canceled || context.Cause(c) != errCaller {
		t.Errorf("Err %v, Cause %v: want the caller's", err, context.Cause(c))
	}
	expiredOnce("after Err")
	c.release()

	// context.Cause alone notices it too.
	parent, cancel = context.WithCancelCause(context.Background())
	c = newCallCtx(parent, time.Hour, onExpire, true)
	cancel(errCaller)
	if cause := context.Cause(c); cause != errCaller {
		t.Errorf("Cause %v, want the caller's", cause)
	}
	expiredOnce("after Cause")
	c.release()

	// Watched through Done, then the caller ends: noticed at once.
	parent, cancel = context.WithCancelCause(context.Background())
	c = newCallCtx(parent, time.Hour, onExpire, true)
	done := c.Done()
	cancel(errCaller)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Done was not closed when the caller ended")
	}
	expiredOnce("watched by Done")
	c.release()

	// Watched through a derived context, after the caller ended: Done of
	// the derived context is closed, with the caller's cause.
	parent, cancel = context.WithCancelCause(context.Background())
	c = newCallCtx(parent, time.Hour, onExpire, true)
	cancel(errCaller)
	derived, stop := context.WithCancel(c)
	select {
	case <-derived.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a context derived after the caller ended was not cancelled")
	}
	if context.Cause(derived) != errCaller {
		t.Errorf("derived cause %v, want the caller's", context.Cause(derived))
	}
	stop()
	expiredOnce("watched by a derived context")
	c.release()

	// The deadline expires it unwatched.
	c = newCallCtx(context.Background(), 10*time.Millisecond, onExpire, true)
	expiredOnce("deadline")
	if c.Err() != context.DeadlineExceeded {
		t.Errorf("Err %v after the deadline", c.Err())
	}
	c.release()

	// Released before it was watched: nothing is told later, watched or not.
	parent, cancel = context.WithCancelCause(context.Background())
	c = newCallCtx(parent, time.Hour, onExpire, true)
	c.release()
	cancel(errCaller)
	c.Done()
	c.Err()
	notExpired("released")
}

package tool

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// callCtx is a running call's context, the one its handler and its
// goroutines see. It behaves as the two contexts it replaces did — a
// context.WithTimeoutCause under the caller's, and a
// context.WithCancelCause under that — and so does every context derived
// from it:
//
//   - Deadline is the call's deadline, or the caller's when that is
//     earlier.
//   - At the deadline, Err is context.DeadlineExceeded and context.Cause
//     is errTimeout; when the caller's context ends, its Err and Cause; when
//     stop ends it (the handler returned, or something of the call
//     panicked), context.Canceled and the cause given. The first of these
//     stands.
//   - Values are the caller's.
//
// It costs one registration with the caller's context and one timer
// (reused from call to call once stopped: see callTimer), where
// the two contexts and the inline watchdog cost three registrations, their
// channels and maps, and the timer: the largest share of the SDK's own
// cost on a direct call (see bench/load). An inline call's context
// registers only once watched (lazy, see newCallCtx): most handlers never
// look at it. Contexts derived from it register
// with it through its AfterFunc method, without a goroutine, as they do
// with a standard one.
//
// Apart from its Err, it records whether it expired — the deadline passed,
// or the caller's context ended — which stop does not do: a call whose
// handler has returned still waits for its goroutines until it expires.
type callCtx struct {
	parent   context.Context
	deadline time.Time

	mu         sync.Mutex
	done       chan struct{} // made when first asked for; closedChan if cancelled before
	err        error         // set once, with cause
	cause      error
	causeCtx   context.Context      // made when context.Cause first asks, once err is set
	afters     map[*func()]struct{} // functions to call when cancelled (AfterFunc)
	expired    bool
	expiredCh  chan struct{} // made when first asked for; closed when expired
	expiryWhy  error         // the cause of the expiry
	onExpire   expirer       // told once when it expires, if not released
	timer      *callTimer    // nil once stopped, or without a deadline of its own
	stopParent func() bool   // unregisters from parent
	lazy       bool          // registers with parent only once watched (see newCallCtx)
	released   bool
}

// expirer is told when a call's context expires. An interface, not a
// func, so that a pointer passes without allocating a method value.
type expirer interface{ expired(*callCtx) }

// expireFunc is a func as an expirer.
type expireFunc func(*callCtx)

func (f expireFunc) expired(c *callCtx) { f(c) }

// newCallCtx returns a call's context under parent with the call's
// timeout. Call release once the call has returned. onExpire, if not nil,
// is told once when the context expires (before newCallCtx returns, if
// parent has ended already), unless it has been released.
//
// lazy defers the registration with parent — an allocation or three and a
// lock, on the caller's context, for every call — until the context is
// watched: Done, AfterFunc (and so deriving a context from it) and the
// wait for the call's goroutines (expiry) register; Err and context.Cause
// look at parent's Err instead. So parent's end is noticed, and onExpire
// told, as soon as anyone watches, and never for a call whose handler and
// goroutines never look at their context, whose end would change nothing:
// an inline call's (CallInfo.Overrun). onExpire is then told on a
// goroutine of its own, not inside the handler's ctx.Err(). The deadline
// always expires the context on time, watched or not. Without lazy, or
// when parent's deadline comes first, it registers at once.
func newCallCtx(parent context.Context, timeout time.Duration, onExpire expirer, lazy bool) *callCtx {
	c := &callCtx{parent: parent, deadline: time.Now().Add(timeout), onExpire: onExpire}
	own := true
	if d, ok := parent.Deadline(); ok && d.Before(c.deadline) {
		c.deadline, own = d, false // the caller's deadline comes first, and ends this one through parent
	}
	if err := parent.Err(); err != nil {
		// Ended already: expired here, before newCallCtx returns (a
		// registration would expire it again on a goroutine of its own).
		c.expire(err, context.Cause(parent), false)
		return c
	}
	if lazy && own {
		c.lazy = true
	} else if parent.Done() != nil {
		c.stopParent = context.AfterFunc(parent, c.parentDone)
	}
	if own {
		if d := time.Until(c.deadline); d <= 0 {
			c.expire(context.DeadlineExceeded, errTimeout, false)
		} else {
			c.timer = startCallTimer(c, d) // read by release only, on this goroutine
		}
	}
	return c
}

// parentDone expires the context as its parent has ended; context.AfterFunc
// calls it on a goroutine of its own.
func (c *callCtx) parentDone() { c.expire(c.parent.Err(), context.Cause(c.parent), false) }

// parentEnded expires a lazy context whose parent is found ended when it
// is watched, on the watcher's goroutine (so that Err, Done and Cause
// agree from here), but tells onExpire on a goroutine of its own: the
// watcher may be the handler, inside ctx.Err().
func (c *callCtx) parentEnded() { c.expire(c.parent.Err(), context.Cause(c.parent), true) }

// watch registers a lazy context with its parent, once, or expires it at
// once if parent has ended. c.mu is not held.
func (c *callCtx) watch() {
	c.mu.Lock()
	if !c.lazy || c.released {
		c.mu.Unlock()
		return
	}
	c.lazy = false
	c.mu.Unlock()
	if c.parent.Done() == nil {
		return // parent never ends
	}
	if c.parent.Err() != nil {
		c.parentEnded()
		return
	}
	stop := context.AfterFunc(c.parent, c.parentDone) // if parent ends from here, on AfterFunc's goroutine
	c.mu.Lock()
	if c.released {
		c.mu.Unlock()
		stop()
		return
	}
	c.stopParent = stop
	c.mu.Unlock()
}

// checkParent expires a lazy context whose parent has ended, without
// registering with it. c.mu is not held.
func (c *callCtx) checkParent() {
	c.mu.Lock()
	lazy := c.lazy && !c.released && c.err == nil
	c.mu.Unlock()
	if lazy && c.parent.Err() != nil {
		c.parentEnded()
	}
}

func (c *callCtx) timedOut() { c.expire(context.DeadlineExceeded, errTimeout, false) }

// expire ends the call's time: the context is cancelled with err and cause
// unless it was already, and onExpire is told, on a goroutine of its own
// if async.
func (c *callCtx) expire(err, cause error, async bool) {
	c.mu.Lock()
	if c.expired {
		c.mu.Unlock()
		return
	}
	c.expired, c.expiryWhy = true, cause
	if c.expiredCh != nil {
		close(c.expiredCh)
	}
	onExpire := c.onExpire
	afters := c.cancelLocked(err, cause)
	c.mu.Unlock()
	for f := range afters {
		(*f)()
	}
	switch {
	case onExpire == nil:
	case async:
		go onExpire.expired(c)
	default:
		onExpire.expired(c)
	}
}

// stop cancels the context with cause (context.Canceled), unless it was
// already; it does not expire it.
func (c *callCtx) stop(cause error) {
	c.mu.Lock()
	afters := c.cancelLocked(context.Canceled, cause)
	c.mu.Unlock()
	for f := range afters {
		(*f)()
	}
}

// cancelLocked sets err and cause, if they are not set yet, and returns
// the functions to call for it. c.mu is held.
func (c *callCtx) cancelLocked(err, cause error) map[*func()]struct{} {
	if c.err != nil {
		return nil
	}
	if cause == nil {
		cause = err
	}
	c.err, c.cause = err, cause
	if c.done == nil {
		c.done = closedChan
	} else {
		close(c.done)
	}
	afters := c.afters
	c.afters = nil
	return afters
}

// release ends the call: the context is cancelled with errHandlerReturned
// (unless it was already), and its timer and registration with the
// caller's context are let go. onExpire is not called after release.
func (c *callCtx) release() {
	c.mu.Lock()
	c.onExpire, c.released = nil, true
	timer, stopParent := c.timer, c.stopParent
	c.timer, c.stopParent = nil, nil
	afters := c.cancelLocked(context.Canceled, errHandlerReturned)
	c.mu.Unlock()
	if timer != nil {
		timer.stop()
	}
	if stopParent != nil {
		stopParent()
	}
	for f := range afters {
		(*f)()
	}
}

// expiry returns a channel closed once the context has expired.
func (c *callCtx) expiry() <-chan struct{} {
	c.watch()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.expired {
		return closedChan
	}
	if c.expiredCh == nil {
		c.expiredCh = make(chan struct{})
	}
	return c.expiredCh
}

// expiryCause is why the context expired: errTimeout, or the cause of the
// caller's context; nil if it has not.
func (c *callCtx) expiryCause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.expiryWhy
}

// Deadline returns the call's deadline.
func (c *callCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Done returns a channel closed when the context is cancelled.
func (c *callCtx) Done() <-chan struct{} {
	c.watch()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
	}
	return c.done
}

// Err returns nil until the context is cancelled, then why.
func (c *callCtx) Err() error {
	c.checkParent()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value returns the caller's value for key. context.Cause asks for a
// key of the context package's own, answered with a standard context
// cancelled with this one's cause once this one is cancelled: Cause thus
// returns it, as it would for the contexts this one replaces.
func (c *callCtx) Value(key any) any {
	if !isCauseKey(key) {
		return c.parent.Value(key)
	}
	c.checkParent()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return nil // Cause falls back to Err: nil
	}
	if c.causeCtx == nil {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(c.cause)
		c.causeCtx = ctx
	}
	return c.causeCtx.Value(key)
}

// AfterFunc calls f once the context is cancelled, on the goroutine that
// cancels it (on a goroutine of its own if it is cancelled already).
// Contexts derived from this one register through it, as they do with a
// standard context; the function context.AfterFunc, which also uses it,
// runs its own f on a goroutine of its own.
func (c *callCtx) AfterFunc(f func()) (stop func() bool) {
	c.watch()
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f() // not here: a derived context calls this holding its own lock, which f takes
		return func() bool { return false }
	}
	if c.afters == nil {
		c.afters = map[*func()]struct{}{}
	}
	key := &f
	c.afters[key] = struct{}{}
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.afters[key]
		delete(c.afters, key)
		return ok
	}
}

// causeProbe tells context.Cause's key from others: a standard context
// answers that key, and only that key, with itself.
var causeProbe, _ = context.WithCancel(context.Background())

func isCauseKey(key any) bool { return causeProbe.Value(key) == causeProbe }

// closedChan is a closed channel, the Done of a context cancelled before
// anyone asked for it.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// callTimer is a call's timer, reused by later calls once stopped: a
// timer stopped before it fired is re-armed in place, where a new one is
// allocated and added to the runtime's timer heap.
type callTimer struct {
	t *time.Timer
	c atomic.Pointer[callCtx] // the call it times; nil while pooled
}

var callTimers sync.Pool

func startCallTimer(c *callCtx, d time.Duration) *callTimer {
	if ct, ok := callTimers.Get().(*callTimer); ok {
		ct.c.Store(c)
		ct.t.Reset(d)
		return ct
	}
	ct := &callTimer{}
	ct.c.Store(c)
	ct.t = time.AfterFunc(d, ct.fire)
	return ct
}

func (ct *callTimer) fire() {
	if c := ct.c.Load(); c != nil {
		c.timedOut()
	}
}

// stop stops the timer, and pools it if it had not fired: a timer that
// fired, or is firing, still names its call and is not reused.
func (ct *callTimer) stop() {
	if ct.t.Stop() {
		ct.c.Store(nil)
		callTimers.Put(ct)
	}
}

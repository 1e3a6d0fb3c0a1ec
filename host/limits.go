package host

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// limiter holds the per-tool limits of this host: a semaphore per tool with
// MaxConcurrent, and a one-slot semaphore per exclusive key, dropped when
// no call holds or waits for it.
type limiter struct {
	mu    sync.Mutex
	slots map[string]chan struct{} // tool name → its MaxConcurrent slots
	keys  map[string]*keySlot      // tool name + key → its one slot
}

type keySlot struct {
	ch   chan struct{}
	refs int // calls holding or waiting for it
}

// busyError is a call refused because its tool stayed at a limit.
type busyError struct {
	tool   string
	reason string
	waited time.Duration
}

func (e *busyError) Error() string {
	return fmt.Sprintf("tool %s is busy: %s, and none ended within %s; try again later", e.tool, e.reason, e.waited)
}

// acquire waits until the call may run under its tool's limits, up to the
// tool's BusyWait, and returns what releases its place. The error is a
// *busyError, or ctx's.
func (h *Host) acquire(ctx context.Context, t *tool.Tool, in *tool.Input, sessionID string) (release func(), err error) {
	n := t.MaxConcurrent()
	key, exclusive := t.ExclusiveKey(in, sessionID)
	if n == 0 && !exclusive {
		return func() {}, nil
	}
	deadline := time.NewTimer(t.BusyWait())
	defer deadline.Stop()
	l := &h.limits
	var releases []func()
	undo := func() {
		for i := len(releases) - 1; i >= 0; i-- {
			releases[i]()
		}
	}
	if exclusive {
		ks := l.key(t.Name() + "\x00" + key)
		select {
		case ks.ch <- struct{}{}:
			releases = append(releases, func() { <-ks.ch; l.dropKey(t.Name()+"\x00"+key, ks) })
		case <-deadline.C:
			l.dropKey(t.Name()+"\x00"+key, ks)
			return nil, &busyError{tool: t.Name(), reason: "another call with the same " + keyKind(key) + " is running", waited: t.BusyWait()}
		case <-ctx.Done():
			l.dropKey(t.Name()+"\x00"+key, ks)
			return nil, context.Cause(ctx)
		}
	}
	if n > 0 {
		slots := l.slotsOf(t.Name(), n)
		select {
		case slots <- struct{}{}:
			releases = append(releases, func() { <-slots })
		case <-deadline.C:
			undo()
			return nil, &busyError{tool: t.Name(), reason: fmt.Sprintf("it runs at most %d calls at once", n), waited: t.BusyWait()}
		case <-ctx.Done():
			undo()
			return nil, context.Cause(ctx)
		}
	}
	var once sync.Once
	return func() { once.Do(undo) }, nil
}

func keyKind(key string) string {
	if len(key) > 8 && key[:8] == "session:" {
		return "session"
	}
	return "key"
}

// slotsOf returns a tool's semaphore.
func (l *limiter) slotsOf(name string, n int) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.slots == nil {
		l.slots = map[string]chan struct{}{}
	}
	ch, ok := l.slots[name]
	if !ok {
		ch = make(chan struct{}, n)
		l.slots[name] = ch
	}
	return ch
}

// key returns the slot of an exclusive key, counting the caller in.
func (l *limiter) key(k string) *keySlot {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keys == nil {
		l.keys = map[string]*keySlot{}
	}
	ks, ok := l.keys[k]
	if !ok {
		ks = &keySlot{ch: make(chan struct{}, 1)}
		l.keys[k] = ks
	}
	ks.refs++
	return ks
}

// dropKey counts a caller out of a key's slot, forgetting it when unused.
func (l *limiter) dropKey(k string, ks *keySlot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ks.refs--; ks.refs == 0 && l.keys[k] == ks {
		delete(l.keys, k)
	}
}

// busyAPIError is a busy direct call's refusal.
func busyAPIError(err *busyError) error {
	return &api.Error{Code: api.CodeToolBusy, Message: "tool_busy: " + err.Error()}
}

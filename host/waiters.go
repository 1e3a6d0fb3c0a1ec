package host

import (
	"context"
	"sync"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// waiters are the direct calls waiting for a parked call's outcome, by
// call id.
type waiters struct {
	mu   sync.Mutex
	byID map[string][]chan struct{}
}

func (w *waiters) add(callID string) chan struct{} {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byID == nil {
		w.byID = map[string][]chan struct{}{}
	}
	w.byID[callID] = append(w.byID[callID], ch)
	return ch
}

func (w *waiters) remove(callID string, ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	list := w.byID[callID]
	for i, c := range list {
		if c == ch {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(w.byID, callID)
	} else {
		w.byID[callID] = list
	}
}

func (w *waiters) notify(callID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range w.byID[callID] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// waitOutcome waits up to d for a parked call's outcome, which may be
// recorded by this host or by another sharing the store.
func (h *Host) waitOutcome(ctx context.Context, callID string, d time.Duration) (*api.Outcome, bool) {
	if d <= 0 {
		a, err := h.log.Approval(ctx, callID)
		return a.Outcome, err == nil && a.Outcome != nil
	}
	a, ok := h.waitApproval(ctx, callID, d, func(a api.Approval) bool { return a.Outcome != nil })
	return a.Outcome, ok
}

// waitApproval waits up to d (d <= 0: until ctx ends) for a parked call
// to be as done says (decided, or with its outcome), which may be
// recorded by this host or by another sharing the store: woken by this
// host's waiters, and polling the store every 250 ms.
func (h *Host) waitApproval(ctx context.Context, callID string, d time.Duration, done func(api.Approval) bool) (api.Approval, bool) {
	ch := h.waiters.add(callID)
	defer h.waiters.remove(callID, ch)
	var expired <-chan time.Time
	if d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		expired = timer.C
	}
	poll := time.NewTicker(250 * time.Millisecond)
	defer poll.Stop()
	for {
		if a, err := h.log.Approval(ctx, callID); err == nil && done(a) {
			return a, true
		}
		select {
		case <-ch:
		case <-poll.C:
		case <-expired:
			return api.Approval{}, false
		case <-ctx.Done():
			return api.Approval{}, false
		}
	}
}

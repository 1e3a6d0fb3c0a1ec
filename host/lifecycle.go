package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

var (
	errCancelled   = errors.New("cancelled")
	errStopping    = errors.New("the host is shutting down")
	errLeaseLost   = errors.New("lost the session's lease")
	reasonRestart  = "interrupted by host restart"
	reasonShutdown = "interrupted: the host shut down"
)

// leases are the turns this host runs, each holding its session's lease.
type leases struct {
	holder string // this host's name as a lease holder
	ttl    time.Duration

	mu      sync.Mutex
	running map[string]*runningTurn // by session id
}

// runningTurn is a turn this host runs.
type runningTurn struct {
	turnID string
	cancel context.CancelCauseFunc
}

func newLeases(ttl time.Duration) *leases {
	return &leases{holder: newID("host"), ttl: ttl, running: map[string]*runningTurn{}}
}

func (l *leases) lease() store.Lease { return store.Lease{Holder: l.holder, TTL: l.ttl} }

// track registers a running turn and keeps its lease alive until the
// returned context ends (the host closes, the turn is cancelled or loses
// its lease, or untrack); the turn's code calls untrack when done.
func (l *leases) track(parent context.Context, st store.Sessions, logger *slog.Logger, sessionID, turnID string) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	l.mu.Lock()
	l.running[sessionID] = &runningTurn{turnID: turnID, cancel: cancel}
	l.mu.Unlock()
	go l.keepAlive(ctx, func(ctx context.Context) bool {
		err := st.RenewLease(ctx, sessionID, turnID, l.lease())
		if errors.Is(err, store.ErrNotRunning) {
			cancel(errLeaseLost)
			return false
		}
		if err != nil {
			logger.Warn("renewing a turn's lease", "session", sessionID, "turn", turnID, "err", err)
		}
		return true
	})
	return ctx
}

// keepAlive calls renew every TTL/3 until ctx ends or renew returns
// false: what holds a turn's lease, and an approved call's executor lease.
// renew's context is not cancelled with ctx, so a renewal under way ends.
func (l *leases) keepAlive(ctx context.Context, renew func(context.Context) bool) {
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !renew(context.WithoutCancel(ctx)) {
				return
			}
		}
	}
}

// untrack stops holding a turn.
func (l *leases) untrack(sessionID, turnID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rt := l.running[sessionID]; rt != nil && rt.turnID == turnID {
		rt.cancel(nil)
		delete(l.running, sessionID)
	}
}

// cancel cancels the session's running turn with cause; false if this host
// runs none there.
func (l *leases) cancel(sessionID string, cause error) bool {
	l.mu.Lock()
	rt := l.running[sessionID]
	l.mu.Unlock()
	if rt == nil {
		return false
	}
	rt.cancel(cause)
	return true
}

// runs reports whether this host runs the turn.
func (l *leases) runs(sessionID, turnID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	rt := l.running[sessionID]
	return rt != nil && rt.turnID == turnID
}

// Start begins the host's background work, now and then every LeaseTTL/2:
// closing turns whose host died (their lease expired) with turn.failed,
// expiring approvals nobody answered in time, recording approved calls
// whose host died running them; and, once, resuming parked turns that have
// all their results. On a store that other hosts share (a
// store.Notifier) it also tells them which sessions this host appended
// to, and pokes this host's subscribers of the sessions they appended to
// (see share). Call it once; Close stops it.
func (h *Host) Start(ctx context.Context) error {
	if err := h.recover(ctx); err != nil {
		return err
	}
	if n, ok := h.log.Store.(store.Notifier); ok {
		if err := h.share(n); err != nil {
			return err
		}
	}
	// A host that died between a parked turn's last result and its resumption
	// left it parked with nothing to wait for.
	parked, err := h.log.ParkedTurns(ctx)
	if err != nil {
		return err
	}
	for _, t := range parked {
		h.maybeResume(ctx, t.SessionID, t.ID)
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(h.opts.LeaseTTL / 2)
		defer t.Stop()
		for {
			select {
			case <-h.ctx.Done():
				return
			case <-t.C:
				if err := h.recover(h.ctx); err != nil && h.ctx.Err() == nil {
					h.logger.Warn("closing interrupted turns", "err", err)
				}
			}
		}
	}()
	return nil
}

// How hosts sharing a store tell each other about new events.
const (
	// notifyInterval is the least time between two notifications a host
	// sends: the first append after a quiet spell is announced at once,
	// those that follow it within notifyInterval together after it.
	notifyInterval = 50 * time.Millisecond
	// pollInterval is how often every subscriber is poked anyway, in case
	// a notification was lost.
	pollInterval = 2 * time.Second
)

// share starts the two goroutines of a shared store: one announces the
// sessions this host appended to (at most once every notifyInterval, and
// once more as the host closes), the other pokes this host's subscribers
// of the sessions other hosts announced, all of them when anything may
// have changed, and all of them every pollInterval.
func (h *Host) share(n store.Notifier) error {
	changed, err := n.ListenChanged(h.ctx)
	if err != nil {
		return fmt.Errorf("listening for other hosts' events: %w", err)
	}
	notify := func(ctx context.Context) {
		if ids := h.log.takeChanged(); len(ids) > 0 {
			if err := n.NotifyChanged(ctx, ids); err != nil && ctx.Err() == nil {
				h.logger.Warn("telling other hosts about new events", "err", err)
			}
		}
	}
	h.wg.Add(2)
	go func() {
		defer h.wg.Done()
		for {
			select {
			case <-h.log.wake:
			case <-h.ctx.Done():
				ctx, cancel := context.WithTimeout(context.WithoutCancel(h.ctx), 5*time.Second)
				defer cancel()
				notify(ctx)
				return
			}
			notify(h.ctx)
			select {
			case <-time.After(notifyInterval):
			case <-h.ctx.Done():
			}
		}
	}()
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(pollInterval)
		defer t.Stop()
		for {
			select {
			case <-h.ctx.Done():
				return
			case ids, ok := <-changed:
				if !ok {
					changed = nil // only when the host closes
				} else if len(ids) == 0 {
					h.log.hub.pokeAll()
				}
				for _, id := range ids {
					h.log.hub.poke(id)
				}
			case <-t.C:
				h.log.hub.pokeAll()
			}
		}
	}()
	return nil
}

// recover ends the turns whose lease expired (their host died), expires
// approvals nobody answered in time, and records approved calls whose host
// died running them.
func (h *Host) recover(ctx context.Context) error {
	if err := h.expire(ctx); err != nil {
		return err
	}
	if err := h.orphans(ctx); err != nil {
		return err
	}
	expired, err := h.log.ExpiredTurns(ctx, time.Now())
	if err != nil {
		return err
	}
	for _, t := range expired {
		if h.leases.runs(t.SessionID, t.ID) {
			continue // ours, and alive; its renewal is late
		}
		if err := h.endTurn(ctx, t.SessionID, t.ID, api.TurnFailed{Reason: reasonRestart}); err != nil {
			return err
		}
		h.logger.Info("closed a turn interrupted by a host restart", "session", t.SessionID, "turn", t.ID)
	}
	return nil
}

// Close cancels running turns (they end with turn.failed) and stops the
// background work, waiting for both.
func (h *Host) Close() error {
	h.stop(errStopping)
	h.wg.Wait()
	if c, ok := h.opts.MCP.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

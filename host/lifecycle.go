package host

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/agentsdk/agentsdk/store"
)

var (
	errCancelled   = errors.New("cancelled")
	errStopping    = errors.New("the host is shutting down")
	errLeaseLost   = errors.New("lost the session's lease")
	reasonRestart  = "interrupted by host restart"
	reasonShutdown = "interrupted: the host shut down"
)

// runningTurn is a turn this host runs.
type runningTurn struct {
	turnID string
	cancel context.CancelCauseFunc
}

func (h *Host) lease() store.Lease { return store.Lease{Holder: h.id, TTL: h.leaseTTL} }

// track registers a running turn and keeps its lease alive until the
// returned context ends; the turn's code calls untrack when done.
func (h *Host) track(sessionID, turnID string) context.Context {
	ctx, cancel := context.WithCancelCause(h.ctx)
	h.mu.Lock()
	h.running[sessionID] = &runningTurn{turnID: turnID, cancel: cancel}
	h.mu.Unlock()
	go func() {
		t := time.NewTicker(h.leaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				err := h.store.RenewLease(context.WithoutCancel(ctx), sessionID, turnID, h.lease())
				if errors.Is(err, store.ErrNotRunning) {
					cancel(errLeaseLost)
					return
				}
				if err != nil {
					h.logger.Warn("renewing a turn's lease", "session", sessionID, "turn", turnID, "err", err)
				}
			}
		}
	}()
	return ctx
}

func (h *Host) untrack(sessionID, turnID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rt := h.running[sessionID]; rt != nil && rt.turnID == turnID {
		rt.cancel(nil)
		delete(h.running, sessionID)
	}
}

// Start begins the host's background work, now and then every LeaseTTL/2:
// closing turns whose host died (their lease expired) with turn.failed,
// expiring approvals nobody answered in time, recording approved calls
// whose host died running them; and, once, resuming parked turns that have
// all their results. Call it once; Close stops it. A host without a store
// needs no Start.
func (h *Host) Start(ctx context.Context) error {
	if h.store == nil {
		return nil
	}
	if err := h.recover(ctx); err != nil {
		return err
	}
	// A host that died between a parked turn's last result and its resumption
	// left it parked with nothing to wait for.
	parked, err := h.store.ParkedTurns(ctx)
	if err != nil {
		return err
	}
	for _, t := range parked {
		h.maybeResume(ctx, t.SessionID, t.ID)
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(h.leaseTTL / 2)
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
	expired, err := h.store.ExpiredTurns(ctx, time.Now())
	if err != nil {
		return err
	}
	for _, t := range expired {
		h.mu.Lock()
		rt := h.running[t.SessionID]
		h.mu.Unlock()
		if rt != nil && rt.turnID == t.ID {
			continue // ours, and alive; its renewal is late
		}
		evs, err := h.store.EndTurn(ctx, t.SessionID, t.ID, store.TurnFailed, reasonRestart,
			store.Event{Kind: EventTurnFailed, Data: data(map[string]string{"reason": reasonRestart})})
		if errors.Is(err, store.ErrNotRunning) {
			continue
		}
		if err != nil {
			return err
		}
		h.logger.Info("closed a turn interrupted by a host restart", "session", t.SessionID, "turn", t.ID)
		h.hub.publish(t.SessionID, evs)
	}
	return nil
}

// Close cancels running turns (they end with turn.failed) and stops the
// background work, waiting for both.
func (h *Host) Close() error {
	h.stop(errStopping)
	h.wg.Wait()
	if c, ok := h.services.MCP.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

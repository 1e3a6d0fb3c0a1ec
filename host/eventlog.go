package host

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// eventLog is the host's store, with every event it appends published to
// the session's subscribers once stored. The host reaches the store only
// through it, so no write path can forget to tell the subscribers.
//
// When the store is shared (a store.Notifier), it also records the
// sessions appended to, which the host announces to the other hosts
// (Host.share).
type eventLog struct {
	store.Store
	hub hub

	shared  bool
	mu      sync.Mutex
	changed map[string]struct{} // sessions appended to, not yet announced
	wake    chan struct{}       // signalled when changed stops being empty
}

func newEventLog(st store.Store) *eventLog {
	_, shared := st.(store.Notifier)
	return &eventLog{Store: st, shared: shared, changed: map[string]struct{}{}, wake: make(chan struct{}, 1)}
}

// publish tells the session's subscribers on this host about stored
// events, and records the session for the other hosts.
func (l *eventLog) publish(sessionID string, stored []api.Event) {
	l.hub.publish(sessionID, stored)
	if !l.shared || len(stored) == 0 || sessionID == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.changed) == 0 {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
	l.changed[sessionID] = struct{}{}
}

// takeChanged returns the sessions appended to since it was last called.
func (l *eventLog) takeChanged() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]string, 0, len(l.changed))
	for id := range l.changed {
		ids = append(ids, id)
	}
	clear(l.changed)
	return ids
}

// Append stores events and publishes them.
func (l *eventLog) Append(ctx context.Context, sessionID string, events ...api.Event) ([]api.Event, error) {
	stored, err := l.Store.Append(ctx, sessionID, events...)
	l.publish(sessionID, stored)
	return stored, err
}

// AppendTurn stores a turn's events, fenced, and publishes them.
func (l *eventLog) AppendTurn(ctx context.Context, f store.Fence, events ...api.Event) ([]api.Event, error) {
	stored, err := l.Store.AppendTurn(ctx, f, events...)
	l.publish(f.SessionID, stored)
	return stored, err
}

// BeginTurn begins a turn and publishes its first events.
func (l *eventLog) BeginTurn(ctx context.Context, p store.BeginTurnParams) (store.Hold, []api.Event, error) {
	h, stored, err := l.Store.BeginTurn(ctx, p)
	l.publish(p.Turn.SessionID, stored)
	return h, stored, err
}

// EndTurn ends a turn and publishes its last events.
func (l *eventLog) EndTurn(ctx context.Context, p store.EndTurnParams) ([]api.Event, error) {
	stored, err := l.Store.EndTurn(ctx, p)
	l.publish(p.SessionID, stored)
	return stored, err
}

// CancelTurn ends a cancelled turn and publishes its last events.
func (l *eventLog) CancelTurn(ctx context.Context, p store.CancelTurnParams) ([]api.Approval, []api.Event, error) {
	closed, stored, err := l.Store.CancelTurn(ctx, p)
	l.publish(p.SessionID, stored)
	return closed, stored, err
}

// CreateApproval parks a call and publishes the request.
func (l *eventLog) CreateApproval(ctx context.Context, a api.Approval, events ...api.Event) ([]api.Event, error) {
	stored, err := l.Store.CreateApproval(ctx, a, events...)
	l.publish(a.SessionID, stored)
	return stored, err
}

// ResolveApproval decides a parked call and publishes the decision.
func (l *eventLog) ResolveApproval(ctx context.Context, p store.ResolveApprovalParams) (api.Approval, []api.Event, error) {
	a, stored, err := l.Store.ResolveApproval(ctx, p)
	l.publish(a.SessionID, stored)
	return a, stored, err
}

// FinishApproval records a decided call's outcome and publishes its
// result.
func (l *eventLog) FinishApproval(ctx context.Context, callID string, outcome api.Outcome, events ...api.Event) (bool, []api.Event, error) {
	won, stored, err := l.Store.FinishApproval(ctx, callID, outcome, events...)
	if len(stored) > 0 {
		l.publish(stored[0].SessionID, stored)
	}
	return won, stored, err
}

// events returns unsaved events carrying payloads, in a turn.
func events(turnID string, payloads ...api.Payload) []api.Event {
	evs := make([]api.Event, len(payloads))
	for i, p := range payloads {
		evs[i] = api.NewEvent(p)
		evs[i].TurnID = turnID
	}
	return evs
}

// emit appends payloads to a session's stream, in a turn. It is not
// cancelled with ctx: what happened is recorded even as a call ends. The
// writes of a turn this host runs carry its fence: once another host has
// taken the session over, they fail (and the turn is cancelled) rather
// than add to a stream that has moved on.
func (h *Host) emit(ctx context.Context, sessionID, turnID string, payloads ...api.Payload) error {
	_, err := h.write(ctx, sessionID, events(turnID, payloads...))
	return err
}

// write appends events of one turn as emit does.
func (h *Host) write(ctx context.Context, sessionID string, evs []api.Event) ([]api.Event, error) {
	ctx = context.WithoutCancel(ctx)
	if len(evs) == 0 {
		return nil, nil
	}
	if f, ok := h.leases.fence(sessionID, evs[0].TurnID); ok {
		stored, err := h.log.AppendTurn(ctx, f, evs...)
		if errors.Is(err, store.ErrLeaseLost) {
			h.leases.lost(f)
			return nil, fmt.Errorf("recording %s: %w", evs[0].Kind, errLeaseLost)
		}
		return stored, err
	}
	return h.log.Append(ctx, sessionID, evs...)
}

// eventReader reads a session's stream: the host's log, or a job's
// transaction.
type eventReader interface {
	Events(ctx context.Context, sessionID string, after int64, limit int) ([]api.Event, error)
}

// eachEvent calls fn for every stored event of a session, in order, reading
// the stream a page at a time.
func eachEvent(ctx context.Context, r eventReader, sessionID string, fn func(api.Event)) error {
	return eachEventAfter(ctx, r, sessionID, 0, fn)
}

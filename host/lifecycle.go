package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
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
	home   string // where this host keeps workspaces: its hostname and state root
	ttl    time.Duration

	mu      sync.Mutex
	running map[string]*runningTurn // by session id

	// paused stops renewals (tests: a paused or partitioned host).
	paused atomic.Bool
}

// runningTurn is a turn this host runs.
type runningTurn struct {
	fence  store.Fence
	cancel context.CancelCauseFunc
}

func newLeases(ttl time.Duration, home string) *leases {
	return &leases{holder: newID("host"), home: home, ttl: ttl, running: map[string]*runningTurn{}}
}

func (l *leases) lease() store.Lease { return store.Lease{Holder: l.holder, TTL: l.ttl, Home: l.home} }

// track registers a running turn and keeps its lease alive until the
// returned context ends (the host closes, the turn is cancelled or loses
// its lease, or untrack); the turn's code calls untrack when done. The
// turn's writes carry f (Host.emit finds it here).
func (l *leases) track(parent context.Context, st store.Sessions, logger *slog.Logger, f store.Fence) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	l.mu.Lock()
	l.running[f.SessionID] = &runningTurn{fence: f, cancel: cancel}
	l.mu.Unlock()
	renew := func(ctx context.Context) bool {
		if l.paused.Load() {
			return true
		}
		err := st.RenewLease(ctx, f, l.lease())
		if errors.Is(err, store.ErrLeaseLost) {
			cancel(errLeaseLost)
			return false
		}
		if err != nil {
			logger.Warn("renewing a turn's lease", "session", f.SessionID, "turn", f.TurnID, "err", err)
		}
		return true
	}
	go func() {
		defer guard(logger, "renewing a turn's lease", "session", f.SessionID, "turn", f.TurnID)
		l.keepAlive(ctx, renew)
	}()
	return ctx
}

// guard recovers a panic in a goroutine of the host's and logs it, with
// its stack, instead of letting it end the process: some of the code the
// host's goroutines run is not the host's (a store, a model provider, a
// logger's handler). Each goroutine defers it first thing:
//
//	go func() {
//		defer guard(h.logger, "what the goroutine does", "session", id)
//		…
//	}()
//
// The tool package guards what tools run (handlers, their goroutines
// started with call.Go, approval predicates, input decoding); this is for
// the rest.
func guard(logger *slog.Logger, what string, attrs ...any) {
	if p := recover(); p != nil {
		logger.Error(what+" panicked", append(attrs, "panic", p, "stack", string(debug.Stack()))...)
	}
}

// fence returns the fence of a turn this host runs.
func (l *leases) fence(sessionID, turnID string) (store.Fence, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rt := l.running[sessionID]; rt != nil && rt.fence.TurnID == turnID {
		return rt.fence, true
	}
	return store.Fence{}, false
}

// lost cancels a turn whose write the store refused: another host took
// its session.
func (l *leases) lost(f store.Fence) {
	l.mu.Lock()
	rt := l.running[f.SessionID]
	l.mu.Unlock()
	if rt != nil && rt.fence == f {
		rt.cancel(errLeaseLost)
	}
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
	if rt := l.running[sessionID]; rt != nil && rt.fence.TurnID == turnID {
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
	return rt != nil && rt.fence.TurnID == turnID
}

// Start begins the host's background work. Every LeaseTTL/2 it resumes
// the model turns whose host died (their lease expired), at most
// Options.MaxResumes times each, and closes the others with turn.failed. On a store
// that runs durable jobs (store.Jobs: SQLite and PostgreSQL), the other
// timers are jobs any host may work: an approval nobody answered in time
// expires, an approved call whose host died running it is recorded as
// interrupted. On one that does not (store/memory), the host's sweep does
// those too.
// Either way it first closes what is already due and resumes parked turns
// that have all their results (their host died between the last result
// and the resumption). On a store that other hosts share (a
// store.Notifier) it also tells them which sessions this host appended
// to, and pokes this host's subscribers of the sessions they appended to
// (see share). The registered subsystems' jobs are worked with the
// host's, and their sweeps run after each of its rounds. Call it once;
// Close stops it.
func (h *Host) Start(ctx context.Context) error {
	h.subsMu.Lock()
	h.started = true
	h.subsMu.Unlock()
	if h.opts.Cloud.ToolsURL == "" {
		h.logger.Warn("cloud turns will be offered the agent tools only: no URL for runners to reach the server tools at (serve --public-url or --cloud-tools-url)")
	}
	h.unpricedWarning()
	h.startScripts() // before catching up: a dead host's scripts end first
	if err := h.catchUp(ctx); err != nil {
		return err
	}
	if n, ok := h.log.Store.(store.Notifier); ok {
		if err := h.share(n); err != nil {
			return err
		}
	}
	parked, err := h.log.ParkedTurns(ctx)
	if err != nil {
		return err
	}
	for _, t := range parked {
		h.drive(ctx, t.SessionID, t.ID)
	}
	if j, ok := h.log.Store.(store.Jobs); ok {
		if err := h.runJobs(ctx, j); err != nil {
			return err
		}
		if _, ok := h.log.Store.(store.Timers); ok {
			if err := h.startSchedules(ctx, j); err != nil {
				return err
			}
			h.armDueReminders(ctx)
		}
	} else if len(h.opts.Schedules) > 0 {
		h.logger.Warn("the schedules will not run: the store runs no durable jobs (serve with SQLite or PostgreSQL)", "schedules", len(h.opts.Schedules))
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
				h.sweep()
				h.armDueReminders(h.ctx)
				h.sweepSubsystems(h.ctx)
			}
		}
	}()
	return nil
}

// sweep is one round of Start's sweep; a panic in it is logged and the
// next round runs.
func (h *Host) sweep() {
	defer guard(h.logger, "resuming interrupted turns")
	if err := h.recover(h.ctx); err != nil && h.ctx.Err() == nil {
		h.logger.Warn("resuming interrupted turns", "err", err)
	}
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
		defer guard(h.logger, "telling other hosts about new events")
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
		defer guard(h.logger, "delivering other hosts' events")
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

// catchUp does at Start what fell due while no host ran: recover's
// round, and on a store with jobs also the jobs already due (approvals
// past their expiry, approved calls whose executor died), each in a
// transaction of its own as its job would, rather than when River's
// leader gets to them (10–35 s after a restart). It also gives every
// pending approval its expiry job.
func (h *Host) catchUp(ctx context.Context) error {
	if err := h.recover(ctx); err != nil {
		return err
	}
	j, ok := h.log.Store.(store.Jobs)
	if !ok {
		return nil
	}
	// One pass over the pending approvals: each gets its expiry job (a
	// no-op for those that have one: state written before the store ran
	// jobs gets its jobs), and those already past it expire now.
	now := time.Now()
	var due []string
	for cursor := ""; ; {
		pending, next, err := h.log.ListApprovals(ctx, store.ListApprovalsParams{Status: api.ApprovalPending, Page: store.Page{Limit: 1000, Cursor: cursor}})
		if err != nil {
			return fmt.Errorf("listing pending approvals: %w", err)
		}
		for _, a := range pending {
			if err := j.Schedule(ctx, store.JobSpec{Kind: store.JobExpireApproval, Key: a.CallID, At: a.ExpiresAt}); err != nil {
				return fmt.Errorf("scheduling approval expiries: %w", err)
			}
			if !a.ExpiresAt.After(now) {
				due = append(due, a.CallID)
			}
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	for _, id := range due {
		h.expireNow(ctx, id)
	}
	orphaned, err := h.log.OrphanedApprovals(ctx, now)
	if err != nil {
		return fmt.Errorf("listing interrupted approved calls: %w", err)
	}
	for _, a := range orphaned {
		err := j.InTx(ctx, func(tx store.Tx) error {
			return h.watchCallJob(ctx, tx, store.Job{Kind: store.JobWatchCall, Key: a.CallID})
		})
		if _, snoozed := store.Snoozed(err); err != nil && !snoozed {
			return fmt.Errorf("recording an interrupted approved call: %w", err)
		}
	}
	return nil
}

// recover resumes or ends the turns whose lease expired (their host
// died; see sweepDeadTurns), expires approvals nobody answered in time,
// and records approved calls whose host died running them: one round of
// the host's sweep. On a store with jobs
// the approvals are their jobs' (durable since the call parked or was
// approved) and the turns are swept in a transaction, as the job would.
func (h *Host) recover(ctx context.Context) error {
	if j, ok := h.log.Store.(store.Jobs); ok {
		err := j.InTx(ctx, func(tx store.Tx) error {
			return h.sweepTurnsJob(ctx, tx, store.Job{Kind: jobSweepTurns})
		})
		if err != nil {
			return fmt.Errorf("resuming interrupted turns: %w", err)
		}
		return nil
	}
	if err := h.expire(ctx); err != nil {
		return err
	}
	if _, err := h.log.PruneIdempotent(ctx, time.Now()); err != nil {
		return err
	}
	if err := h.orphans(ctx); err != nil {
		return err
	}
	return h.sweepDeadTurns(ctx, logTx{h.log})
}

// Close cancels running turns (they end with turn.failed) and stops the
// background work, waiting for both.
func (h *Host) Close() error {
	h.stop(errStopping)
	if h.stopJobs != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := h.stopJobs(ctx); err != nil {
			h.logger.Warn("stopping the job worker", "err", err)
		}
		cancel()
	}
	h.wg.Wait()
	if c, ok := h.opts.MCP.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

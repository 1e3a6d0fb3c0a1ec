package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/schedule"
	"github.com/agentsdk/agentsdk/store"
)

// Schedules tick on the store's jobs. A schedule's head (store.ScheduleState)
// names its next tick; the tick is a job, and whoever takes the tick moves
// the head to the next one with a conditional write (AdvanceSchedule), in
// the transaction that records the run and inserts the next tick's job. Of
// the hosts that reach a tick — River's worker, or each host's own timer,
// which fires on time where River's scheduler releases due jobs up to 5 s
// late — exactly one advances it; the others find the head moved and do
// nothing. The run itself happens after the commit, on the host that took
// the tick: it is held by a lease, and a run whose host died is recorded
// as interrupted by the next tick, not run again.

// jobScheduleTick is a schedule's tick (Key: tickKey).
const jobScheduleTick = "schedule.tick"

// lastRunsListed is how many runs a listing shows per schedule.
const lastRunsListed = 10

func tickKey(name string, at time.Time) string {
	return name + "@" + at.UTC().Format(time.RFC3339Nano)
}

func parseTickKey(key string) (string, time.Time, error) {
	name, at, ok := strings.Cut(key, "@")
	if !ok {
		return "", time.Time{}, fmt.Errorf("tick key %q has no @", key)
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	return name, t, err
}

// startSchedules gives every schedule without a head (or whose definition
// changed) one, with its next tick's job.
func (h *Host) startSchedules(ctx context.Context, j store.Jobs) error {
	for _, s := range h.opts.Schedules {
		err := j.InTx(ctx, func(tx store.Tx) error {
			st, err := tx.ScheduleState(ctx, s.Name())
			next := s.Next(time.Now())
			head := store.ScheduleState{Name: s.Name(), Spec: s.Spec(), NextAt: next}
			switch {
			case err == nil && st.Spec == s.Spec():
				return nil
			case err == nil:
				// Another definition: a new chain, from the head found (a
				// host that took that tick meanwhile wins).
				err = tx.AdvanceSchedule(ctx, st.NextAt, head)
			case errors.Is(err, store.ErrNotFound):
				err = tx.CreateScheduleState(ctx, head)
			}
			if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrExists) {
				return nil // another host started the chain
			}
			if err != nil {
				return err
			}
			return tx.Schedule(ctx, store.JobSpec{Kind: jobScheduleTick, Key: tickKey(s.Name(), next), At: next})
		})
		if err != nil {
			return fmt.Errorf("starting schedule %s: %w", s.Name(), err)
		}
	}
	if len(h.opts.Schedules) > 0 {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			defer guard(h.logger, "timing schedules")
			h.timeSchedules(j)
		}()
	}
	return nil
}

// timeSchedules takes each tick at its time on this host, as River's
// worker would later: sleeping until the earliest head, and reading the
// heads again at least every few seconds (another host moves them).
func (h *Host) timeSchedules(j store.Jobs) {
	timers := h.log.Store.(store.Timers)
	for {
		wait := 5 * time.Second
		now := time.Now()
		var due []string
		for _, s := range h.opts.Schedules {
			st, err := timers.ScheduleState(h.ctx, s.Name())
			if err != nil {
				continue
			}
			if !st.NextAt.After(now) {
				due = append(due, tickKey(s.Name(), st.NextAt))
			} else {
				wait = min(wait, st.NextAt.Sub(now))
			}
		}
		for _, key := range due {
			err := j.InTx(h.ctx, func(tx store.Tx) error {
				return h.scheduleTickJob(h.ctx, tx, store.Job{Kind: jobScheduleTick, Key: key})
			})
			if err != nil && h.ctx.Err() == nil {
				h.logger.Warn("taking a schedule's tick", "tick", key, "err", err)
			}
		}
		if len(due) > 0 {
			wait = 0 // read the heads the ticks moved
		}
		select {
		case <-h.ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// scheduleTickJob takes a tick: it moves the head to the next tick and
// inserts its job, and records this tick's run — started, or skipped by
// the schedule's policies — all in tx; the run starts once tx commits.
func (h *Host) scheduleTickJob(ctx context.Context, tx store.Tx, job store.Job) error {
	name, tick, err := parseTickKey(job.Key)
	if err != nil {
		h.logger.Warn("dropped a malformed schedule tick", "key", job.Key, "err", err)
		return nil
	}
	s := h.schedules[name]
	if s == nil {
		h.logger.Warn("dropped the tick of a schedule this host does not have", "schedule", name)
		return nil
	}
	now := time.Now()
	next := s.Next(tick)
	// Another tick came due while this one waited: the host was down.
	missed := !next.After(now)
	if missed {
		next = s.Next(now)
	}
	err = tx.AdvanceSchedule(ctx, tick, store.ScheduleState{Name: name, Spec: s.Spec(), NextAt: next})
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		return nil // taken already, or a chain a newer definition replaced
	}
	if err != nil {
		return err
	}
	if err := tx.Schedule(ctx, store.JobSpec{Kind: jobScheduleTick, Key: tickKey(name, next), At: next}); err != nil {
		return err
	}
	run := api.ScheduleRun{ID: newID("run"), Schedule: name, Tick: tick, Host: h.leases.holder, Started: now}
	if missed && s.Config().CatchUp == schedule.CatchUpSkip {
		run.Status, run.Error = api.RunSkipped, "the tick was missed while no host ran (catch-up: skip)"
		return tx.StartScheduleRun(ctx, run, now)
	}
	if err := h.startRun(ctx, tx, s, run); !errors.As(err, new(errSkipped)) {
		return err
	}
	return nil // the skipped run is recorded with the tick
}

// startRun records a run as running, unless the schedule skips overlaps
// and a run is going, and starts it once tx commits.
func (h *Host) startRun(ctx context.Context, tx store.Tx, s *schedule.Schedule, run api.ScheduleRun) error {
	if _, err := tx.InterruptScheduleRuns(ctx, s.Name(), run.Started); err != nil {
		return err
	}
	if s.Config().Overlap == schedule.OverlapSkip {
		going, err := tx.RunningScheduleRun(ctx, s.Name(), run.Started)
		if err == nil {
			run.Status, run.Error = api.RunSkipped, fmt.Sprintf("run %s was still going (overlap: skip)", going.ID)
			if err := tx.StartScheduleRun(ctx, run, run.Started); err != nil {
				return err
			}
			return errSkipped{going.ID}
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	run.Status = api.RunRunning
	if err := tx.StartScheduleRun(ctx, run, run.Started.Add(h.opts.LeaseTTL)); err != nil {
		return err
	}
	tx.AfterCommit(func() { h.goRun(s, run) })
	return nil
}

// errSkipped says startRun recorded the run as skipped: a tick commits
// that, a run asked for by hand refuses.
type errSkipped struct{ going string }

func (e errSkipped) Error() string { return "skipped: run " + e.going + " is still going" }

// goRun runs a schedule's run in the background, renewing its hold, and
// records its end.
func (h *Host) goRun(s *schedule.Schedule, run api.ScheduleRun) {
	timers := h.log.Store.(store.Timers)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer guard(h.logger, "running a schedule", "schedule", run.Schedule, "run", run.ID)
		ctx, cancel := context.WithCancelCause(h.ctx)
		defer cancel(nil)
		go h.leases.keepAlive(ctx, func(ctx context.Context) bool {
			err := timers.RenewScheduleRun(ctx, run.ID, time.Now().Add(h.opts.LeaseTTL))
			if errors.Is(err, store.ErrNotRunning) {
				cancel(errors.New("the run's hold lapsed: it was recorded as interrupted"))
				return false
			}
			return true
		})
		err := s.Do(ctx, &schedule.Run{Handle: h.Handle(), ID: run.ID, Schedule: run.Schedule, Tick: run.Tick, Manual: run.Manual})
		status, text := api.RunCompleted, ""
		switch {
		case err != nil && h.ctx.Err() != nil:
			// The host is stopping: like a host that died, not run again.
			status, text = api.RunInterrupted, err.Error()
		case err != nil:
			status, text = api.RunFailed, err.Error()
			h.logger.Warn("a schedule's run failed", "schedule", run.Schedule, "run", run.ID, "err", err)
		}
		if err := timers.EndScheduleRun(context.WithoutCancel(ctx), run.ID, status, text, time.Now()); err != nil {
			h.logger.Error("recording a schedule's run's end", "schedule", run.Schedule, "run", run.ID, "err", err)
		}
	}()
}

// ListSchedules describes the agent's schedules, by name, with their next
// tick and last runs (none on a store without jobs).
func (h *Host) ListSchedules(ctx context.Context) ([]api.ScheduleInfo, error) {
	timers, _ := h.log.Store.(store.Timers)
	out := make([]api.ScheduleInfo, 0, len(h.opts.Schedules))
	for _, s := range h.opts.Schedules {
		c := s.Config()
		info := api.ScheduleInfo{Name: s.Name(), Description: c.Description, Cron: c.Cron, TimeZone: c.TimeZone,
			Overlap: string(c.Overlap), CatchUp: string(c.CatchUp), LastRuns: []api.ScheduleRun{}}
		if timers != nil {
			if st, err := timers.ScheduleState(ctx, s.Name()); err == nil {
				info.NextRun = &st.NextAt
			}
			runs, err := timers.ListScheduleRuns(ctx, s.Name(), lastRunsListed)
			if err != nil {
				return nil, storeError(err, nil)
			}
			if runs != nil {
				info.LastRuns = runs
			}
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b api.ScheduleInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// RunSchedule runs a schedule now, once, outside its ticks, on this host:
// it returns the run as it started; its end is in ListSchedules. A
// schedule that skips overlaps refuses while a run is going
// (schedule_busy).
func (h *Host) RunSchedule(ctx context.Context, name string) (api.ScheduleRun, error) {
	s := h.schedules[name]
	if s == nil {
		return api.ScheduleRun{}, api.Errorf(api.CodeScheduleNotFound, "%s: %q", api.CodeScheduleNotFound.Description(), name)
	}
	j, err := h.timers("running a schedule")
	if err != nil {
		return api.ScheduleRun{}, err
	}
	now := time.Now()
	run := api.ScheduleRun{ID: newID("run"), Schedule: name, Tick: now, Manual: true, Host: h.leases.holder, Started: now}
	err = j.InTx(ctx, func(tx store.Tx) error { return h.startRun(ctx, tx, s, run) })
	var skipped errSkipped
	if errors.As(err, &skipped) {
		return api.ScheduleRun{}, api.Errorf(api.CodeScheduleBusy, "schedule %s: run %s is still going (overlap: skip)", name, skipped.going)
	}
	if err != nil {
		return api.ScheduleRun{}, storeError(err, nil)
	}
	run.Status = api.RunRunning
	return run, nil
}

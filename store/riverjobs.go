package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
)

// riverJobs runs a SQL store's jobs on River, in the store's database.
// Every job is one River kind, "agentsdk", whose arguments carry our kind
// and key: River sees one worker, the store dispatches by kind. Both
// drivers take *sql.Tx, so one code path serves SQLite and PostgreSQL.
type riverJobs struct {
	driver riverdriver.Driver[*sql.Tx]
	// inserter inserts jobs, in the caller's transaction; it works none.
	inserter *river.Client[*sql.Tx]
	// worker works them, once RunJobs started it.
	worker *river.Client[*sql.Tx]
}

// jobArgs are every job's River arguments. Kind and key make it unique.
type jobArgs struct {
	Name string `json:"kind" river:"unique"`
	Key  string `json:"key" river:"unique"`
}

// Kind is the one River kind of the store's jobs.
func (jobArgs) Kind() string { return "agentsdk" }

// newRiverJobs applies River's migrations and makes the inserter.
func newRiverJobs(ctx context.Context, s *sqlStore, driver riverdriver.Driver[*sql.Tx]) (*riverJobs, error) {
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: quietLogger(nil)})
	if err != nil {
		return nil, fmt.Errorf("migrating River's tables: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("migrating River's tables: %w", err)
	}
	inserter, err := river.NewClient(driver, &river.Config{Logger: quietLogger(nil)})
	if err != nil {
		return nil, fmt.Errorf("making River's client: %w", err)
	}
	return &riverJobs{driver: driver, inserter: inserter}, nil
}

// insert inserts a job in tx.
func (j *riverJobs) insert(ctx context.Context, tx *sql.Tx, spec JobSpec) error {
	opts := &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
	if !spec.At.IsZero() {
		opts.ScheduledAt = spec.At
	}
	if _, err := j.inserter.InsertTx(ctx, tx, jobArgs{Name: spec.Kind, Key: spec.Key}, opts); err != nil {
		return fmt.Errorf("scheduling job %s %s: %w", spec.Kind, spec.Key, err)
	}
	return nil
}

func (j *riverJobs) close() error {
	if j.worker == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return j.worker.Stop(ctx)
}

// quietLogger passes on warnings and errors only: River reports its
// routine (leadership, maintenance) at info.
func quietLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(warnings{l.Handler()})
}

type warnings struct{ slog.Handler }

func (w warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}
func (w warnings) WithAttrs(as []slog.Attr) slog.Handler { return warnings{w.Handler.WithAttrs(as)} }
func (w warnings) WithGroup(name string) slog.Handler    { return warnings{w.Handler.WithGroup(name)} }

// dispatcher is River's one worker: it runs our handler for the job's
// kind in a transaction that also completes the job.
type dispatcher struct {
	river.WorkerDefaults[jobArgs]
	s        *sqlStore
	handlers map[string]JobHandler
}

func (d *dispatcher) Work(ctx context.Context, job *river.Job[jobArgs]) error {
	h := d.handlers[job.Args.Name]
	if h == nil {
		return fmt.Errorf("no handler for job kind %q on this host", job.Args.Name)
	}
	var after []func()
	var wait time.Duration
	snoozed := false
	err := d.s.tx(ctx, func(tx *sql.Tx) error {
		err := h(ctx, d.s.bind(tx, &after), Job{ID: job.ID, Kind: job.Args.Name, Key: job.Args.Key, Attempt: job.Attempt})
		if w, ok := Snoozed(err); ok {
			wait, snoozed = w, true
			return err // rolls back what the handler wrote
		}
		if err != nil {
			return err
		}
		_, err = river.JobCompleteTx[riverdriver.Driver[*sql.Tx]](ctx, tx, job)
		return err
	})
	if snoozed {
		return river.JobSnooze(max(wait, 100*time.Millisecond))
	}
	if err != nil {
		return fmt.Errorf("job %s %s: %w", job.Args.Name, job.Args.Key, err)
	}
	for _, fn := range after {
		fn()
	}
	return nil
}

// RunJobs implements Jobs.
func (s *sqlStore) RunJobs(ctx context.Context, p RunJobsParams) (func(context.Context) error, error) {
	if s.jobs == nil {
		return nil, fmt.Errorf("running jobs: the %s store has none", s.dialect.Name)
	}
	if s.jobs.worker != nil {
		return nil, fmt.Errorf("running jobs: already running")
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &dispatcher{s: s, handlers: p.Handlers}); err != nil {
		return nil, fmt.Errorf("running jobs: %w", err)
	}
	n := p.Workers
	if n <= 0 {
		n = 16
	}
	var periodic []*river.PeriodicJob
	for _, pj := range p.Periodic {
		args := jobArgs{Name: pj.Kind}
		periodic = append(periodic, river.NewPeriodicJob(river.PeriodicInterval(max(pj.Every, time.Second)),
			func() (river.JobArgs, *river.InsertOpts) { return args, nil },
			&river.PeriodicJobOpts{RunOnStart: true}))
	}
	c, err := river.NewClient(s.jobs.driver, &river.Config{
		ID:           p.ID,
		Logger:       quietLogger(p.Logger),
		Queues:       map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: n}},
		Workers:      workers,
		PeriodicJobs: periodic,
		// Poll for jobs (every second) rather than LISTEN: the same on
		// both databases, and the jobs here are timers, due seconds
		// ahead, that River's scheduler releases every 5 s anyway.
		PollOnly: true,
		// Fetch again 10 ms after a fetch (River's default: 100 ms), so
		// that a burst of due jobs is not worked a few at a time.
		FetchCooldown: 10 * time.Millisecond,
		// A job's handler is one short transaction, so a job still
		// "running" after RescueStuckJobsAfter was left so by a host that
		// died in it (its transaction never committed, so nothing of it
		// applied): River's leader runs it again. River's default is an
		// hour, which left an approved call, a reminder or a schedule's
		// tick whose host was killed mid-job waiting that long.
		JobTimeout:           JobTimeout,
		RescueStuckJobsAfter: RescueStuckJobsAfter,
	})
	if err != nil {
		return nil, fmt.Errorf("running jobs: %w", err)
	}
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("running jobs: %w", err)
	}
	s.jobs.worker = c
	return func(ctx context.Context) error {
		s.jobs.worker = nil
		return c.Stop(ctx)
	}, nil
}

// Schedule implements Jobs and Tx.
func (s *sqlStore) Schedule(ctx context.Context, spec JobSpec) error {
	if s.jobs == nil {
		return fmt.Errorf("scheduling job: the %s store runs none", s.dialect.Name)
	}
	return s.tx(ctx, func(tx *sql.Tx) error { return s.jobs.insert(ctx, tx, spec) })
}

// InTx implements Jobs.
func (s *sqlStore) InTx(ctx context.Context, fn func(Tx) error) error {
	var after []func()
	if err := s.tx(ctx, func(tx *sql.Tx) error { return fn(s.bind(tx, &after)) }); err != nil {
		return err
	}
	for _, f := range after {
		f()
	}
	return nil
}

// bind returns the store within tx, collecting AfterCommit's functions in
// after.
func (s *sqlStore) bind(tx *sql.Tx, after *[]func()) *sqlStore {
	b := *s
	b.txn, b.write, b.read, b.after = tx, tx, tx, after
	return &b
}

// AfterCommit implements Tx.
func (s *sqlStore) AfterCommit(fn func()) {
	if s.after == nil {
		fn()
		return
	}
	*s.after = append(*s.after, fn)
}

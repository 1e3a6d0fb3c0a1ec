package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// Jobs is implemented by stores that run durable jobs: the SQL stores, on
// River (riverqueue/river) in the store's own database, so that a job is
// inserted in the same transaction as the state it is about, survives the
// death of any host, and is worked by one host at a time.
//
// A job is at least once: River runs it again if its host died working
// it. A handler makes it effectively once by writing its effects through
// the [Tx] it is given: they commit in the same transaction that marks the
// job completed, or not at all.
//
// The store schedules its own jobs where the state they watch is written
// (see the Job… kinds); others ([Jobs.Schedule]) are for the host's
// features built on the same base, such as reminders and schedules.
type Jobs interface {
	// Schedule inserts a job. A job of the same Kind and Key that is
	// still to run, running, or completed makes this one a no-op.
	Schedule(ctx context.Context, j JobSpec) error
	// InTx runs fn with a Tx, committing what it wrote if it returns nil
	// and rolling it back otherwise.
	InTx(ctx context.Context, fn func(Tx) error) error
	// RunJobs works jobs with the handlers, by kind, until stop is
	// called. Call it once per store.
	RunJobs(ctx context.Context, p RunJobsParams) (stop func(context.Context) error, err error)
}

// The jobs the SQL stores schedule themselves, in the transaction that
// writes what they watch. Their Key names what they watch. (A running
// turn has no job of its own: a job per turn would double the cost of a
// short turn; a periodic sweep finds the turns whose host died.)
const (
	// JobExpireApproval runs at a parked call's expiry (Key: the call
	// id): it expires the call if nobody decided it by then.
	JobExpireApproval = "approval.expire"
	// JobWatchCall runs when an approved call's executor lease would run
	// out if not renewed (Key: the call id): it records the call as
	// interrupted if its host died running it.
	JobWatchCall = "approval.watch"
)

// JobSpec is a job to insert.
type JobSpec struct {
	// Kind selects the handler.
	Kind string
	// Key says what the job is about (a call id, a reminder's id); with
	// Kind it makes the job unique.
	Key string
	// At is when to run it; zero or past: as soon as a worker is free.
	At time.Time
}

// Job is a job being worked.
type Job struct {
	ID      int64
	Kind    string
	Key     string
	Attempt int // 1 the first time
}

// JobHandler works a job. Its writes through tx commit with the job's
// completion; an error rolls them back and River retries the job later,
// with backoff. [Snooze] puts the job off without counting an attempt.
type JobHandler func(ctx context.Context, tx Tx, job Job) error

// RunJobsParams configure RunJobs.
type RunJobsParams struct {
	// Handlers by job kind. A job of another kind fails and is retried
	// (a newer host may know it).
	Handlers map[string]JobHandler
	// Workers is how many jobs this host works at once (default 16). Jobs
	// are short transactions; with 16 workers and a 10 ms fetch cooldown a
	// host fires ~430 due reminders a second, where River's 4 and 100 ms
	// fired 40 (BenchmarkTimersReminders).
	Workers int
	// ID names this worker among the hosts (default River's).
	ID string
	// Logger receives River's warnings and errors; nil discards them.
	Logger *slog.Logger
	// Periodic jobs, run every so often by one of the hosts (River's
	// leader): sweeps, whose runs missed while the leader changes are
	// caught up by the next.
	Periodic []Periodic
}

// Periodic is a job to run every Every (at least a second), and once when
// the worker starts.
type Periodic struct {
	Kind  string
	Every time.Duration
}

// Tx is the store within one transaction: a job's, or InTx's. What is
// written through it is committed together, or not at all.
type Tx interface {
	Sessions
	Approvals
	Idempotency
	Timers
	Evals
	// Schedule inserts a job in the transaction.
	Schedule(ctx context.Context, j JobSpec) error
	// ExpireApproval expires one pending call whose expiry has passed and
	// returns it; ErrAlreadyResolved if it is not pending, ErrBusy if its
	// expiry is still to come.
	ExpireApproval(ctx context.Context, callID string, now time.Time) (api.Approval, error)
	// OrphanedApproval returns an approved call without an outcome whose
	// executor's lease ran out; ErrNotRunning if it has an outcome or was
	// not approved, ErrBusy while its executor's lease is live.
	OrphanedApproval(ctx context.Context, callID string, now time.Time) (api.Approval, error)
	// AfterCommit runs fn once the transaction has committed (not if it
	// rolls back): what must not happen before the writes are durable,
	// such as telling subscribers.
	AfterCommit(fn func())
}

// JobTimeout bounds a job's handler: past it, its context is cancelled
// and the attempt fails (its transaction rolls back) and is retried.
const JobTimeout = 20 * time.Second

// RescueStuckJobsAfter is how long after an attempt began a job still
// marked running is taken for one whose host died in it, and run again.
// River's leader looks for such jobs every 30 s, so a job whose host was
// killed in it runs again within about a minute of the next host taking
// the lead.
const RescueStuckJobsAfter = 30 * time.Second

// snooze is Snooze's error.
type snooze struct{ d time.Duration }

func (s snooze) Error() string { return fmt.Sprintf("snooze for %s", s.d) }

// Snooze, returned by a JobHandler, rolls back its writes and runs the job
// again after d, without counting an attempt.
func Snooze(d time.Duration) error { return snooze{d} }

// Snoozed reports whether err is (or wraps) a Snooze, and for how long.
func Snoozed(err error) (time.Duration, bool) {
	var s snooze
	if errors.As(err, &s) {
		return s.d, true
	}
	return 0, false
}

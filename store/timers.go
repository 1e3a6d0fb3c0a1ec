package store

import (
	"context"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// Timers keeps the state of schedules and reminders: the stores that run
// durable jobs ([Jobs], the SQL stores) implement it, and so does every
// [Tx] of theirs, so that a timer's state and its next job are written in
// one transaction.
type Timers interface {
	// ScheduleState returns the head of a schedule's chain of ticks;
	// ErrNotFound if it has none yet.
	ScheduleState(ctx context.Context, name string) (ScheduleState, error)
	// CreateScheduleState writes a schedule's first head; ErrExists if it
	// has one (another host made it first: read it). A head is changed
	// only by AdvanceSchedule, so that no host writes over a tick another
	// has taken.
	CreateScheduleState(ctx context.Context, s ScheduleState) error
	// AdvanceSchedule moves a schedule's head from the tick from to s, in
	// one conditional write (UPDATE … WHERE name = ? AND next_at = ?), so
	// that of two hosts advancing the same tick at once exactly one
	// succeeds: the other gets ErrConflict (also when the head is at
	// another tick), ErrNotFound without a head.
	AdvanceSchedule(ctx context.Context, from time.Time, s ScheduleState) error

	// StartScheduleRun records a run (r.ID set by the caller) as it
	// starts: running, held until leaseUntil; or skipped, ended at once.
	StartScheduleRun(ctx context.Context, r api.ScheduleRun, leaseUntil time.Time) error
	// RenewScheduleRun extends a running run's hold; ErrNotRunning if it
	// is no longer running (it was recorded as interrupted).
	RenewScheduleRun(ctx context.Context, id string, leaseUntil time.Time) error
	// EndScheduleRun records a running run's end: status completed,
	// failed, or interrupted (its host stopped it), with errText. ErrNotRunning if it is not
	// running; ErrNotFound if there is no such run.
	EndScheduleRun(ctx context.Context, id string, status api.ScheduleRunStatus, errText string, ended time.Time) error
	// InterruptScheduleRuns records the running runs of a schedule whose
	// hold ran out before now as interrupted (ended now), and says how
	// many there were.
	InterruptScheduleRuns(ctx context.Context, name string, now time.Time) (int, error)
	// RunningScheduleRun returns a run of the schedule that is running and
	// held at now; ErrNotFound if none.
	RunningScheduleRun(ctx context.Context, name string, now time.Time) (api.ScheduleRun, error)
	// ListScheduleRuns lists a schedule's runs, the latest started first,
	// at most limit.
	ListScheduleRuns(ctx context.Context, name string, limit int) ([]api.ScheduleRun, error)

	// SetReminder sets a session's reminder (r.ID, set by the caller, is
	// new each time), replacing the one with the same key; r.SetAt is set
	// if zero. ErrNotFound without the session.
	SetReminder(ctx context.Context, r api.Reminder) (api.Reminder, error)
	// Reminders lists a session's reminders, the earliest due first.
	Reminders(ctx context.Context, sessionID string) ([]api.Reminder, error)
	// CancelReminder deletes a session's reminder by key and returns it;
	// ErrNotFound if it has none by that key.
	CancelReminder(ctx context.Context, sessionID, key string) (api.Reminder, error)
	// DueReminders lists the reminders of every session due before a
	// time, the earliest first, at most limit.
	DueReminders(ctx context.Context, before time.Time, limit int) ([]api.Reminder, error)
	// TakeReminder deletes the reminder with that id and returns it;
	// ErrNotFound if there is none (it was cancelled, or its key was set
	// again and has another id now).
	TakeReminder(ctx context.Context, id string) (api.Reminder, error)
}

// ScheduleState is the head of a schedule's chain of ticks: the one tick
// job that is due next. Spec identifies the definition it was computed
// from (cron, time zone): a host with another definition starts a new
// chain, and the old chain's job finds itself stale (its tick is not
// NextAt) and does nothing.
type ScheduleState struct {
	Name   string
	Spec   string
	NextAt time.Time
}

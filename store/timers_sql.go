package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// ScheduleState implements Timers: it reads the schedule's row.
func (s *sqlStore) ScheduleState(ctx context.Context, name string) (ScheduleState, error) {
	st := ScheduleState{Name: name}
	var next int64
	err := s.read.QueryRowContext(ctx, s.q(`SELECT spec, next_at FROM schedules WHERE name = ?`), name).Scan(&st.Spec, &next)
	if errors.Is(err, sql.ErrNoRows) {
		return ScheduleState{}, fmt.Errorf("schedule %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return ScheduleState{}, fmt.Errorf("reading schedule state: %w", err)
	}
	st.NextAt = fromMicros(next)
	return st, nil
}

// CreateScheduleState implements Timers: it inserts the schedule's row
// unless there is one (ErrExists).
func (s *sqlStore) CreateScheduleState(ctx context.Context, st ScheduleState) error {
	if st.Name == "" {
		return errors.New("writing schedule state: empty name")
	}
	res, err := s.write.ExecContext(ctx, s.q(`INSERT INTO schedules (name, spec, next_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO NOTHING`),
		st.Name, st.Spec, micros(st.NextAt))
	if err != nil {
		return fmt.Errorf("writing schedule state: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("writing schedule state: %w", err)
	} else if n == 0 {
		return ErrExists
	}
	return nil
}

// AdvanceSchedule implements Timers: it moves the schedule's head to st
// only if it is at the tick from, in one UPDATE, so that of hosts racing
// to advance one tick exactly one does. ErrConflict if the head is at
// another tick, ErrNotFound without a head.
func (s *sqlStore) AdvanceSchedule(ctx context.Context, from time.Time, st ScheduleState) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE schedules SET spec = ?, next_at = ? WHERE name = ? AND next_at = ?`),
			st.Spec, micros(st.NextAt), st.Name, micros(from))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n > 0 {
			return nil
		}
		var n int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM schedules WHERE name = ?`), st.Name).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("schedule %s: %w", st.Name, ErrNotFound)
		}
		return fmt.Errorf("schedule %s is not at the tick %s: %w", st.Name, from.UTC().Format(time.RFC3339Nano), ErrConflict)
	})
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
		return err
	}
	if err != nil {
		return fmt.Errorf("advancing schedule: %w", err)
	}
	return nil
}

const scheduleRunColumns = `id, schedule, tick, manual, status, host, started_at, ended_at, error`

func scanScheduleRunRow(rows *sql.Rows) (api.ScheduleRun, error) { return scanScheduleRun(rows) }

func scanScheduleRun(row interface{ Scan(...any) error }) (api.ScheduleRun, error) {
	var r api.ScheduleRun
	var tick, started int64
	var manual int
	var ended sql.NullInt64
	if err := row.Scan(&r.ID, &r.Schedule, &tick, &manual, &r.Status, &r.Host, &started, &ended, &r.Error); err != nil {
		return api.ScheduleRun{}, err
	}
	r.Tick, r.Started, r.Manual = fromMicros(tick), fromMicros(started), manual != 0
	if ended.Valid {
		t := fromMicros(ended.Int64)
		r.Ended = &t
	}
	return r, nil
}

// StartScheduleRun implements Timers: it inserts the run, running (held
// until leaseUntil) or skipped (ended at r.Ended, else at its start). A
// zero r.Started is now; ErrExists if r.ID is taken.
func (s *sqlStore) StartScheduleRun(ctx context.Context, r api.ScheduleRun, leaseUntil time.Time) error {
	if r.ID == "" {
		return errors.New("recording schedule run: empty id")
	}
	if r.Started.IsZero() {
		r.Started = s.now()
	}
	var ended any
	switch r.Status {
	case api.RunRunning:
	case api.RunSkipped:
		end := r.Started
		if r.Ended != nil {
			end = *r.Ended
		}
		ended = micros(end)
	default:
		return fmt.Errorf("recording schedule run %s: status %q, want %q or %q", r.ID, r.Status, api.RunRunning, api.RunSkipped)
	}
	manual := 0
	if r.Manual {
		manual = 1
	}
	_, err := s.write.ExecContext(ctx, s.q(`INSERT INTO schedule_runs (id, schedule, tick, manual, status, host, started_at, ended_at, error, lease_until)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		r.ID, r.Schedule, micros(r.Tick), manual, string(r.Status), r.Host, micros(r.Started), ended, r.Error, micros(leaseUntil))
	if err != nil {
		if s.dialect.IsConflict != nil && s.dialect.IsConflict(err) {
			return fmt.Errorf("schedule run %s: %w", r.ID, ErrExists)
		}
		return fmt.Errorf("recording schedule run: %w", err)
	}
	return nil
}

// runningOr is the error for a run that an update of the running runs
// missed: ErrNotRunning if it exists, ErrNotFound if not.
func (s *sqlStore) runningOr(ctx context.Context, tx *sql.Tx, id string) error {
	var n int
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM schedule_runs WHERE id = ?`), id).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("schedule run %s: %w", id, ErrNotFound)
	}
	return fmt.Errorf("schedule run %s: %w", id, ErrNotRunning)
}

// updateRunning runs an UPDATE of schedule_runs whose last condition is
// "id = ? AND status = 'running'"; if it changes no row, it says why.
func (s *sqlStore) updateRunning(ctx context.Context, id, query string, args ...any) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(query), append(args, id, string(api.RunRunning))...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return s.runningOr(ctx, tx, id)
		}
		return nil
	})
}

// RenewScheduleRun implements Timers: it moves a running run's hold to
// leaseUntil. ErrNotRunning if it has ended (or was interrupted),
// ErrNotFound if there is no such run.
func (s *sqlStore) RenewScheduleRun(ctx context.Context, id string, leaseUntil time.Time) error {
	err := s.updateRunning(ctx, id, `UPDATE schedule_runs SET lease_until = ? WHERE id = ? AND status = ?`, micros(leaseUntil))
	if errors.Is(err, ErrNotRunning) || errors.Is(err, ErrNotFound) {
		return err
	}
	if err != nil {
		return fmt.Errorf("renewing schedule run: %w", err)
	}
	return nil
}

// EndScheduleRun implements Timers: it records a running run as completed
// or failed (with errText), ended at ended.
func (s *sqlStore) EndScheduleRun(ctx context.Context, id string, status api.ScheduleRunStatus, errText string, ended time.Time) error {
	if status != api.RunCompleted && status != api.RunFailed && status != api.RunInterrupted {
		return fmt.Errorf("ending schedule run %s: status %q, want %q, %q or %q", id, status, api.RunCompleted, api.RunFailed, api.RunInterrupted)
	}
	err := s.updateRunning(ctx, id, `UPDATE schedule_runs SET status = ?, error = ?, ended_at = ? WHERE id = ? AND status = ?`,
		string(status), errText, micros(ended))
	if errors.Is(err, ErrNotRunning) || errors.Is(err, ErrNotFound) {
		return err
	}
	if err != nil {
		return fmt.Errorf("ending schedule run: %w", err)
	}
	return nil
}

// InterruptScheduleRuns implements Timers: the schedule's running runs
// held until before now become interrupted, ended now.
func (s *sqlStore) InterruptScheduleRuns(ctx context.Context, name string, now time.Time) (int, error) {
	res, err := s.write.ExecContext(ctx, s.q(`UPDATE schedule_runs SET status = ?, ended_at = ? WHERE schedule = ? AND status = ? AND lease_until < ?`),
		string(api.RunInterrupted), micros(now), name, string(api.RunRunning), micros(now))
	if err != nil {
		return 0, fmt.Errorf("interrupting schedule runs: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("interrupting schedule runs: %w", err)
	}
	return int(n), nil
}

// RunningScheduleRun implements Timers: it returns the latest started of
// the schedule's running runs held until now or later.
func (s *sqlStore) RunningScheduleRun(ctx context.Context, name string, now time.Time) (api.ScheduleRun, error) {
	r, err := scanScheduleRun(s.read.QueryRowContext(ctx, s.q(`SELECT `+scheduleRunColumns+` FROM schedule_runs
		WHERE schedule = ? AND status = ? AND lease_until >= ? ORDER BY started_at DESC, id DESC LIMIT 1`),
		name, string(api.RunRunning), micros(now)))
	if errors.Is(err, sql.ErrNoRows) {
		return api.ScheduleRun{}, fmt.Errorf("running run of schedule %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return api.ScheduleRun{}, fmt.Errorf("reading running schedule run: %w", err)
	}
	return r, nil
}

// ListScheduleRuns implements Timers: the schedule's runs, latest started
// first (ties by id, descending), at most limit (100 if limit is not in
// 1…1000).
func (s *sqlStore) ListScheduleRuns(ctx context.Context, name string, limit int) ([]api.ScheduleRun, error) {
	out, err := queryAll(ctx, s.read, s.q(`SELECT `+scheduleRunColumns+` FROM schedule_runs WHERE schedule = ?
		ORDER BY started_at DESC, id DESC LIMIT ?`), []any{name, pageLimit(Page{Limit: limit})}, scanScheduleRunRow)
	if err != nil {
		return nil, fmt.Errorf("listing schedule runs: %w", err)
	}
	return out, nil
}

const reminderColumns = `session_id, key, id, at, message, set_at`

func scanReminderRow(rows *sql.Rows) (api.Reminder, error) { return scanReminder(rows) }

func scanReminder(row interface{ Scan(...any) error }) (api.Reminder, error) {
	var r api.Reminder
	var at, set int64
	if err := row.Scan(&r.SessionID, &r.Key, &r.ID, &at, &r.Message, &set); err != nil {
		return api.Reminder{}, err
	}
	r.At, r.SetAt = fromMicros(at), fromMicros(set)
	return r, nil
}

// SetReminder implements Timers: in one transaction it checks that the
// session exists and inserts the reminder, or replaces the one with its
// key (id, time, message and all). It returns the reminder as stored:
// times in UTC, to the microsecond. ErrExists if r.ID is another
// reminder's.
func (s *sqlStore) SetReminder(ctx context.Context, r api.Reminder) (api.Reminder, error) {
	if r.ID == "" || r.SessionID == "" {
		return api.Reminder{}, errors.New("setting reminder: empty id or session")
	}
	if r.SetAt.IsZero() {
		r.SetAt = s.now()
	}
	r.At, r.SetAt = fromMicros(micros(r.At)), fromMicros(micros(r.SetAt))
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM sessions WHERE id = ?`), r.SessionID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("session %s: %w", r.SessionID, ErrNotFound)
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO reminders (`+reminderColumns+`) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (session_id, key) DO UPDATE SET id = excluded.id, at = excluded.at, message = excluded.message, set_at = excluded.set_at`),
			r.SessionID, r.Key, r.ID, micros(r.At), r.Message, micros(r.SetAt))
		if err != nil && s.dialect.IsConflict != nil && s.dialect.IsConflict(err) {
			return fmt.Errorf("reminder %s: %w", r.ID, ErrExists)
		}
		return err
	})
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrExists) {
		return api.Reminder{}, err
	}
	if err != nil {
		return api.Reminder{}, fmt.Errorf("setting reminder: %w", err)
	}
	return r, nil
}

// Reminders implements Timers: the session's reminders, the earliest due
// first (ties by key).
func (s *sqlStore) Reminders(ctx context.Context, sessionID string) ([]api.Reminder, error) {
	out, err := queryAll(ctx, s.read, s.q(`SELECT `+reminderColumns+` FROM reminders WHERE session_id = ? ORDER BY at, key`),
		[]any{sessionID}, scanReminderRow)
	if err != nil {
		return nil, fmt.Errorf("listing reminders: %w", err)
	}
	return out, nil
}

// DueReminders implements Timers.
func (s *sqlStore) DueReminders(ctx context.Context, before time.Time, limit int) ([]api.Reminder, error) {
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	out, err := queryAll(ctx, s.read, s.q(`SELECT `+reminderColumns+` FROM reminders WHERE at < ? ORDER BY at, id LIMIT ?`),
		[]any{micros(before), limit}, scanReminderRow)
	if err != nil {
		return nil, fmt.Errorf("listing due reminders: %w", err)
	}
	return out, nil
}

// CancelReminder implements Timers: it deletes the session's reminder with
// the key, returning it.
func (s *sqlStore) CancelReminder(ctx context.Context, sessionID, key string) (api.Reminder, error) {
	r, err := scanReminder(s.write.QueryRowContext(ctx, s.q(`DELETE FROM reminders WHERE session_id = ? AND key = ? RETURNING `+reminderColumns),
		sessionID, key))
	if errors.Is(err, sql.ErrNoRows) {
		return api.Reminder{}, fmt.Errorf("reminder %q of session %s: %w", key, sessionID, ErrNotFound)
	}
	if err != nil {
		return api.Reminder{}, fmt.Errorf("cancelling reminder: %w", err)
	}
	return r, nil
}

// TakeReminder implements Timers: it deletes the reminder with the id,
// returning it.
func (s *sqlStore) TakeReminder(ctx context.Context, id string) (api.Reminder, error) {
	r, err := scanReminder(s.write.QueryRowContext(ctx, s.q(`DELETE FROM reminders WHERE id = ? RETURNING `+reminderColumns), id))
	if errors.Is(err, sql.ErrNoRows) {
		return api.Reminder{}, fmt.Errorf("reminder %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return api.Reminder{}, fmt.Errorf("taking reminder: %w", err)
	}
	return r, nil
}

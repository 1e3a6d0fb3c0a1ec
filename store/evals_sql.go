package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

const evalBatchColumns = `id, name, status, created_at, ended_at, score, passed, total, concurrency, principal`

func scanEvalBatchRow(rows *sql.Rows) (api.EvalBatch, error) { return scanEvalBatch(rows) }

func scanEvalBatch(row interface{ Scan(...any) error }) (api.EvalBatch, error) {
	var b api.EvalBatch
	var created int64
	var ended sql.NullInt64
	if err := row.Scan(&b.ID, &b.Name, &b.Status, &created, &ended, &b.Score, &b.Passed, &b.Total, &b.Concurrency, &b.Principal); err != nil {
		return api.EvalBatch{}, err
	}
	b.Created, b.Ended = fromMicros(created), nullMicros(ended)
	return b, nil
}

const evalCaseColumns = `idx, case_json, status, session_id, checks_json, score, pass, error, started_at, ended_at`

func scanEvalCase(rows *sql.Rows) (api.EvalCaseResult, error) {
	var r api.EvalCaseResult
	var caseJSON, checksJSON string
	var pass int
	var started, ended sql.NullInt64
	if err := rows.Scan(&r.Index, &caseJSON, &r.Status, &r.SessionID, &checksJSON, &r.Score, &pass, &r.Error, &started, &ended); err != nil {
		return api.EvalCaseResult{}, err
	}
	if err := json.Unmarshal([]byte(caseJSON), &r.Case); err != nil {
		return api.EvalCaseResult{}, fmt.Errorf("case %d: %w", r.Index, err)
	}
	if err := json.Unmarshal([]byte(checksJSON), &r.Checks); err != nil {
		return api.EvalCaseResult{}, fmt.Errorf("checks of case %d: %w", r.Index, err)
	}
	if len(r.Checks) == 0 {
		r.Checks = nil
	}
	r.Pass, r.Started, r.Ended = pass != 0, nullMicros(started), nullMicros(ended)
	return r, nil
}

// nullMicros is a nullable time column's value: nil if NULL.
func nullMicros(us sql.NullInt64) *time.Time {
	if !us.Valid {
		return nil
	}
	t := fromMicros(us.Int64)
	return &t
}

// orNull is a nullable time column's argument: NULL for nil.
func orNull(t *time.Time) any {
	if t == nil {
		return nil
	}
	return micros(*t)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checksJSON is the checks_json of a case: "[]" without checks.
func checksJSON(checks []api.EvalCheckResult) (string, error) {
	if len(checks) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(checks)
	return string(b), err
}

// evalCaseInsertRows is how many cases one INSERT writes, well under the
// placeholders either database allows in a statement.
const evalCaseInsertRows = 500

// CreateEvalBatch implements Evals: in one transaction it inserts the
// batch (unless its id is taken: ErrExists) and its cases. A zero Created
// is now, an empty Status (the batch's or a case's) queued; the cases'
// indexes must be 0…n-1 in order.
func (s *sqlStore) CreateEvalBatch(ctx context.Context, b api.EvalBatch) error {
	if b.ID == "" {
		return errors.New("creating eval batch: empty id")
	}
	if b.Created.IsZero() {
		b.Created = s.now()
	}
	if b.Status == "" {
		b.Status = api.EvalQueued
	}
	type row struct {
		c              api.EvalCaseResult
		caseJ, checksJ string
	}
	rows := make([]row, len(b.Cases))
	for i, c := range b.Cases {
		if c.Index != i {
			return fmt.Errorf("creating eval batch %s: case %d has index %d", b.ID, i, c.Index)
		}
		if c.Status == "" {
			c.Status = api.EvalQueued
		}
		caseJ, err := json.Marshal(c.Case)
		if err != nil {
			return fmt.Errorf("creating eval batch %s: case %d: %w", b.ID, i, err)
		}
		checksJ, err := checksJSON(c.Checks)
		if err != nil {
			return fmt.Errorf("creating eval batch %s: checks of case %d: %w", b.ID, i, err)
		}
		rows[i] = row{c, string(caseJ), checksJ}
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		// ON CONFLICT rather than a unique violation, which in PostgreSQL
		// would abort the caller's transaction too (a bound Tx).
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO eval_batches (`+evalBatchColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO NOTHING`),
			b.ID, b.Name, string(b.Status), micros(b.Created), orNull(b.Ended), b.Score, b.Passed, b.Total, max(b.Concurrency, 1), b.Principal)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("eval batch %s: %w", b.ID, ErrExists)
		}
		for len(rows) > 0 {
			chunk := rows[:min(len(rows), evalCaseInsertRows)]
			rows = rows[len(chunk):]
			query := `INSERT INTO eval_cases (batch_id, ` + evalCaseColumns + `, lease_until) VALUES ` +
				strings.Repeat(`(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0), `, len(chunk)-1) + `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`
			args := make([]any, 0, 11*len(chunk))
			for _, r := range chunk {
				c := r.c
				args = append(args, b.ID, c.Index, r.caseJ, string(c.Status), c.SessionID, r.checksJ, c.Score, boolInt(c.Pass), c.Error,
					orNull(c.Started), orNull(c.Ended))
			}
			if _, err := tx.ExecContext(ctx, s.q(query), args...); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, ErrExists) {
		return err
	}
	if err != nil {
		return fmt.Errorf("creating eval batch: %w", err)
	}
	return nil
}

// EvalBatch implements Evals: the batch, with its cases in index order.
func (s *sqlStore) EvalBatch(ctx context.Context, id string) (api.EvalBatch, error) {
	b, err := scanEvalBatch(s.read.QueryRowContext(ctx, s.q(`SELECT `+evalBatchColumns+` FROM eval_batches WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return api.EvalBatch{}, fmt.Errorf("eval batch %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return api.EvalBatch{}, fmt.Errorf("reading eval batch: %w", err)
	}
	b.Cases, err = queryAll(ctx, s.read, s.q(`SELECT `+evalCaseColumns+` FROM eval_cases WHERE batch_id = ? ORDER BY idx`),
		[]any{id}, scanEvalCase)
	if err != nil {
		return api.EvalBatch{}, fmt.Errorf("reading eval batch %s: %w", id, err)
	}
	return b, nil
}

// ListEvalBatches implements Evals: the batches, newest first (ties by
// id, descending), without their cases, a page at a time.
func (s *sqlStore) ListEvalBatches(ctx context.Context, p Page) ([]api.EvalBatch, string, error) {
	out, next, err := listNewest(ctx, s, `SELECT `+evalBatchColumns+` FROM eval_batches WHERE 1 = 1`, nil, p, scanEvalBatchRow,
		func(b api.EvalBatch) (time.Time, string) { return b.Created, b.ID })
	if err != nil {
		return nil, "", fmt.Errorf("listing eval batches: %w", err)
	}
	return out, next, nil
}

// RunningEvalCases implements Evals.
func (s *sqlStore) RunningEvalCases(ctx context.Context, batchID string) (int, error) {
	var n int
	if err := s.read.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM eval_cases WHERE batch_id = ? AND status = ?`),
		batchID, string(api.EvalRunning)).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting running eval cases: %w", err)
	}
	return n, nil
}

// PrincipalEvals implements Evals: one query over the principal's
// batches that are not completed, and their queued cases.
func (s *sqlStore) PrincipalEvals(ctx context.Context, principal string) (EvalLoad, error) {
	var l EvalLoad
	err := s.read.QueryRowContext(ctx, s.q(`SELECT COUNT(DISTINCT b.id), COUNT(c.idx) FROM eval_batches b
		LEFT JOIN eval_cases c ON c.batch_id = b.id AND c.status = ?
		WHERE b.principal = ? AND b.status <> ?`),
		string(api.EvalQueued), principal, string(api.EvalCompleted)).Scan(&l.Batches, &l.Queued)
	if err != nil {
		return EvalLoad{}, fmt.Errorf("counting a principal's eval batches: %w", err)
	}
	return l, nil
}

// lockEvalBatch locks a batch's row where the database has row locks, so
// that the writes to one batch's cases run one after another: the last
// case to finish then sees that the others have. ErrNotFound without the
// batch.
func (s *sqlStore) lockEvalBatch(ctx context.Context, tx *sql.Tx, batchID string) error {
	query := `SELECT 1 FROM eval_batches WHERE id = ?`
	if s.dialect.RowLocks {
		query += ` FOR UPDATE`
	}
	var one int
	err := tx.QueryRowContext(ctx, s.q(query), batchID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("eval batch %s: %w", batchID, ErrNotFound)
	}
	return err
}

// evalCaseOr is the error for a case that an update conditional on its
// status missed: ErrNotRunning if it exists, ErrNotFound if not.
func (s *sqlStore) evalCaseOr(ctx context.Context, tx *sql.Tx, batchID string, index int) error {
	var n int
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM eval_cases WHERE batch_id = ? AND idx = ?`), batchID, index).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("eval case %s/%d: %w", batchID, index, ErrNotFound)
	}
	return fmt.Errorf("eval case %s/%d: %w", batchID, index, ErrNotRunning)
}

// StartEvalCase implements Evals: in one transaction, the case goes from
// queued to running (one conditional UPDATE, so that of hosts starting it
// at once exactly one does) and a queued batch to running.
func (s *sqlStore) StartEvalCase(ctx context.Context, batchID string, index int, sessionID string, started, leaseUntil time.Time) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockEvalBatch(ctx, tx, batchID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`UPDATE eval_cases SET status = ?, session_id = ?, started_at = ?, lease_until = ?
			WHERE batch_id = ? AND idx = ? AND status = ?`),
			string(api.EvalRunning), sessionID, micros(started), micros(leaseUntil), batchID, index, string(api.EvalQueued))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return s.evalCaseOr(ctx, tx, batchID, index)
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE eval_batches SET status = ? WHERE id = ? AND status = ?`),
			string(api.EvalRunning), batchID, string(api.EvalQueued))
		return err
	})
	if errors.Is(err, ErrNotRunning) || errors.Is(err, ErrNotFound) {
		return err
	}
	if err != nil {
		return fmt.Errorf("starting eval case: %w", err)
	}
	return nil
}

// RenewEvalCase implements Evals: it moves a running case's hold to
// leaseUntil. ErrNotRunning if it is not running, ErrNotFound without it.
func (s *sqlStore) RenewEvalCase(ctx context.Context, batchID string, index int, leaseUntil time.Time) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE eval_cases SET lease_until = ? WHERE batch_id = ? AND idx = ? AND status = ?`),
			micros(leaseUntil), batchID, index, string(api.EvalRunning))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return s.evalCaseOr(ctx, tx, batchID, index)
		}
		return nil
	})
	if errors.Is(err, ErrNotRunning) || errors.Is(err, ErrNotFound) {
		return err
	}
	if err != nil {
		return fmt.Errorf("renewing eval case: %w", err)
	}
	return nil
}

// FinishEvalCase implements Evals: in one transaction, with the batch's
// row locked, it records the running case's result and, if no case of the
// batch is left queued or running, completes the batch (ended when the
// case ended, its score the mean of its cases', passed the cases that
// passed). ErrNotRunning if the case is not running, ErrNotFound without
// it.
func (s *sqlStore) FinishEvalCase(ctx context.Context, batchID string, r api.EvalCaseResult) (bool, error) {
	if r.Status != api.EvalCompleted && r.Status != api.EvalFailed {
		return false, fmt.Errorf("finishing eval case %s/%d: status %q, want %q or %q", batchID, r.Index, r.Status, api.EvalCompleted, api.EvalFailed)
	}
	ended := s.now()
	if r.Ended != nil {
		ended = *r.Ended
	}
	checks, err := checksJSON(r.Checks)
	if err != nil {
		return false, fmt.Errorf("finishing eval case %s/%d: %w", batchID, r.Index, err)
	}
	done := false
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockEvalBatch(ctx, tx, batchID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`UPDATE eval_cases SET status = ?, checks_json = ?, score = ?, pass = ?, error = ?, ended_at = ?
			WHERE batch_id = ? AND idx = ? AND status = ?`),
			string(r.Status), checks, r.Score, boolInt(r.Pass), r.Error, micros(ended), batchID, r.Index, string(api.EvalRunning))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return s.evalCaseOr(ctx, tx, batchID, r.Index)
		}
		var left int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM eval_cases WHERE batch_id = ? AND status IN (?, ?)`),
			batchID, string(api.EvalQueued), string(api.EvalRunning)).Scan(&left); err != nil {
			return err
		}
		if left > 0 {
			return nil
		}
		var score float64
		var passed int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COALESCE(AVG(score), 0), COALESCE(SUM(pass), 0) FROM eval_cases WHERE batch_id = ?`),
			batchID).Scan(&score, &passed); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE eval_batches SET status = ?, ended_at = ?, score = ?, passed = ? WHERE id = ?`),
			string(api.EvalCompleted), micros(ended), score, passed, batchID); err != nil {
			return err
		}
		done = true
		return nil
	})
	if errors.Is(err, ErrNotRunning) || errors.Is(err, ErrNotFound) {
		return false, err
	}
	if err != nil {
		return false, fmt.Errorf("finishing eval case: %w", err)
	}
	return done, nil
}

// ExpiredEvalCases implements Evals: the running cases held until before
// now, by batch and index.
func (s *sqlStore) ExpiredEvalCases(ctx context.Context, now time.Time) ([]EvalCaseRef, error) {
	out, err := queryAll(ctx, s.read, s.q(`SELECT batch_id, idx FROM eval_cases WHERE status = ? AND lease_until < ? ORDER BY batch_id, idx`),
		[]any{string(api.EvalRunning), micros(now)}, func(rows *sql.Rows) (EvalCaseRef, error) {
			var r EvalCaseRef
			err := rows.Scan(&r.BatchID, &r.Index)
			return r, err
		})
	if err != nil {
		return nil, fmt.Errorf("listing expired eval cases: %w", err)
	}
	return out, nil
}

package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

const approvalColumns = `call_id, session_id, turn_id, model_call_id, tool, input, requested_by, requested_at, expires_at, status, decided_by, decided_at, reason, outcome, original_input`

func scanApprovalRow(rows *sql.Rows) (api.Approval, error) { return scanApproval(rows) }

func scanApproval(row interface{ Scan(...any) error }) (api.Approval, error) {
	var a api.Approval
	var input string
	var requested, expires int64
	var decided sql.NullInt64
	var outcome, original sql.NullString
	if err := row.Scan(&a.CallID, &a.SessionID, &a.TurnID, &a.ModelCallID, &a.Tool, &input, &a.RequestedBy, &requested, &expires,
		&a.Status, &a.DecidedBy, &decided, &a.Reason, &outcome, &original); err != nil {
		return api.Approval{}, err
	}
	a.Input = json.RawMessage(input)
	if original.Valid {
		a.OriginalInput = json.RawMessage(original.String)
	}
	a.RequestedAt, a.ExpiresAt = fromMicros(requested), fromMicros(expires)
	if decided.Valid {
		t := fromMicros(decided.Int64)
		a.DecidedAt = &t
	}
	if outcome.Valid {
		var o api.Outcome
		if err := json.Unmarshal([]byte(outcome.String), &o); err != nil {
			return api.Approval{}, fmt.Errorf("decoding the outcome of call %s: %w", a.CallID, err)
		}
		a.Outcome = &o
	}
	return a, nil
}

func (s *sqlStore) CreateApproval(ctx context.Context, a api.Approval, events ...api.Event) ([]api.Event, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	if a.RequestedAt.IsZero() {
		a.RequestedAt = now
	}
	var out []api.Event
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO approvals (call_id, session_id, turn_id, model_call_id, tool, input, requested_by, requested_at, expires_at, status, decided_by, reason, executor)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', '', '')`),
			a.CallID, a.SessionID, a.TurnID, a.ModelCallID, a.Tool, string(a.Input), a.RequestedBy, micros(a.RequestedAt), micros(a.ExpiresAt),
			string(api.ApprovalPending))
		if err != nil {
			if s.dialect.IsConflict != nil && s.dialect.IsConflict(err) {
				return fmt.Errorf("approval %s: %w", a.CallID, ErrExists)
			}
			return err
		}
		if s.jobs != nil {
			if err := s.jobs.insert(ctx, tx, JobSpec{Kind: JobExpireApproval, Key: a.CallID, At: a.ExpiresAt}); err != nil {
				return err
			}
		}
		if a.SessionID != "" && len(events) > 0 {
			out, err = s.appendTx(ctx, tx, a.SessionID, now, withTurn(events, a.TurnID))
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("parking call: %w", err)
	}
	return out, nil
}

func (s *sqlStore) Approval(ctx context.Context, callID string) (api.Approval, error) {
	a, err := scanApproval(s.read.QueryRowContext(ctx, s.q(`SELECT `+approvalColumns+` FROM approvals WHERE call_id = ?`), callID))
	if errors.Is(err, sql.ErrNoRows) {
		return api.Approval{}, fmt.Errorf("approval %s: %w", callID, ErrNotFound)
	}
	if err != nil {
		return api.Approval{}, fmt.Errorf("reading approval: %w", err)
	}
	if a.Approvals, err = s.votes(ctx, s.read, callID); err != nil {
		return api.Approval{}, err
	}
	return a, nil
}

func (s *sqlStore) CountPending(ctx context.Context, requestedBy string) (int, error) {
	var n int
	if err := s.read.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM approvals WHERE requested_by = ? AND status = ?`),
		requestedBy, string(api.ApprovalPending)).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting pending approvals: %w", err)
	}
	return n, nil
}

func (s *sqlStore) ListApprovals(ctx context.Context, p ListApprovalsParams) ([]api.Approval, string, error) {
	limit := pageLimit(p.Page)
	query := `SELECT ` + approvalColumns + ` FROM approvals WHERE (? = '' OR status = ?) AND (? = '' OR requested_by = ?)`
	args := []any{string(p.Status), string(p.Status), p.RequestedBy, p.RequestedBy}
	if p.Cursor != "" {
		ts, id, err := decodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		query += ` AND (requested_at > ? OR (requested_at = ? AND call_id > ?))`
		args = append(args, ts, ts, id)
	}
	query += ` ORDER BY requested_at, call_id LIMIT ?`
	args = append(args, limit+1)
	out, err := queryAll(ctx, s.read, s.q(query), args, scanApprovalRow)
	if err != nil {
		return nil, "", fmt.Errorf("listing approvals: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = encodeCursor(out[limit-1].RequestedAt, out[limit-1].CallID)
	}
	if err := s.votesOf(ctx, out); err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// decidedAs is what decision p sets at now: its status, and for an
// approval the executor's hold (its holder, and until when as the
// column takes it; nil without a holder).
func decidedAs(p ResolveApprovalParams, now time.Time) (status api.ApprovalStatus, holder string, until any) {
	if !p.Approved {
		return api.ApprovalDenied, "", nil
	}
	if p.Executor.Holder != "" {
		until = micros(now.Add(p.Executor.TTL))
	}
	return api.ApprovalApproved, p.Executor.Holder, until
}

// watchApproved inserts, in tx, the watch job of a call approved at now
// (it runs when the executor's lease would run out), on a store with jobs.
func (s *sqlStore) watchApproved(ctx context.Context, tx *sql.Tx, p ResolveApprovalParams, now time.Time) error {
	if !p.Approved || s.jobs == nil {
		return nil
	}
	return s.jobs.insert(ctx, tx, JobSpec{Kind: JobWatchCall, Key: p.CallID, At: now.Add(max(p.Executor.TTL, time.Second))})
}

func (s *sqlStore) ResolveApproval(ctx context.Context, p ResolveApprovalParams) (api.Approval, []api.Event, error) {
	if p.Quorum > 1 || p.Input != nil || p.EventsFor != nil {
		return s.voteApproval(ctx, p)
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	status, holder, until := decidedAs(p, now)
	var won bool
	var stored []api.Event
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var sessionID, turnID string
		err := tx.QueryRowContext(ctx, s.q(`UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?, reason = ?, executor = ?, executor_expires = ?
			WHERE call_id = ? AND status = ? AND expires_at > ? RETURNING session_id, turn_id`),
			string(status), p.By, micros(now), p.Reason, holder, until, p.CallID, string(api.ApprovalPending), micros(now)).Scan(&sessionID, &turnID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		won = true
		if err := s.watchApproved(ctx, tx, p, now); err != nil {
			return err
		}
		if sessionID != "" && len(p.Events) > 0 {
			if stored, err = s.appendTx(ctx, tx, sessionID, now, withTurn(p.Events, turnID)); err != nil {
				return err
			}
		}
		_, err = s.appendAuditTx(ctx, tx, p.Audit, now) // last: it locks the log's head
		return err
	})
	if err != nil {
		return api.Approval{}, nil, fmt.Errorf("resolving approval: %w", err)
	}
	a, rerr := s.Approval(ctx, p.CallID)
	if rerr != nil {
		return api.Approval{}, nil, rerr
	}
	if won {
		return a, stored, nil
	}
	if a.Status != api.ApprovalPending {
		if a.Status == api.ApprovalExpired {
			return a, nil, ErrExpired
		}
		return a, nil, ErrAlreadyResolved
	}
	return a, nil, ErrExpired // pending, but past its expiry
}

// ExpireApproval implements Tx.
func (s *sqlStore) ExpireApproval(ctx context.Context, callID string, now time.Time) (api.Approval, error) {
	out, err := queryAll(ctx, s.write, s.q(`UPDATE approvals SET status = ?, decided_at = ? WHERE call_id = ? AND status = ? AND expires_at <= ? RETURNING `+approvalColumns),
		[]any{string(api.ApprovalExpired), micros(now), callID, string(api.ApprovalPending), micros(now)}, scanApprovalRow)
	if err != nil {
		return api.Approval{}, fmt.Errorf("expiring approval: %w", err)
	}
	if len(out) == 1 {
		return out[0], nil
	}
	a, err := s.Approval(ctx, callID)
	if err != nil {
		return api.Approval{}, err
	}
	if a.Status == api.ApprovalPending {
		return a, ErrBusy
	}
	return a, ErrAlreadyResolved
}

// OrphanedApproval implements Tx.
func (s *sqlStore) OrphanedApproval(ctx context.Context, callID string, now time.Time) (api.Approval, error) {
	query := `SELECT ` + approvalColumns + `, executor_expires FROM approvals WHERE call_id = ?` // NULL: unclaimed
	if s.dialect.RowLocks {
		query += ` FOR UPDATE`
	}
	var until sql.NullInt64
	a, err := scanApproval(scanWith{s.read.QueryRowContext(ctx, s.q(query), callID), &until})
	if errors.Is(err, sql.ErrNoRows) {
		return api.Approval{}, fmt.Errorf("approval %s: %w", callID, ErrNotFound)
	}
	if err != nil {
		return api.Approval{}, fmt.Errorf("reading approval: %w", err)
	}
	switch {
	case a.Status != api.ApprovalApproved || a.Outcome != nil:
		return a, ErrNotRunning
	case !until.Valid || until.Int64 >= micros(now):
		return a, ErrBusy // unclaimed, or its executor's lease is live
	}
	return a, nil
}

// scanWith scans a row's leading columns with scanApproval's and its last
// into extra.
type scanWith struct {
	row   interface{ Scan(...any) error }
	extra any
}

func (w scanWith) Scan(dest ...any) error { return w.row.Scan(append(dest, w.extra)...) }

func (s *sqlStore) ExpireApprovals(ctx context.Context, now time.Time) ([]api.Approval, error) {
	out, err := queryAll(ctx, s.write, s.q(`UPDATE approvals SET status = ?, decided_at = ? WHERE status = ? AND expires_at <= ? RETURNING `+approvalColumns),
		[]any{string(api.ApprovalExpired), micros(now), string(api.ApprovalPending), micros(now)}, scanApprovalRow)
	if err != nil {
		return nil, fmt.Errorf("expiring approvals: %w", err)
	}
	return out, nil
}

func (s *sqlStore) ApprovalsToRun(ctx context.Context, sessionID, turnID string) ([]api.Approval, error) {
	out, err := queryAll(ctx, s.read, s.q(`SELECT `+approvalColumns+` FROM approvals
		WHERE session_id = ? AND turn_id = ? AND status = ? AND outcome IS NULL AND executor = '' ORDER BY requested_at, call_id`),
		[]any{sessionID, turnID, string(api.ApprovalApproved)}, scanApprovalRow)
	if err != nil {
		return nil, fmt.Errorf("listing approved calls to run: %w", err)
	}
	return out, nil
}

func (s *sqlStore) ClaimApproval(ctx context.Context, callID string, executor Lease) (bool, error) {
	res, err := s.write.ExecContext(ctx, s.q(`UPDATE approvals SET executor = ?, executor_expires = ?
		WHERE call_id = ? AND status = ? AND outcome IS NULL AND executor = ''`),
		executor.Holder, micros(s.now().Add(executor.TTL)), callID, string(api.ApprovalApproved))
	if err != nil {
		return false, fmt.Errorf("claiming an approved call: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func (s *sqlStore) RenewExecutor(ctx context.Context, callID string, executor Lease) error {
	_, err := s.write.ExecContext(ctx, s.q(`UPDATE approvals SET executor_expires = ? WHERE call_id = ? AND executor = ? AND executor <> '' AND outcome IS NULL`),
		micros(s.now().Add(executor.TTL)), callID, executor.Holder)
	return err
}

func (s *sqlStore) OrphanedApprovals(ctx context.Context, now time.Time) ([]api.Approval, error) {
	out, err := queryAll(ctx, s.read, s.q(`SELECT `+approvalColumns+` FROM approvals WHERE status = ? AND outcome IS NULL AND executor_expires < ?`),
		[]any{string(api.ApprovalApproved), micros(now)}, scanApprovalRow)
	if err != nil {
		return nil, fmt.Errorf("listing interrupted approvals: %w", err)
	}
	return out, nil
}

func (s *sqlStore) FinishApproval(ctx context.Context, callID string, outcome api.Outcome, events ...api.Event) (bool, []api.Event, error) {
	b, err := json.Marshal(outcome)
	if err != nil {
		return false, nil, fmt.Errorf("encoding the outcome of call %s: %w", callID, err)
	}
	var won bool
	var stored []api.Event
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var sessionID, turnID string
		err := tx.QueryRowContext(ctx, s.q(`UPDATE approvals SET outcome = ? WHERE call_id = ? AND outcome IS NULL RETURNING session_id, turn_id`),
			string(b), callID).Scan(&sessionID, &turnID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		won = true
		if sessionID != "" && len(events) > 0 {
			stored, err = s.appendTx(ctx, tx, sessionID, s.now().UTC().Truncate(time.Microsecond), withTurn(events, turnID))
		}
		return err
	})
	if err != nil {
		return false, nil, fmt.Errorf("recording a call's outcome: %w", err)
	}
	return won, stored, nil
}

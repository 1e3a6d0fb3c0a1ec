package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Approval statuses.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalExpired  = "expired"
)

// Errors of approvals, checked with errors.Is.
var (
	// ErrAlreadyResolved: the approval was decided before; the error comes
	// with the approval as it stands.
	ErrAlreadyResolved = errors.New("already resolved")
	// ErrExpired: the approval expired before anyone decided.
	ErrExpired = errors.New("expired")
)

// Approval is a gated call parked until a person decides. Its input is the
// validated input as stored when it parked: approving runs exactly that.
type Approval struct {
	CallID      string          `json:"callId"`
	SessionID   string          `json:"sessionId,omitempty"`
	TurnID      string          `json:"turnId,omitempty"`
	ModelCallID string          `json:"modelCallId,omitempty"`
	Tool        string          `json:"tool"`
	Input       json.RawMessage `json:"input"`
	RequestedBy string          `json:"requestedBy"`
	RequestedAt time.Time       `json:"requestedAt"`
	ExpiresAt   time.Time       `json:"expiresAt"`
	Status      string          `json:"status"`
	DecidedBy   string          `json:"decidedBy,omitempty"`
	DecidedAt   *time.Time      `json:"decidedAt,omitempty"`
	Reason      string          `json:"reason,omitempty"`
	// Outcome is the call's outcome once known (JSON), or nil.
	Outcome json.RawMessage `json:"outcome,omitempty"`
}

// Approvals is the part of a Store that keeps parked calls.
type Approvals interface {
	// CreateApproval parks a call, appending events to its session (if it
	// has one) in the same transaction.
	CreateApproval(ctx context.Context, a Approval, events ...Event) ([]Event, error)
	// Approval returns a parked or decided call.
	Approval(ctx context.Context, callID string) (Approval, error)
	// ListApprovals lists approvals with a status ("" for all), oldest
	// first.
	ListApprovals(ctx context.Context, status string, p Page) ([]Approval, string, error)
	// ResolveApproval decides a pending approval, exactly once: it fails
	// with ErrAlreadyResolved (and the approval as decided), ErrExpired or
	// ErrNotFound. An approved call is held by executor until its outcome
	// is recorded or the executor's lease runs out.
	ResolveApproval(ctx context.Context, callID string, approved bool, by, reason string, executor Lease) (Approval, error)
	// ExpireApprovals marks pending approvals past their expiry as expired
	// and returns them.
	ExpireApprovals(ctx context.Context, now time.Time) ([]Approval, error)
	// RenewExecutor extends an approved call's executor lease.
	RenewExecutor(ctx context.Context, callID string, executor Lease) error
	// OrphanedApprovals lists approved calls without an outcome whose
	// executor's lease ran out: their host died while running them.
	OrphanedApprovals(ctx context.Context, now time.Time) ([]Approval, error)
	// FinishApproval records a decided call's outcome, once; false if it
	// had one already.
	FinishApproval(ctx context.Context, callID string, outcome json.RawMessage) (bool, error)

	// ParkTurn keeps a turn running without a lease while it waits for
	// approvals: no host holds it, and it does not expire.
	ParkTurn(ctx context.Context, sessionID, turnID string) error
	// ResumeTurn takes a parked turn's lease again; ErrNotRunning if it is
	// not parked (another host resumed or ended it).
	ResumeTurn(ctx context.Context, sessionID, turnID string, lease Lease) error
	// ParkedTurns lists parked turns.
	ParkedTurns(ctx context.Context) ([]Turn, error)
}

const approvalColumns = `call_id, session_id, turn_id, model_call_id, tool, input, requested_by, requested_at, expires_at, status, decided_by, decided_at, reason, outcome`

func scanApprovalRow(rows *sql.Rows) (Approval, error) { return scanApproval(rows) }

func scanApproval(row interface{ Scan(...any) error }) (Approval, error) {
	var a Approval
	var input string
	var requested, expires int64
	var decided sql.NullInt64
	var outcome sql.NullString
	err := row.Scan(&a.CallID, &a.SessionID, &a.TurnID, &a.ModelCallID, &a.Tool, &input, &a.RequestedBy, &requested, &expires,
		&a.Status, &a.DecidedBy, &decided, &a.Reason, &outcome)
	a.Input = json.RawMessage(input)
	a.RequestedAt, a.ExpiresAt = fromMicros(requested), fromMicros(expires)
	if decided.Valid {
		t := fromMicros(decided.Int64)
		a.DecidedAt = &t
	}
	if outcome.Valid {
		a.Outcome = json.RawMessage(outcome.String)
	}
	return a, err
}

func (s *sqlStore) CreateApproval(ctx context.Context, a Approval, events ...Event) ([]Event, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	if a.RequestedAt.IsZero() {
		a.RequestedAt = now
	}
	var out []Event
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO approvals (call_id, session_id, turn_id, model_call_id, tool, input, requested_by, requested_at, expires_at, status, decided_by, reason, executor)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', '', '')`),
			a.CallID, a.SessionID, a.TurnID, a.ModelCallID, a.Tool, string(a.Input), a.RequestedBy, micros(a.RequestedAt), micros(a.ExpiresAt), ApprovalPending)
		if err != nil {
			if s.dialect.IsConflict != nil && s.dialect.IsConflict(err) {
				return fmt.Errorf("approval %s: %w", a.CallID, ErrExists)
			}
			return err
		}
		if a.SessionID != "" && len(events) > 0 {
			for i := range events {
				events[i].TurnID = a.TurnID
			}
			out, err = s.appendTx(ctx, tx, a.SessionID, now, events)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("parking call: %w", err)
	}
	return out, nil
}

func (s *sqlStore) Approval(ctx context.Context, callID string) (Approval, error) {
	a, err := scanApproval(s.read.QueryRowContext(ctx, s.q(`SELECT `+approvalColumns+` FROM approvals WHERE call_id = ?`), callID))
	if errors.Is(err, sql.ErrNoRows) {
		return Approval{}, fmt.Errorf("approval %s: %w", callID, ErrNotFound)
	}
	if err != nil {
		return Approval{}, fmt.Errorf("reading approval: %w", err)
	}
	return a, nil
}

func (s *sqlStore) ListApprovals(ctx context.Context, status string, p Page) ([]Approval, string, error) {
	limit := p.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	query := `SELECT ` + approvalColumns + ` FROM approvals WHERE (? = '' OR status = ?)`
	args := []any{status, status}
	if p.Cursor != "" {
		ts, id, err := decodeCursor(p.Cursor)
		if err != nil {
			return nil, "", ErrBadCursor
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
		last := out[limit-1]
		next = encodeCursor(Session{ID: last.CallID, CreatedAt: last.RequestedAt})
	}
	return out, next, nil
}

func (s *sqlStore) ResolveApproval(ctx context.Context, callID string, approved bool, by, reason string, executor Lease) (Approval, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	status, holder := ApprovalDenied, ""
	var until any
	if approved {
		status, holder, until = ApprovalApproved, executor.Holder, micros(now.Add(executor.TTL))
	}
	res, err := s.write.ExecContext(ctx, s.q(`UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?, reason = ?, executor = ?, executor_expires = ?
		WHERE call_id = ? AND status = ? AND expires_at > ?`),
		status, by, micros(now), reason, holder, until, callID, ApprovalPending, micros(now))
	if err != nil {
		return Approval{}, fmt.Errorf("resolving approval: %w", err)
	}
	a, rerr := s.Approval(ctx, callID)
	if rerr != nil {
		return Approval{}, rerr
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return a, nil
	}
	if a.Status != ApprovalPending {
		if a.Status == ApprovalExpired {
			return a, ErrExpired
		}
		return a, ErrAlreadyResolved
	}
	return a, ErrExpired // pending, but past its expiry
}

func (s *sqlStore) ExpireApprovals(ctx context.Context, now time.Time) ([]Approval, error) {
	out, err := queryAll(ctx, s.write, s.q(`UPDATE approvals SET status = ?, decided_at = ? WHERE status = ? AND expires_at <= ? RETURNING `+approvalColumns),
		[]any{ApprovalExpired, micros(now), ApprovalPending, micros(now)}, scanApprovalRow)
	if err != nil {
		return nil, fmt.Errorf("expiring approvals: %w", err)
	}
	return out, nil
}

func (s *sqlStore) RenewExecutor(ctx context.Context, callID string, executor Lease) error {
	_, err := s.write.ExecContext(ctx, s.q(`UPDATE approvals SET executor_expires = ? WHERE call_id = ? AND executor = ? AND outcome IS NULL`),
		micros(s.now().Add(executor.TTL)), callID, executor.Holder)
	return err
}

func (s *sqlStore) OrphanedApprovals(ctx context.Context, now time.Time) ([]Approval, error) {
	out, err := queryAll(ctx, s.read, s.q(`SELECT `+approvalColumns+` FROM approvals WHERE status = ? AND outcome IS NULL AND executor_expires < ?`),
		[]any{ApprovalApproved, micros(now)}, scanApprovalRow)
	if err != nil {
		return nil, fmt.Errorf("listing interrupted approvals: %w", err)
	}
	return out, nil
}

func (s *sqlStore) FinishApproval(ctx context.Context, callID string, outcome json.RawMessage) (bool, error) {
	res, err := s.write.ExecContext(ctx, s.q(`UPDATE approvals SET outcome = ? WHERE call_id = ? AND outcome IS NULL`), string(outcome), callID)
	if err != nil {
		return false, fmt.Errorf("recording a call's outcome: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func (s *sqlStore) ParkTurn(ctx context.Context, sessionID, turnID string) error {
	res, err := s.write.ExecContext(ctx, s.q(`UPDATE sessions SET lease_holder = '', lease_expires = NULL WHERE id = ? AND turn_id = ?`), sessionID, turnID)
	if err != nil {
		return fmt.Errorf("parking turn: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotRunning
	}
	return nil
}

func (s *sqlStore) ResumeTurn(ctx context.Context, sessionID, turnID string, lease Lease) error {
	res, err := s.write.ExecContext(ctx, s.q(`UPDATE sessions SET lease_holder = ?, lease_expires = ?, lease_token = lease_token + 1
		WHERE id = ? AND turn_id = ? AND lease_expires IS NULL`),
		lease.Holder, micros(s.now().Add(lease.TTL)), sessionID, turnID)
	if err != nil {
		return fmt.Errorf("resuming turn: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotRunning
	}
	return nil
}

func (s *sqlStore) ParkedTurns(ctx context.Context) ([]Turn, error) {
	out, err := queryAll(ctx, s.read, s.q(`SELECT t.session_id, t.id, t.kind, t.status, t.reason, t.started_at FROM sessions s
		JOIN turns t ON t.session_id = s.id AND t.id = s.turn_id WHERE s.turn_id IS NOT NULL AND s.lease_expires IS NULL`), nil, scanTurnRow)
	if err != nil {
		return nil, fmt.Errorf("listing parked turns: %w", err)
	}
	return out, nil
}

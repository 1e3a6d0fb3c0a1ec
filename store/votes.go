package store

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// votes reads a call's approvals, oldest first (nil without any).
func (s *sqlStore) votes(ctx context.Context, q querier, callID string) ([]api.ApprovalVote, error) {
	out, err := queryAll(ctx, q, s.q(`SELECT by_name, at, edited FROM approval_votes WHERE call_id = ? ORDER BY seq`), []any{callID},
		func(rows *sql.Rows) (api.ApprovalVote, error) {
			var v api.ApprovalVote
			var at, edited int64
			err := rows.Scan(&v.By, &at, &edited)
			v.At, v.Edited = fromMicros(at), edited != 0
			return v, err
		})
	if err != nil {
		return nil, fmt.Errorf("reading the approvals of call %s: %w", callID, err)
	}
	return out, nil
}

// votesOf sets the approvals of a page of calls, in one query.
func (s *sqlStore) votesOf(ctx context.Context, list []api.Approval) error {
	if len(list) == 0 {
		return nil
	}
	at := make(map[string]int, len(list))
	args := make([]any, len(list))
	for i, a := range list {
		at[a.CallID], args[i] = i, a.CallID
	}
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT call_id, by_name, at, edited FROM approval_votes WHERE call_id IN (?`+
		strings.Repeat(", ?", len(list)-1)+`) ORDER BY call_id, seq`), args...)
	if err != nil {
		return fmt.Errorf("reading approvals: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var v api.ApprovalVote
		var when, edited int64
		if err := rows.Scan(&id, &v.By, &when, &edited); err != nil {
			return fmt.Errorf("reading approvals: %w", err)
		}
		v.At, v.Edited = fromMicros(when), edited != 0
		if i, ok := at[id]; ok {
			list[i].Approvals = append(list[i].Approvals, v)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading approvals: %w", err)
	}
	return nil
}

// sameJSON reports whether a and b are the same JSON text once compacted.
func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// voteApproval is ResolveApproval with a quorum, an edit or events made
// from the decision: under the approval's row lock it records the
// approval, counts the distinct voters, and decides the call on the
// Quorum-th (or on a denial).
func (s *sqlStore) voteApproval(ctx context.Context, p ResolveApprovalParams) (api.Approval, []api.Event, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	voter := cmp.Or(p.Voter, p.By)
	var (
		cur     api.Approval
		stored  []api.Event
		decided bool
		refused error
	)
	err := s.tx(ctx, func(tx *sql.Tx) error {
		query := `SELECT ` + approvalColumns + ` FROM approvals WHERE call_id = ?`
		if s.dialect.RowLocks {
			query += ` FOR UPDATE`
		}
		a, err := scanApproval(tx.QueryRowContext(ctx, s.q(query), p.CallID))
		if errors.Is(err, sql.ErrNoRows) {
			refused = fmt.Errorf("approval %s: %w", p.CallID, ErrNotFound)
			return nil
		}
		if err != nil {
			return err
		}
		now = s.now().UTC().Truncate(time.Microsecond) // under the lock: the approvals' times follow their order
		switch {
		case a.Status == api.ApprovalExpired:
			cur, refused = a, ErrExpired
			return nil
		case a.Status != api.ApprovalPending:
			cur, refused = a, ErrAlreadyResolved
			return nil
		case micros(a.ExpiresAt) <= micros(now):
			cur, refused = a, ErrExpired
			return nil
		}
		if p.Approved {
			edit := p.Input != nil && !sameJSON(p.Input, a.Input)
			if !edit {
				var n int
				if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM approval_votes WHERE call_id = ? AND voter = ?`), p.CallID, voter).Scan(&n); err != nil {
					return err
				}
				if n > 0 {
					cur, refused = a, ErrAlreadyVoted
					if cur.Approvals, err = s.votes(ctx, tx, p.CallID); err != nil {
						return err
					}
					return nil
				}
			} else {
				if a.OriginalInput == nil {
					a.OriginalInput = a.Input
				}
				a.Input = p.Input
				if _, err := tx.ExecContext(ctx, s.q(`UPDATE approvals SET input = ?, original_input = ? WHERE call_id = ?`),
					string(a.Input), string(a.OriginalInput), p.CallID); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM approval_votes WHERE call_id = ?`), p.CallID); err != nil {
					return err
				}
			}
			edited := 0
			if edit {
				edited = 1
			}
			var seq int
			if err := tx.QueryRowContext(ctx, s.q(`SELECT COALESCE(MAX(seq), 0) + 1 FROM approval_votes WHERE call_id = ?`), p.CallID).Scan(&seq); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO approval_votes (call_id, voter, by_name, edited, at, seq) VALUES (?, ?, ?, ?, ?, ?)`),
				p.CallID, voter, p.By, edited, micros(now), seq); err != nil {
				return err
			}
			if a.Approvals, err = s.votes(ctx, tx, p.CallID); err != nil {
				return err
			}
		}
		if !p.Approved { // a denial's events count the approvals before it
			if a.Approvals, err = s.votes(ctx, tx, p.CallID); err != nil {
				return err
			}
		}
		events := p.Events
		if !p.Approved || len(a.Approvals) >= max(p.Quorum, 1) {
			decided = true
			status, holder, until := decidedAs(p, now)
			if _, err := tx.ExecContext(ctx, s.q(`UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?, reason = ?, executor = ?, executor_expires = ?
				WHERE call_id = ? AND status = ?`),
				string(status), p.By, micros(now), p.Reason, holder, until, p.CallID, string(api.ApprovalPending)); err != nil {
				return err
			}
			a.Status, a.DecidedBy, a.DecidedAt, a.Reason = status, p.By, &now, p.Reason
			if err := s.watchApproved(ctx, tx, p, now); err != nil {
				return err
			}
		}
		if p.EventsFor != nil {
			events = p.EventsFor(a)
		} else if !decided {
			events = nil
		}
		if a.SessionID != "" && len(events) > 0 {
			if stored, err = s.appendTx(ctx, tx, a.SessionID, now, withTurn(events, a.TurnID)); err != nil {
				return err
			}
		}
		cur = a
		_, err = s.appendAuditTx(ctx, tx, VoteAudit(p.Audit, decided), now) // last: it locks the log's head
		return err
	})
	if err != nil {
		return api.Approval{}, nil, fmt.Errorf("resolving approval: %w", err)
	}
	if refused != nil {
		return cur, nil, refused
	}
	if decided {
		a, err := s.Approval(ctx, p.CallID)
		return a, stored, err
	}
	return cur, stored, nil
}

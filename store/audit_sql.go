package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

func (s *sqlStore) AppendAudit(ctx context.Context, p AppendAuditParams) ([]api.AuditEntry, error) {
	var out []api.AuditEntry
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = s.appendAuditTx(ctx, tx, p, s.now())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("appending to the audit log: %w", err)
	}
	return out, nil
}

// appendAuditTx appends p's records in tx: it locks the log's head (the
// one row of audit_head), so call it last in a transaction that locks
// other rows, then inserts the entries and moves the head on.
func (s *sqlStore) appendAuditTx(ctx context.Context, tx *sql.Tx, p AppendAuditParams, now time.Time) ([]api.AuditEntry, error) {
	if len(p.Records) == 0 {
		return nil, nil
	}
	lock := ""
	if s.dialect.RowLocks {
		lock = " FOR UPDATE"
	}
	var head api.AuditHead
	if err := tx.QueryRowContext(ctx, `SELECT seq, hash FROM audit_head WHERE id = 1`+lock).Scan(&head.Seq, &head.Hash); err != nil {
		return nil, fmt.Errorf("reading the audit log's head: %w", err)
	}
	entries, err := AuditEntries(p, head, now.UTC().Truncate(time.Microsecond))
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO audit (seq, at, kind, principal, subject, detail, prev_hash, hash, signer, sig)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			e.Seq, micros(e.Time), string(e.Kind), e.Principal, e.Subject, string(e.Detail), e.PrevHash, e.Hash, e.Signer, e.Sig); err != nil {
			return nil, err
		}
	}
	last := entries[len(entries)-1]
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1`), last.Seq, last.Hash); err != nil {
		return nil, err
	}
	return entries, nil
}

func (s *sqlStore) ListAudit(ctx context.Context, after int64, limit int) ([]api.AuditEntry, api.AuditHead, error) {
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	var head api.AuditHead
	var out []api.AuditEntry
	// One read transaction, so that the head and the entries are of one
	// moment (SQLite's WAL snapshot; PostgreSQL: repeatable read).
	err := func() error {
		db, ok := s.read.(*sql.DB)
		q := s.read
		if ok && s.txn == nil {
			opts := &sql.TxOptions{ReadOnly: true}
			if s.dialect.RowLocks {
				opts.Isolation = sql.LevelRepeatableRead
			}
			tx, err := db.BeginTx(ctx, opts)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			q = tx
		}
		if err := q.QueryRowContext(ctx, `SELECT seq, hash FROM audit_head WHERE id = 1`).Scan(&head.Seq, &head.Hash); err != nil {
			return err
		}
		var err error
		out, err = queryAll(ctx, q, s.q(`SELECT seq, at, kind, principal, subject, detail, prev_hash, hash, signer, sig
			FROM audit WHERE seq > ? ORDER BY seq LIMIT ?`), []any{after, limit}, scanAuditRow)
		return err
	}()
	if err != nil {
		return nil, api.AuditHead{}, fmt.Errorf("reading the audit log: %w", err)
	}
	return out, head, nil
}

func scanAuditRow(rows *sql.Rows) (api.AuditEntry, error) {
	var e api.AuditEntry
	var at int64
	var kind, detail string
	err := rows.Scan(&e.Seq, &at, &kind, &e.Principal, &e.Subject, &detail, &e.PrevHash, &e.Hash, &e.Signer, &e.Sig)
	e.Time, e.Kind, e.Detail = fromMicros(at), api.AuditKind(kind), json.RawMessage(detail)
	return e, err
}

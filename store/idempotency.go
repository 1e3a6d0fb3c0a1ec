package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Idempotency is the part of a Store that keeps the first answer to a
// request made with an Idempotency-Key, so that a retry gets it again
// rather than running anything twice.
type Idempotency interface {
	// BeginIdempotent claims p.Key in p.Scope for a request: claimed is
	// true for a new key (or one whose record expired, or whose claim was
	// abandoned: still running after p.Lease, its host died). Otherwise the
	// record is the key's: running, or done with its answer; the caller
	// compares its Hash.
	BeginIdempotent(ctx context.Context, p BeginIdempotentParams) (rec IdempotentRecord, claimed bool, err error)
	// FinishIdempotent records a claimed key's answer.
	FinishIdempotent(ctx context.Context, scope, key string, a IdempotentAnswer) error
	// ForgetIdempotent drops a key (its request failed in a way a retry
	// may mend).
	ForgetIdempotent(ctx context.Context, scope, key string) error
	// PruneIdempotent deletes the records that expired before now, and
	// says how many.
	PruneIdempotent(ctx context.Context, now time.Time) (int64, error)
}

// BeginIdempotentParams claim a key.
type BeginIdempotentParams struct {
	Scope string // what the key is unique in: the route and principal
	Key   string
	Hash  string        // the request's fingerprint
	TTL   time.Duration // how long the record is kept
	Lease time.Duration // how long a claim may run before it counts as abandoned
}

// IdempotentAnswer is the answer kept for a key.
type IdempotentAnswer struct {
	Status      int
	ContentType string
	CallID      string // the X-Call-Id header, if any
	Body        []byte
}

// IdempotentRecord is a key's record: Done with its Answer, or running.
type IdempotentRecord struct {
	Hash   string
	Done   bool
	Answer IdempotentAnswer
}

func (s *sqlStore) BeginIdempotent(ctx context.Context, p BeginIdempotentParams) (IdempotentRecord, bool, error) {
	now := s.now()
	var rec IdempotentRecord
	claimed := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM idempotency WHERE scope = ? AND key = ? AND (expires_at < ? OR (status = 0 AND running_until < ?))`),
			p.Scope, p.Key, micros(now), micros(now)); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO idempotency (scope, key, hash, status, content_type, call_id, body, running_until, expires_at)
			VALUES (?, ?, ?, 0, '', '', NULL, ?, ?) ON CONFLICT (scope, key) DO NOTHING`),
			p.Scope, p.Key, p.Hash, micros(now.Add(p.Lease)), micros(now.Add(p.TTL)))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			claimed, rec.Hash = true, p.Hash
			return nil
		}
		var body []byte
		err = tx.QueryRowContext(ctx, s.q(`SELECT hash, status, content_type, call_id, body FROM idempotency WHERE scope = ? AND key = ?`), p.Scope, p.Key).
			Scan(&rec.Hash, &rec.Answer.Status, &rec.Answer.ContentType, &rec.Answer.CallID, &body)
		rec.Answer.Body, rec.Done = body, rec.Answer.Status != 0
		return err
	})
	if err != nil {
		return IdempotentRecord{}, false, fmt.Errorf("claiming an idempotency key: %w", err)
	}
	return rec, claimed, nil
}

func (s *sqlStore) FinishIdempotent(ctx context.Context, scope, key string, a IdempotentAnswer) error {
	if a.Status == 0 {
		return errors.New("recording an idempotent answer: no status")
	}
	body := a.Body
	if body == nil {
		body = []byte{}
	}
	_, err := s.write.ExecContext(ctx, s.q(`UPDATE idempotency SET status = ?, content_type = ?, call_id = ?, body = ? WHERE scope = ? AND key = ?`),
		a.Status, a.ContentType, a.CallID, body, scope, key)
	if err != nil {
		return fmt.Errorf("recording an idempotent answer: %w", err)
	}
	return nil
}

func (s *sqlStore) ForgetIdempotent(ctx context.Context, scope, key string) error {
	if _, err := s.write.ExecContext(ctx, s.q(`DELETE FROM idempotency WHERE scope = ? AND key = ?`), scope, key); err != nil {
		return fmt.Errorf("forgetting an idempotency key: %w", err)
	}
	return nil
}

func (s *sqlStore) PruneIdempotent(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.write.ExecContext(ctx, s.q(`DELETE FROM idempotency WHERE expires_at < ?`), micros(now))
	if err != nil {
		return 0, fmt.Errorf("pruning idempotency keys: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// Keys is the part of a Store that keeps API keys: each key's record and
// the hash of its secret, never the secret itself. A host reads a key at
// most once a second and a revoke answers a second after its commit, so
// that when it answers every host that shares the store refuses the key.
type Keys interface {
	// CreateKey stores a new key, and appends p.Audit to the audit log in
	// the same transaction: neither is written without the other.
	// ErrExists if its id is taken; ErrBadAudit for a bad record.
	CreateKey(ctx context.Context, p CreateKeyParams) error
	// Key returns a key's record with its hash; ErrNotFound without it.
	Key(ctx context.Context, id string) (KeyRecord, error)
	// ListKeys lists every key, revoked and expired ones too, oldest
	// first.
	ListKeys(ctx context.Context) ([]api.Key, error)
	// RevokeKey marks a key revoked at p.At and returns it, appending the
	// records of p.AuditFor to the audit log in the same transaction; a key
	// already revoked keeps its first time, and nothing is appended. ErrNotFound
	// without it.
	RevokeKey(ctx context.Context, p RevokeKeyParams) (api.Key, error)
	// TouchKey records that a key was used at the given time, unless it
	// was recorded at or after it.
	TouchKey(ctx context.Context, id string, at time.Time) error
}

// CreateKeyParams create a key.
type CreateKeyParams struct {
	Key KeyRecord
	// Audit is appended to the audit log with the key (key.created).
	Audit AppendAuditParams
}

// RevokeKeyParams revoke a key.
type RevokeKeyParams struct {
	ID string
	At time.Time
	// AuditFor, if set, makes the audit records of the revocation from
	// the key as revoked (key.revoked); it is called only when this call
	// revokes it.
	AuditFor func(api.Key) AppendAuditParams
}

// KeyRecord is a key as the store keeps it: its record and Hash, the
// digest of its secret the host compares a presented secret's with.
type KeyRecord struct {
	api.Key
	Hash []byte
}

const keyColumns = `id, name, roles, hash, created_at, last_used_at, expires_at, revoked_at`

func scanKey(row interface{ Scan(...any) error }) (KeyRecord, error) {
	var k KeyRecord
	var roles string
	var created int64
	var used, expires, revoked sql.NullInt64
	if err := row.Scan(&k.ID, &k.Name, &roles, &k.Hash, &created, &used, &expires, &revoked); err != nil {
		return KeyRecord{}, err
	}
	k.Roles = splitRoles(roles)
	k.CreatedAt = fromMicros(created)
	k.LastUsedAt, k.ExpiresAt, k.RevokedAt = nullMicros(used), nullMicros(expires), nullMicros(revoked)
	return k, nil
}

// splitRoles reads the roles column: role names joined by commas (a role
// name has none).
func splitRoles(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ",")
}

func (s *sqlStore) CreateKey(ctx context.Context, p CreateKeyParams) error {
	k := p.Key
	if k.ID == "" || len(k.Hash) == 0 {
		return errors.New("creating key: empty id or hash")
	}
	for _, r := range k.Roles {
		if strings.Contains(r, ",") {
			return fmt.Errorf("creating key %s: role %q has a comma", k.ID, r)
		}
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = s.now()
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO api_keys (`+keyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
			k.ID, k.Name, strings.Join(k.Roles, ","), k.Hash, micros(k.CreatedAt), orNull(k.LastUsedAt), orNull(k.ExpiresAt), orNull(k.RevokedAt)); err != nil {
			if s.dialect.IsConflict != nil && s.dialect.IsConflict(err) {
				return fmt.Errorf("key %s: %w", k.ID, ErrExists)
			}
			return err
		}
		_, err := s.appendAuditTx(ctx, tx, p.Audit, s.now()) // last: it locks the log's head
		return err
	})
	if err != nil {
		return fmt.Errorf("creating key: %w", err)
	}
	return nil
}

// selectKeySQL reads a key (Key, through the prepared selectKey; and
// RevokeKey, in its transaction).
const selectKeySQL = `SELECT ` + keyColumns + ` FROM api_keys WHERE id = ?`

func (s *sqlStore) Key(ctx context.Context, id string) (KeyRecord, error) {
	stmt := s.selectKey
	if s.txn != nil {
		stmt = s.txn.StmtContext(ctx, stmt)
	}
	k, err := scanKey(stmt.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return KeyRecord{}, fmt.Errorf("key %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return KeyRecord{}, fmt.Errorf("reading key %s: %w", id, err)
	}
	return k, nil
}

func (s *sqlStore) ListKeys(ctx context.Context) ([]api.Key, error) {
	recs, err := queryAll(ctx, s.read, s.q(`SELECT `+keyColumns+` FROM api_keys ORDER BY created_at, id`), nil,
		func(r *sql.Rows) (KeyRecord, error) { return scanKey(r) })
	if err != nil {
		return nil, fmt.Errorf("listing keys: %w", err)
	}
	out := make([]api.Key, len(recs))
	for i, r := range recs {
		out[i] = r.Key
	}
	return out, nil
}

func (s *sqlStore) RevokeKey(ctx context.Context, p RevokeKeyParams) (api.Key, error) {
	var k KeyRecord
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`), micros(p.At), p.ID)
		if err != nil {
			return err
		}
		revoked, err := res.RowsAffected()
		if err != nil {
			return err
		}
		k, err = scanKey(tx.QueryRowContext(ctx, s.q(selectKeySQL), p.ID))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil || revoked == 0 || p.AuditFor == nil {
			return err
		}
		_, err = s.appendAuditTx(ctx, tx, p.AuditFor(k.Key), s.now()) // last: it locks the log's head
		return err
	})
	if err != nil {
		return api.Key{}, fmt.Errorf("revoking key %s: %w", p.ID, err)
	}
	return k.Key, nil
}

func (s *sqlStore) TouchKey(ctx context.Context, id string, at time.Time) error {
	if _, err := s.write.ExecContext(ctx, s.q(`UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`),
		micros(at), id, micros(at)); err != nil {
		return fmt.Errorf("recording the use of key %s: %w", id, err)
	}
	return nil
}

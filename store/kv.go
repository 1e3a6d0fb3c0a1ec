package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

const kvLive = `(expires_at IS NULL OR expires_at > ?)`

func scanKV(rows interface{ Scan(...any) error }) (tool.KVEntry, error) {
	var e tool.KVEntry
	var expires sql.NullInt64
	var updated int64
	err := rows.Scan(&e.Key, &e.Value, &e.Version, &expires, &updated)
	if expires.Valid {
		t := fromMicros(expires.Int64)
		e.ExpiresAt = &t
	}
	e.UpdatedAt = fromMicros(updated)
	return e, err
}

func (s *sqlStore) KVGet(ctx context.Context, ns, key string) (tool.KVEntry, error) {
	e, err := scanKV(s.read.QueryRowContext(ctx, s.q(`SELECT key, value, version, expires_at, updated_at FROM kv WHERE namespace = ? AND key = ? AND `+kvLive),
		ns, key, micros(s.now())))
	if errors.Is(err, sql.ErrNoRows) {
		return tool.KVEntry{}, fmt.Errorf("key %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return tool.KVEntry{}, fmt.Errorf("reading key: %w", err)
	}
	return e, nil
}

func (s *sqlStore) KVSet(ctx context.Context, p KVSetParams) (tool.KVEntry, error) {
	ns, key, value := p.Namespace, p.Key, p.Value
	now := s.now().UTC().Truncate(time.Microsecond)
	var expires any
	e := tool.KVEntry{Key: key, Value: value, UpdatedAt: now}
	if p.TTL > 0 {
		t := now.Add(p.TTL)
		expires, e.ExpiresAt = micros(t), &t
	}
	if value == nil {
		value = []byte{}
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var version int64
		var exp sql.NullInt64
		err := tx.QueryRowContext(ctx, s.q(`SELECT version, expires_at FROM kv WHERE namespace = ? AND key = ?`), ns, key).Scan(&version, &exp)
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		live := exists && (!exp.Valid || exp.Int64 > micros(now))
		current := int64(0)
		if live {
			current = version
		}
		if p.IfVersion != nil && *p.IfVersion != current {
			return fmt.Errorf("key %q is at version %d, not %d: %w", key, current, *p.IfVersion, ErrConflict)
		}
		e.Version = current + 1
		if exists {
			_, err = tx.ExecContext(ctx, s.q(`UPDATE kv SET value = ?, version = ?, expires_at = ?, updated_at = ? WHERE namespace = ? AND key = ?`),
				value, e.Version, expires, micros(now), ns, key)
		} else {
			_, err = tx.ExecContext(ctx, s.q(`INSERT INTO kv (namespace, key, value, version, expires_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`),
				ns, key, value, e.Version, expires, micros(now))
		}
		return err
	})
	if err != nil {
		if errors.Is(err, ErrConflict) {
			return tool.KVEntry{}, err
		}
		return tool.KVEntry{}, fmt.Errorf("writing key: %w", err)
	}
	return e, nil
}

func (s *sqlStore) KVDelete(ctx context.Context, ns, key string) error {
	if _, err := s.write.ExecContext(ctx, s.q(`DELETE FROM kv WHERE namespace = ? AND key = ?`), ns, key); err != nil {
		return fmt.Errorf("deleting key: %w", err)
	}
	return nil
}

func (s *sqlStore) KVList(ctx context.Context, p ListParams) ([]tool.KVEntry, string, error) {
	out, next, err := prefixPage(ctx, s, `SELECT key, value, version, expires_at, updated_at FROM kv WHERE namespace = ? AND `+kvLive,
		[]any{p.Namespace, micros(s.now())}, "key", p.Prefix, p.Page,
		func(r *sql.Rows) (tool.KVEntry, error) { return scanKV(r) }, func(e tool.KVEntry) string { return e.Key })
	if err != nil {
		return nil, "", fmt.Errorf("listing keys: %w", err)
	}
	return out, next, nil
}

// prefixPage runs query (a SELECT … WHERE …) for the rows whose column
// starts with prefix, a page at a time in column order: the prefix matched
// by range, not LIKE (no escaping, and the index serves it), the cursor
// being the last row's column value.
func prefixPage[T any](ctx context.Context, s *sqlStore, query string, args []any, column, prefix string, p Page,
	scan func(*sql.Rows) (T, error), key func(T) string) ([]T, string, error) {
	limit := pageLimit(p)
	query += ` AND ` + column + ` >= ?`
	args = append(args, prefix)
	if end, ok := prefixEnd(prefix); ok {
		query += ` AND ` + column + ` < ?`
		args = append(args, end)
	}
	if p.Cursor != "" {
		query += ` AND ` + column + ` > ?`
		args = append(args, p.Cursor)
	}
	query += ` ORDER BY ` + column + ` LIMIT ?`
	args = append(args, limit+1)
	out, err := queryAll(ctx, s.read, s.q(query), args, scan)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = key(out[limit-1])
	}
	return out, next, nil
}

// prefixEnd returns the smallest string greater than every string with the
// prefix, if there is one.
func prefixEnd(prefix string) (string, bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

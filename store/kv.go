package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

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
	now := s.now().UTC().Truncate(time.Microsecond)
	e := tool.KVEntry{Key: p.Key, Value: p.Value, UpdatedAt: now}
	if p.TTL > 0 {
		t := now.Add(p.TTL)
		e.ExpiresAt = &t
	}
	var err error
	for range 3 {
		err = s.tx(ctx, func(tx *sql.Tx) error { return s.kvSetTx(ctx, tx, p, &e) })
		// Another writer created the key between our read and our insert
		// (PostgreSQL): a conditional write conflicts, a plain one reads
		// again.
		if !errors.Is(err, errKVCreated) {
			break
		}
		if p.IfVersion != nil {
			err = fmt.Errorf("key %q was created by another writer: %w", p.Key, ErrConflict)
			break
		}
	}
	if err != nil {
		if errors.Is(err, ErrConflict) {
			return tool.KVEntry{}, err
		}
		return tool.KVEntry{}, fmt.Errorf("writing key: %w", err)
	}
	return e, nil
}

// errKVCreated: a key absent when kvSetTx read it was there when it
// inserted.
var errKVCreated = errors.New("key created concurrently")

// kvSetTx writes e (its Version set here) in tx: the row is read, locked
// where write transactions run side by side, and updated; or inserted if
// absent, errKVCreated if it appeared meanwhile.
func (s *sqlStore) kvSetTx(ctx context.Context, tx *sql.Tx, p KVSetParams, e *tool.KVEntry) error {
	now := micros(e.UpdatedAt)
	var expires any
	if e.ExpiresAt != nil {
		expires = micros(*e.ExpiresAt)
	}
	value := p.Value
	if value == nil {
		value = []byte{}
	}
	query := `SELECT version, expires_at FROM kv WHERE namespace = ? AND key = ?`
	if s.dialect.RowLocks {
		query += ` FOR UPDATE`
	}
	var version int64
	var exp sql.NullInt64
	err := tx.QueryRowContext(ctx, s.q(query), p.Namespace, p.Key).Scan(&version, &exp)
	exists := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	current := int64(0)
	if exists && (!exp.Valid || exp.Int64 > now) {
		current = version
	}
	if p.IfVersion != nil && *p.IfVersion != current {
		return fmt.Errorf("key %q is at version %d, not %d: %w", p.Key, current, *p.IfVersion, ErrConflict)
	}
	e.Version = current + 1
	if exists {
		_, err = tx.ExecContext(ctx, s.q(`UPDATE kv SET value = ?, version = ?, expires_at = ?, updated_at = ? WHERE namespace = ? AND key = ?`),
			value, e.Version, expires, now, p.Namespace, p.Key)
		return err
	}
	res, err := tx.ExecContext(ctx, s.q(`INSERT INTO kv (namespace, key, value, version, expires_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (namespace, key) DO NOTHING`),
		p.Namespace, p.Key, value, e.Version, expires, now)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errKVCreated
	}
	return nil
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
	end, ok := prefixEnd(prefix)
	if s.dialect.UTF8Text {
		end, ok = prefixEndUTF8(prefix)
	}
	if ok {
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

// prefixEndUTF8 is prefixEnd among valid UTF-8 strings, for a database that
// holds nothing else: the prefix with its last rune incremented (skipping
// the surrogates), which is valid UTF-8 where prefixEnd's byte increment
// may not be. In UTF-8, byte order is code point order, so the bound is as
// tight. An invalid prefix is returned as is, for the database to refuse.
func prefixEndUTF8(prefix string) (string, bool) {
	if !utf8.ValidString(prefix) {
		return prefixEnd(prefix)
	}
	runes := []rune(prefix)
	for i := len(runes) - 1; i >= 0; i-- {
		switch r := runes[i]; {
		case r == utf8.MaxRune:
			continue
		case r == 0xd7ff: // the last rune before the surrogates
			runes[i] = 0xe000
		default:
			runes[i] = r + 1
		}
		return string(runes[:i+1]), true
	}
	return "", false
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// FileMeta describes a stored blob; the bytes live outside the database.
type FileMeta struct {
	Name        string    `json:"name"`
	Size        int64     `json:"size"`
	ContentType string    `json:"contentType"`
	SHA256      string    `json:"sha256"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// Files is the part of a Store that keeps file metadata, by namespace.
type Files interface {
	PutFileMeta(ctx context.Context, ns string, m FileMeta) error
	FileMeta(ctx context.Context, ns, name string) (FileMeta, error)
	DeleteFileMeta(ctx context.Context, ns, name string) error
	ListFileMeta(ctx context.Context, ns, prefix string, p Page) ([]FileMeta, string, error)
}

func (s *sqlStore) PutFileMeta(ctx context.Context, ns string, m FileMeta) error {
	if m.UpdatedAt.IsZero() {
		m.UpdatedAt = s.now()
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM files WHERE namespace = ? AND name = ?`), ns, m.Name); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO files (namespace, name, size, content_type, sha256, updated_at) VALUES (?, ?, ?, ?, ?, ?)`),
			ns, m.Name, m.Size, m.ContentType, m.SHA256, micros(m.UpdatedAt))
		return err
	})
}

func scanFileMeta(r interface{ Scan(...any) error }) (FileMeta, error) {
	var m FileMeta
	var at int64
	err := r.Scan(&m.Name, &m.Size, &m.ContentType, &m.SHA256, &at)
	m.UpdatedAt = fromMicros(at)
	return m, err
}

func (s *sqlStore) FileMeta(ctx context.Context, ns, name string) (FileMeta, error) {
	m, err := scanFileMeta(s.read.QueryRowContext(ctx, s.q(`SELECT name, size, content_type, sha256, updated_at FROM files WHERE namespace = ? AND name = ?`), ns, name))
	if errors.Is(err, sql.ErrNoRows) {
		return FileMeta{}, fmt.Errorf("file %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return FileMeta{}, fmt.Errorf("reading file metadata: %w", err)
	}
	return m, nil
}

func (s *sqlStore) DeleteFileMeta(ctx context.Context, ns, name string) error {
	_, err := s.write.ExecContext(ctx, s.q(`DELETE FROM files WHERE namespace = ? AND name = ?`), ns, name)
	return err
}

func (s *sqlStore) ListFileMeta(ctx context.Context, ns, prefix string, p Page) ([]FileMeta, string, error) {
	out, next, err := prefixPage(ctx, s, `SELECT name, size, content_type, sha256, updated_at FROM files WHERE namespace = ?`,
		[]any{ns}, "name", prefix, p, func(r *sql.Rows) (FileMeta, error) { return scanFileMeta(r) }, func(m FileMeta) string { return m.Name })
	if err != nil {
		return nil, "", fmt.Errorf("listing files: %w", err)
	}
	return out, next, nil
}

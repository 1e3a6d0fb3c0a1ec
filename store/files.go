package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentsdk/agentsdk/tool"
)

func (s *sqlStore) PutFileMeta(ctx context.Context, ns string, m tool.FileInfo) error {
	if m.UpdatedAt.IsZero() {
		m.UpdatedAt = s.now()
	}
	// One statement, so that two hosts putting one new file at once do not
	// both insert it.
	_, err := s.write.ExecContext(ctx, s.q(`INSERT INTO files (namespace, name, size, content_type, sha256, updated_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (namespace, name) DO UPDATE SET size = excluded.size, content_type = excluded.content_type, sha256 = excluded.sha256, updated_at = excluded.updated_at`),
		ns, m.Name, m.Size, m.ContentType, m.SHA256, micros(m.UpdatedAt))
	if err != nil {
		return fmt.Errorf("writing file metadata: %w", err)
	}
	return nil
}

func scanFileMeta(r interface{ Scan(...any) error }) (tool.FileInfo, error) {
	var m tool.FileInfo
	var at int64
	err := r.Scan(&m.Name, &m.Size, &m.ContentType, &m.SHA256, &at)
	m.UpdatedAt = fromMicros(at)
	return m, err
}

func (s *sqlStore) FileMeta(ctx context.Context, ns, name string) (tool.FileInfo, error) {
	m, err := scanFileMeta(s.read.QueryRowContext(ctx, s.q(`SELECT name, size, content_type, sha256, updated_at FROM files WHERE namespace = ? AND name = ?`), ns, name))
	if errors.Is(err, sql.ErrNoRows) {
		return tool.FileInfo{}, fmt.Errorf("file %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return tool.FileInfo{}, fmt.Errorf("reading file metadata: %w", err)
	}
	return m, nil
}

func (s *sqlStore) DeleteFileMeta(ctx context.Context, ns, name string) error {
	_, err := s.write.ExecContext(ctx, s.q(`DELETE FROM files WHERE namespace = ? AND name = ?`), ns, name)
	return err
}

func (s *sqlStore) ListFileMeta(ctx context.Context, p ListParams) ([]tool.FileInfo, string, error) {
	out, next, err := prefixPage(ctx, s, `SELECT name, size, content_type, sha256, updated_at FROM files WHERE namespace = ?`,
		[]any{p.Namespace}, "name", p.Prefix, p.Page,
		func(r *sql.Rows) (tool.FileInfo, error) { return scanFileMeta(r) }, func(m tool.FileInfo) string { return m.Name })
	if err != nil {
		return nil, "", fmt.Errorf("listing files: %w", err)
	}
	return out, next, nil
}

package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// migration is one version of a dialect's schema.
type migration struct {
	version int
	name    string // its file, for errors
	body    string
}

// readMigrations reads a dialect's migrations in version order: files
// named NNN_what.sql, numbered 1, 2, 3… without gaps.
func readMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, name := range names {
		prefix, _, ok := strings.Cut(name, "_")
		version, err := strconv.Atoi(prefix)
		if !ok || err != nil || version < 1 {
			return nil, fmt.Errorf("migration %s: not named NNN_what.sql", name)
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: version, name: name, body: string(body)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: version %d, want %d", m.name, m.version, i+1)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no migrations")
	}
	return out, nil
}

// migrate brings the schema up to the dialect's last version: it refuses a
// schema a newer binary made, then applies each missing migration in its
// own transaction with its row in schema_migrations.
func (s *sqlStore) migrate(ctx context.Context) error {
	migrations, err := readMigrations(s.dialect.Migrations)
	if err != nil {
		return fmt.Errorf("migrating store: %w", err)
	}
	if _, err := s.write.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)`); err != nil {
		return fmt.Errorf("migrating store: %w", err)
	}
	var current int
	if err := s.write.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("migrating store: %w", err)
	}
	if latest := migrations[len(migrations)-1].version; current > latest {
		return fmt.Errorf("opening store: %w: the database is at version %d, this binary knows versions up to %d "+
			"(a newer agent-sdk migrated it); run that newer version, or open another database", ErrSchemaTooNew, current, latest)
	}
	for _, m := range migrations {
		if m.version <= current {
			continue
		}
		if err := s.tx(ctx, func(tx *sql.Tx) error { return s.apply(ctx, tx, m) }); err != nil {
			return fmt.Errorf("migrating store to version %d: %w", m.version, err)
		}
	}
	return nil
}

// apply runs a migration and records its version, unless another process
// did so since migrate looked (SQLite's write transactions serialise
// processes; on PostgreSQL the driver's lock does).
func (s *sqlStore) apply(ctx context.Context, tx *sql.Tx, m migration) error {
	var n int
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`), m.version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	for stmt := range strings.SplitSeq(m.body, ";\n") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
	}
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO schema_migrations (version) VALUES (?)`), m.version)
	return err
}

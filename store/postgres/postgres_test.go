package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/pgtest"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/postgres"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/store/storetest"
)

var ctx = context.Background()

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := postgres.Open(ctx, pgtest.Schema(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// testBundle is a fresh schema with the store's migrations applied, and a
// plain connection to it to look at what the store did.
type testBundle struct {
	url  string
	conn *pgx.Conn
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	url := pgtest.Schema(t)
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	return &testBundle{url: url, conn: connect(t, url)}
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}

func versions(t *testing.T, conn *pgx.Conn) []int {
	t.Helper()
	rows, _ := conn.Query(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// Hosts starting together on a fresh schema all open it. The migrations
// ran once: a second run of one fails on its CREATE TABLE, and so would
// that host's Open. The lock is free afterwards.
func TestOpenTogether(t *testing.T) {
	t.Parallel()
	url := pgtest.Schema(t)
	const hosts = 8
	var ready, done sync.WaitGroup
	ready.Add(1)
	errs := make([]error, hosts)
	for i := range hosts {
		done.Go(func() {
			ready.Wait()
			s, err := postgres.Open(ctx, url)
			if err == nil {
				_, err = s.CreateSession(ctx, api.Session{ID: fmt.Sprint(i), Channel: "http", Mode: api.ModeLocal})
				s.Close()
			}
			errs[i] = err
		})
	}
	ready.Done()
	done.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("host %d: %v", i, err)
		}
	}
	conn := connect(t, url)
	if got := versions(t, conn); len(got) != migrationCount(t) || got[len(got)-1] != len(got) {
		t.Errorf("schema_migrations holds %v, want 1…%d", got, migrationCount(t))
	}
	var sessions int
	if err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM sessions`).Scan(&sessions); err != nil || sessions != hosts {
		t.Errorf("%d sessions, %v; want %d", sessions, err, hosts)
	}
	var free bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+postgres.LockKey+`)`).Scan(&free); err != nil || !free {
		t.Errorf("the migration lock is still held: %v, %v", free, err)
	}
}

// migrationCount is how many migrations this binary has.
func migrationCount(t *testing.T) int {
	t.Helper()
	names, err := fs.Glob(postgres.Migrations, "migrations/*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("migrations: %v, %v", names, err)
	}
	return len(names)
}

// A binary meets a schema that a newer one migrated further: it refuses to
// open it, naming both versions, and changes nothing.
func TestSchemaTooNew(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	last := migrationCount(t)
	if _, err := tb.conn.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, last+1); err != nil {
		t.Fatal(err)
	}
	_, err := postgres.Open(ctx, tb.url)
	if !errors.Is(err, store.ErrSchemaTooNew) || !strings.Contains(err.Error(), fmt.Sprintf("version %d", last+1)) || !strings.Contains(err.Error(), fmt.Sprintf("up to %d", last)) {
		t.Fatalf("Open = %v; want ErrSchemaTooNew naming versions %d and %d", err, last+1, last)
	}
	if got := versions(t, tb.conn); len(got) != last+1 {
		t.Errorf("schema_migrations holds %v", got)
	}
}

// column is a column as both databases describe it.
type column struct {
	table, name, typ string
	notNull, key     bool
}

// pgOnly are the tables and columns that PostgreSQL's schema has and
// SQLite's has not: the file contents of migration 005 (store.Blobs).
// SQLite's hosts keep file contents on their own disk.
var pgOnly = map[string]bool{"file_chunks": true, "files.generation": true}

// The drivers' migrations make the same tables and columns, nullable and
// keyed alike, each in its database's types (BIGINT times, not INTEGER's
// 32 bits), but for pgOnly; and in PostgreSQL KV keys and file names
// compare as bytes. River's tables are River's own, made by its migrations
// for each database.
func TestSchemaMatchesSQLite(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	rows, _ := tb.conn.Query(ctx, `
		SELECT c.table_name, c.column_name, c.data_type, c.is_nullable = 'NO',
			EXISTS (SELECT FROM information_schema.key_column_usage k
				JOIN information_schema.table_constraints tc USING (constraint_schema, constraint_name)
				WHERE tc.constraint_type = 'PRIMARY KEY' AND k.table_schema = c.table_schema
					AND k.table_name = c.table_name AND k.column_name = c.column_name),
			COALESCE(c.collation_name, '')
		FROM information_schema.columns c WHERE c.table_schema = current_schema() ORDER BY 1, 2`)
	var pg []column
	var c column
	var collation string
	collated := map[string]string{}
	if _, err := pgx.ForEachRow(rows, []any{&c.table, &c.name, &c.typ, &c.notNull, &c.key, &collation}, func() error {
		if !pgOnly[c.table] && !pgOnly[c.table+"."+c.name] && !strings.HasPrefix(c.table, "river_") {
			pg = append(pg, c)
		}
		if collation != "" {
			collated[c.table+"."+c.name] = collation
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(t.TempDir(), "agent.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lite, err := db.QueryContext(ctx, `SELECT m.name, p.name, p.type, p."notnull", p.pk > 0
		FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table'
			AND m.name NOT LIKE 'river\_%' ESCAPE '\' AND m.name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	// SQLite's declared types, as PostgreSQL names the ones its schema uses.
	types := map[string]string{"TEXT": "text", "BIGINT": "bigint", "BLOB": "bytea", "INTEGER": "integer",
		"DOUBLE PRECISION": "double precision"}
	var want []column
	for lite.Next() {
		var c column
		if err := lite.Scan(&c.table, &c.name, &c.typ, &c.notNull, &c.key); err != nil {
			t.Fatal(err)
		}
		c.typ = types[c.typ]
		c.notNull = c.notNull || c.key // PostgreSQL's keys are NOT NULL
		want = append(want, c)
	}
	if err := lite.Err(); err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("read no columns from SQLite")
	}
	if !slices.Equal(pg, want) {
		t.Errorf("PostgreSQL's schema differs from SQLite's:\npostgres: %v\nsqlite:   %v", pg, want)
	}
	for _, col := range []string{"kv.key", "files.name", "file_chunks.name"} {
		if collated[col] != "C" {
			t.Errorf("%s has collation %q, want C", col, collated[col])
		}
	}
	if len(collated) != 3 {
		t.Errorf("collated columns: %v", collated)
	}
}

// Package postgres opens the store in a PostgreSQL database, so that
// several hosts can serve one agent: the same portable SQL as store/sqlite
// ([store.New]), reached through database/sql over jackc/pgx v5's stdlib
// driver, with this package's own migrations.
//
// The schema has the tables and columns of store/sqlite's, version for
// version, in PostgreSQL's types: BIGINT microseconds for times, BYTEA for
// values, and KV keys and file names in byte order (COLLATE "C"), so that
// listings come out as they do on SQLite whatever the database's collation.
// One version more keeps file contents too, in chunks (the store implements
// [store.Blobs]), so that a file put through one host is read through any
// other; SQLite's hosts keep them on their own disk.
//
// It lives in the connection's current schema (the first of search_path;
// it must exist), so one database can hold several agents, each in a
// schema of its own.
//
// [Open] migrates the schema under a session-level advisory lock, so that
// hosts starting together apply each migration once, and refuses a schema
// that a newer binary migrated further ([store.ErrSchemaTooNew]).
//
// The store is a [store.Notifier]: hosts sharing the schema tell each other
// which sessions they appended to with NOTIFY, on a channel of the
// schema's own, each listening on one connection of its pool.
//
// Each store keeps a pool of up to 10 connections, all kept while idle for
// up to 5 minutes, none older than an hour.
package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"

	"github.com/agentsdk/agentsdk/store"
)

// The pool each store keeps. A host's statements are short transactions
// (an append is four round trips, well under a millisecond on a LAN), so a
// few connections serve many turns at once: ten a host leaves room for
// several hosts, and River's connections, under PostgreSQL's default
// max_connections of 100.
const (
	// maxConns is the most connections a store opens; more callers wait.
	maxConns = 10
	// maxIdleConns stay open while idle: all of them, so that a burst
	// does not pay a connection's setup (a few ms, more with TLS).
	maxIdleConns = maxConns
	// connMaxIdleTime closes a connection idle this long, giving back
	// what a burst took.
	connMaxIdleTime = 5 * time.Minute
	// connMaxLifetime closes a connection this old, so that after a
	// failover or a change of the server's settings every connection is
	// new within the hour.
	connMaxLifetime = time.Hour
)

//go:embed migrations/*.sql
var migrations embed.FS

// dialect is what the portable SQL needs to know of PostgreSQL.
var dialect = store.Dialect{
	Name:       "postgres",
	Numbered:   true,
	IsConflict: isConflict,
	Migrations: mustSub(migrations, "migrations"),
	RowLocks:   true, // READ COMMITTED write transactions run side by side
	UTF8Text:   true,
	// File contents in file_chunks, so that every host reads them.
	FileContents: true,
	// River's database/sql driver, so that its jobs are inserted in the
	// store's own transactions (*sql.Tx, as on SQLite: one code path).
	River: func(db *sql.DB) riverdriver.Driver[*sql.Tx] { return riverdatabasesql.New(db) },
}

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}

// Open opens the store in the PostgreSQL database at url (a postgres://
// URL or a key=value connection string, as pgx reads them; search_path in
// it selects the schema), migrating its schema first.
func Open(ctx context.Context, url string) (store.Store, error) {
	config, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("opening store: %w", err)
	}
	if name, ok := config.RuntimeParams["schema"]; ok {
		return nil, fmt.Errorf("opening store: the URL's schema=%s is not a PostgreSQL setting: name the schema with search_path=%s (create it first with: CREATE SCHEMA %s;)",
			name, name, pgx.Identifier{name}.Sanitize())
	}
	// database/sql over pgx's stdlib driver, not pgx natively: the store's
	// portable SQL then serves SQLite and PostgreSQL alike, proved once by
	// one conformance suite. BenchmarkAppend measured what that costs on
	// the hottest statement, an Append of one event (2 cores, the server on
	// loopback). The round trips are the same four; database/sql adds 24
	// allocations (45 against 21) and a goroutine per transaction. With
	// synchronous_commit off, one writer: 360 µs an append against pgx's
	// 283 µs, 260 µs of client CPU against 180 µs. With it on (the
	// default), 585 µs against 507 µs, within the disk's noise; with eight
	// writers the server is the limit and the two are level (257 µs
	// against 255 µs). Beside a model's seconds that is nothing; should an
	// append ever matter, its transaction alone can move to pgx
	// (sql.Conn.Raw reaches the *pgx.Conn).
	//
	// database/sql's own pool, not a pgxpool under it
	// (stdlib.OpenDBFromPool, which River could share): that measured no
	// faster, with 57 allocations an append.
	db := stdlib.OpenDB(*config)
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxIdleConns)
	db.SetConnMaxIdleTime(connMaxIdleTime)
	db.SetConnMaxLifetime(connMaxLifetime)
	s, err := migrateLocked(ctx, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	n, err := newNotifier(ctx, db)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("opening store: %w", err)
	}
	return &pgStore{blobStore: s.(blobStore), notifier: n}, nil
}

// lockKey names the migration lock: one per schema, so that agents in
// other schemas of the database do not wait for each other.
const lockKey = `hashtextextended('agentsdk/store/postgres migrations:' || COALESCE(current_schema(), ''), 0)`

// migrateLocked makes the store, its migrations applied while this process
// holds the schema's advisory lock on a connection of its own. A process
// that dies holding it releases it with its connection.
func migrateLocked(ctx context.Context, db *sql.DB) (store.Store, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening store: %w", err)
	}
	defer conn.Close()
	if err := checkSchema(ctx, conn); err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(`+lockKey+`)`); err != nil {
		return nil, fmt.Errorf("opening store: taking the migration lock: %w", err)
	}
	s, err := store.New(ctx, db, db, dialect)
	// Unlock even when ctx is done; a connection that cannot is closed,
	// which unlocks too.
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, uerr := conn.ExecContext(uctx, `SELECT pg_advisory_unlock(`+lockKey+`)`); uerr != nil {
		conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	return s, err
}

// checkSchema says how to create the schema a URL's search_path names
// when none of its schemas exists: the migrations would fail with "no
// schema has been selected to create in".
func checkSchema(ctx context.Context, conn *sql.Conn) error {
	var (
		current sql.NullString
		path    string
		db      string
	)
	if err := conn.QueryRowContext(ctx, `SELECT current_schema(), current_setting('search_path'), current_database()`).Scan(&current, &path, &db); err != nil {
		return fmt.Errorf("opening store: reading the schema: %w", err)
	}
	if current.Valid {
		return nil
	}
	name := firstSchema(path)
	return fmt.Errorf("opening store: the schema of the URL's search_path (%s) does not exist in database %s (or this user may not use it): create it with: CREATE SCHEMA %s; (or leave search_path out of the URL to use public)",
		path, db, pgx.Identifier{name}.Sanitize())
}

// firstSchema returns the first schema a search_path names, "$user" aside.
func firstSchema(path string) string {
	for _, s := range strings.Split(path, ",") {
		s = strings.TrimSpace(s)
		if s == "" || s == `"$user"` || s == "$user" {
			continue
		}
		if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
			s = strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
		}
		return s
	}
	return "agent"
}

// isConflict reports a unique_violation.
func isConflict(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

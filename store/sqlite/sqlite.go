// Package sqlite opens the embedded SQLite store (modernc.org/sqlite, pure
// Go): WAL, a busy timeout, foreign keys on, migrations applied on open.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentsdk/agentsdk/store"
)

// migrations is the schema. It is the schema every agent.db has had: change
// it only by adding a version (with its twin in store/postgres).
//
//go:embed migrations/*.sql
var migrations embed.FS

// dialect is what the portable SQL needs to know of SQLite.
var dialect = store.Dialect{
	Name:       "sqlite",
	IsConflict: isConflict,
	Migrations: mustSub(migrations, "migrations"),
	// River's SQLite driver on the one write connection, so that a job is
	// inserted in the transaction of the state it watches.
	River: func(db *sql.DB) riverdriver.Driver[*sql.Tx] { return riversqlite.New(db) },
}

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}

// Open opens (creating if need be) the store in the SQLite file at path.
func Open(ctx context.Context, path string) (store.Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("opening store: %w", err)
	}
	// busy_timeout comes first, so that the pragmas after it wait for a
	// lock rather than fail. WAL is a property of the file, set once by the
	// writer; readers only need the timeout.
	dsn := func(txlock string, pragmas ...string) string {
		v := url.Values{}
		for _, p := range append([]string{"busy_timeout(10000)", "foreign_keys(1)"}, pragmas...) {
			v.Add("_pragma", p)
		}
		v.Set("_txlock", txlock)
		return "file:" + uriPath.Replace(path) + "?" + v.Encode()
	}
	write, err := sql.Open("sqlite", dsn("immediate", "journal_mode(WAL)", "synchronous(NORMAL)"))
	if err != nil {
		return nil, fmt.Errorf("opening store: %w", err)
	}
	// One writer at a time is all SQLite allows; queuing in the pool is
	// cheaper than retrying on SQLITE_BUSY.
	write.SetMaxOpenConns(1)
	// Make the file WAL before any reader opens it.
	if err := write.PingContext(ctx); err != nil {
		write.Close()
		return nil, fmt.Errorf("opening store: %w", err)
	}
	read, err := sql.Open("sqlite", dsn("deferred"))
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("opening store: %w", err)
	}
	read.SetMaxOpenConns(4)
	// Keep them all: database/sql's default keeps 2 idle, so that under
	// more than 2 concurrent reads (an API key is read on every request
	// that carries one) it closed connections and opened new ones — a
	// file to open, the schema to read, every prepared statement to parse
	// again.
	read.SetMaxIdleConns(4)
	s, err := store.New(ctx, write, read, dialect)
	if err != nil {
		write.Close()
		read.Close()
		return nil, err
	}
	return &liteStore{sqlStore: s.(sqlStore), poller: poller{db: read}}, nil
}

// uriPath escapes what a SQLite URI would read as syntax in a file name:
// "?" would start the query (the pragmas), "#" a fragment, "%" an escape.
var uriPath = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")

func isConflict(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
	}
	return false
}

// Package pgtest finds the PostgreSQL that tests run against and gives each
// test a schema of its own.
//
// The database is TEST_DATABASE_URL, or [URLDefault] (the machine's local
// server) when that is unset. When no PostgreSQL answers there, the tests
// that need it skip, saying once how to enable them; under CI=true they fail
// instead, so that a CI run cannot pass without them.
package pgtest

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// URLDefault is the database when TEST_DATABASE_URL is unset.
const URLDefault = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// connectTimeout bounds the probe, so that a machine without PostgreSQL
// skips the tests at once.
const connectTimeout = 3 * time.Second

var probe struct {
	once sync.Once
	url  string
	err  error
}

// URL returns the test database's URL. If no PostgreSQL answers there it
// skips t, or fails it when CI=true.
func URL(t testing.TB) string {
	t.Helper()
	probe.once.Do(func() {
		probe.url = os.Getenv("TEST_DATABASE_URL")
		if probe.url == "" {
			probe.url = URLDefault
		}
		ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
		defer cancel()
		conn, err := pgx.Connect(ctx, probe.url)
		if err != nil {
			probe.err = err
			if os.Getenv("CI") != "true" {
				// One loud line for the whole run: go test hides skip
				// messages unless -v.
				fmt.Fprintf(os.Stderr, "pgtest: SKIPPING the PostgreSQL tests: no PostgreSQL at %s (%v); "+
					"set TEST_DATABASE_URL=postgres://user@host:port/db?sslmode=disable to run them\n", redact(probe.url), err)
			}
			return
		}
		conn.Close(ctx)
	})
	if probe.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no PostgreSQL at %s (%v), and CI=true: set TEST_DATABASE_URL to a PostgreSQL the tests can use", redact(probe.url), probe.err)
		}
		t.Skipf("no PostgreSQL at %s; set TEST_DATABASE_URL=postgres://… to run this test", redact(probe.url))
	}
	return probe.url
}

// Schema creates a schema with a random name in the test database, drops it
// (with all it holds) when t ends, and returns a URL whose connections use
// it: the schema is their search_path. It skips t as [URL] does.
func Schema(t testing.TB) string {
	t.Helper()
	base := URL(t)
	name := "test_" + strings.ToLower(rand.Text())
	exec(t, base, `CREATE SCHEMA `+name)
	t.Cleanup(func() { exec(t, base, `DROP SCHEMA `+name+` CASCADE`) })
	u, err := WithSearchPath(base, name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// WithSearchPath returns the database URL (or key=value connection string)
// with search_path set to schema: pgx sends it as a run-time parameter when
// it connects.
func WithSearchPath(dbURL, schema string) (string, error) {
	if !strings.HasPrefix(dbURL, "postgres://") && !strings.HasPrefix(dbURL, "postgresql://") {
		return dbURL + " search_path=" + schema, nil
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", fmt.Errorf("parsing the database URL: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// exec runs one statement on a connection of its own.
func exec(t testing.TB, dbURL, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connecting to the test database: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// redact hides a password in a URL.
func redact(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil || u.User == nil {
		return dbURL
	}
	return u.Redacted()
}

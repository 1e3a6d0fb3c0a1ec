package postgres

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/pgtest"
	"github.com/agentsdk/agentsdk/store"
)

var syncCommit = flag.String("synccommit", "off", "synchronous_commit for BenchmarkAppend's connections")

// BenchmarkAppend measures the store's hottest write, an Append of one
// event (a transaction of UPDATE sessions … RETURNING and INSERT INTO
// events: four round trips with BEGIN and COMMIT), on each way of reaching
// PostgreSQL through pgx:
//
//   - sql: the store as Open makes it, database/sql over pgx's stdlib
//     driver with database/sql's own pool;
//   - sql-on-pgxpool: the same store over stdlib.OpenDBFromPool, the way
//     to share one pgxpool with River;
//   - pgx: the same statements in a transaction on a pgxpool, natively.
//
// serial is one writer; parallel is eight, each appending to a session of
// its own (a host running several turns). The benchmark's connections set
// synchronous_commit=off (-synccommit=on to see the default): the WAL
// flush at each commit (hundreds of µs on a virtual disk, and noisy) is
// the same whatever the client, and hides it. Besides sec/op, cpu-µs/op is
// this process's CPU time (user and system) per append: what the client
// library costs the host. To compare:
//
//	go test ./store/postgres -run '^$' -bench Append -benchmem -count 6 | tee /tmp/append.txt
//	go run golang.org/x/perf/cmd/benchstat@latest /tmp/append.txt
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	event := api.Event{Kind: api.KindMessage, Data: []byte(`{"role":"assistant","text":"Done: the report is in reports/weekly.md."}`)}
	const writers = 8

	// setup makes a schema with a session per writer and returns its URL.
	setup := func(b *testing.B) string {
		url := pgtest.Schema(b)
		if strings.Contains(url, "://") {
			url += "&synchronous_commit=" + *syncCommit // Schema's URL has a query: search_path
		} else {
			url += " synchronous_commit=" + *syncCommit
		}
		s, err := Open(ctx, url)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		for i := range writers {
			if _, err := s.CreateSession(ctx, api.Session{ID: fmt.Sprint(i), Channel: "http", Mode: api.ModeLocal}); err != nil {
				b.Fatal(err)
			}
		}
		return url
	}
	newPool := func(b *testing.B, url string) *pgxpool.Pool {
		config, err := pgxpool.ParseConfig(url)
		if err != nil {
			b.Fatal(err)
		}
		config.MaxConns = maxConns
		pool, err := pgxpool.NewWithConfig(ctx, config)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pool.Close)
		return pool
	}
	storeAppend := func(s store.Store) func(string) error {
		return func(session string) error { _, err := s.Append(ctx, session, event); return err }
	}
	ways := []struct {
		name string
		open func(b *testing.B, url string) func(session string) error
	}{
		{"sql", func(b *testing.B, url string) func(string) error {
			s, err := Open(ctx, url)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return storeAppend(s)
		}},
		{"sql-on-pgxpool", func(b *testing.B, url string) func(string) error {
			db := stdlib.OpenDBFromPool(newPool(b, url))
			s, err := store.New(ctx, db, db, dialect)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return storeAppend(s)
		}},
		{"pgx", func(b *testing.B, url string) func(string) error {
			pool := newPool(b, url)
			return func(session string) error { return appendNative(ctx, pool, session, event) }
		}},
	}
	for _, w := range ways {
		b.Run(w.name+"/serial", func(b *testing.B) {
			appendTo := w.open(b, setup(b))
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				if err := appendTo("0"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
		})
		b.Run(w.name+"/parallel", func(b *testing.B) {
			appendTo := w.open(b, setup(b))
			var next atomic.Int64
			b.SetParallelism(max(1, writers/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			defer func() { b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/op") }()
			b.RunParallel(func(pb *testing.PB) {
				session := fmt.Sprint(next.Add(1) % writers)
				for pb.Next() {
					if err := appendTo(session); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// appendNative is the store's Append of one event, on pgx without
// database/sql.
func appendNative(ctx context.Context, pool *pgxpool.Pool, sessionID string, e api.Event) error {
	now := time.Now().UTC().Truncate(time.Microsecond)
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var last int64
		if err := tx.QueryRow(ctx, `UPDATE sessions SET last_seq = last_seq + $1, updated_at = $2 WHERE id = $3 RETURNING last_seq`,
			1, now.UnixMicro(), sessionID).Scan(&last); err != nil {
			return err
		}
		e.SessionID, e.Seq, e.Time = sessionID, last, now
		_, err := tx.Exec(ctx, `INSERT INTO events (session_id, seq, turn_id, kind, data, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			sessionID, e.Seq, e.TurnID, string(e.Kind), string(e.Data), e.Time.UnixMicro())
		return err
	})
}

package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "agent.db"))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.(store.Jobs); !ok {
			t.Fatal("the SQLite store runs no jobs")
		}
		return s
	})
}

// Data survives closing and opening again, and migrations run once.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agent.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.CreateSession(ctx, api.Session{ID: "s", Channel: "http", Mode: api.ModeLocal})
	s.Append(ctx, "s", api.Event{Kind: api.KindMessage, Data: []byte(`{"text":"hi"}`)})
	s.Close()
	s, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.Events(ctx, "s", 0, 0)
	if err != nil || len(evs) != 1 || string(evs[0].Data) != `{"text":"hi"}` {
		t.Errorf("after reopening: %+v, %v", evs, err)
	}
}

// The typed records are stored as the untyped ones were: statuses as the
// same strings, an outcome as the JSON the host used to write. A database
// written before the api types keeps working, and one written now reads
// the same to an older host.
func TestOnDiskFormat(t *testing.T) {
	ctx := context.Background()
	s, path := openFile(t)
	s.CreateSession(ctx, api.Session{ID: "s", Channel: "http", Mode: api.ModeLocal})
	s.BeginTurn(ctx, store.BeginTurnParams{Turn: api.Turn{SessionID: "s", ID: "t1", Kind: api.TurnModel}, Lease: store.Lease{Holder: "h", TTL: time.Minute}})
	s.EndTurn(ctx, store.EndTurnParams{SessionID: "s", TurnID: "t1", Status: api.TurnStatusFailed, Reason: "boom"})
	s.CreateApproval(ctx, api.Approval{CallID: "c1", Tool: "promote", Input: json.RawMessage(`{}`), ExpiresAt: time.Now().Add(time.Hour)})
	s.ResolveApproval(ctx, store.ResolveApprovalParams{CallID: "c1", Approved: true, By: "p", Executor: store.Lease{Holder: "h", TTL: time.Minute}})
	s.FinishApproval(ctx, "c1", api.Outcome{ToolName: "promote", CallID: "c1", Result: json.RawMessage(`{"ok":true}`), DurationMs: 7})

	db := rawDB(t, path)
	var mode, kind, turnStatus, approvalStatus, outcome string
	if err := db.QueryRowContext(ctx, `SELECT s.mode, t.kind, t.status, a.status, a.outcome FROM sessions s, turns t, approvals a`).
		Scan(&mode, &kind, &turnStatus, &approvalStatus, &outcome); err != nil {
		t.Fatal(err)
	}
	const wantOutcome = `{"toolName":"promote","callId":"c1","isError":false,"result":{"ok":true},"durationMs":7}`
	if mode != "local" || kind != "model" || turnStatus != "failed" || approvalStatus != "approved" || outcome != wantOutcome {
		t.Errorf("stored %q %q %q %q %s", mode, kind, turnStatus, approvalStatus, outcome)
	}

	// An outcome written by an older host reads as an api.Outcome.
	if _, err := db.ExecContext(ctx, `UPDATE approvals SET outcome = ? WHERE call_id = 'c1'`,
		`{"toolName":"promote","callId":"c1","isError":true,"result":"denied by policy","durationMs":3}`); err != nil {
		t.Fatal(err)
	}
	a, err := s.Approval(ctx, "c1")
	if err != nil || a.Outcome == nil || !a.Outcome.IsError || string(a.Outcome.Result) != `"denied by policy"` || a.Outcome.DurationMs != 3 {
		t.Errorf("Approval = %+v (outcome %+v), %v", a, a.Outcome, err)
	}
}

// A file name holding what a URI reads as syntax opens that very file,
// with the pragmas applied (WAL leaves its -wal file beside the database).
func TestOpenPathWithURISyntax(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for i, name := range []string{"a#1", "a#2", "b?x=1", "c%41"} {
		path := filepath.Join(dir, name, "agent.db")
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.CreateSession(ctx, api.Session{ID: "s", Channel: "http", Mode: api.ModeLocal}); err != nil {
			t.Errorf("%s: a store opened earlier (%d) shares the file: %v", name, i, err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := os.Stat(path + "-wal"); err != nil {
			t.Errorf("%s: not in WAL mode: %v", name, err)
		}
	}
	for _, stray := range []string{filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "cA")} {
		if _, err := os.Stat(stray); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists: %v", stray, err)
		}
	}
}

// A binary meets a database that a newer one migrated further: it refuses
// to open it, naming both versions, and changes nothing.
func TestSchemaTooNew(t *testing.T) {
	ctx := context.Background()
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
	var last int
	if err := db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO schema_migrations (version) VALUES (?)`, last+1); err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.Open(ctx, path)
	if !errors.Is(err, store.ErrSchemaTooNew) || !strings.Contains(err.Error(), fmt.Sprintf("version %d", last+1)) || !strings.Contains(err.Error(), fmt.Sprintf("up to %d", last)) {
		t.Fatalf("Open = %v; want ErrSchemaTooNew naming versions %d and %d", err, last+1, last)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil || n != last+1 {
		t.Errorf("schema_migrations has %d rows, %v", n, err)
	}
}

// A job its host died in is left marked running; River's leader runs it
// again once store.RescueStuckJobsAfter has passed, not an hour later
// (River's default), so an approved call, a reminder or a schedule's tick
// does not wait that long after a crash.
func TestJobLeftRunningRunsAgain(t *testing.T) {
	ctx := context.Background()
	s, path := openFile(t)
	j := s.(store.Jobs)
	if err := j.Schedule(ctx, store.JobSpec{Kind: "test", Key: "stuck"}); err != nil {
		t.Fatal(err)
	}
	// What a host killed in the job's transaction leaves behind.
	db := rawDB(t, path)
	res, err := db.ExecContext(ctx, `UPDATE river_job SET state = 'running', attempt = 1,
		attempted_at = strftime('%Y-%m-%d %H:%M:%f', 'now', '-1 minute')`)
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("marking the job running: %d rows, %v", n, err)
	}
	ran := make(chan store.Job, 1)
	stop, err := j.RunJobs(ctx, store.RunJobsParams{Handlers: map[string]store.JobHandler{
		"test": func(ctx context.Context, tx store.Tx, job store.Job) error {
			select {
			case ran <- job:
			default:
			}
			return nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer stop(context.Background())
	start := time.Now()
	select {
	case job := <-ran:
		t.Logf("the job ran again %v after the worker started (attempt %d)", time.Since(start).Round(time.Millisecond), job.Attempt)
		if job.Key != "stuck" || job.Attempt < 2 {
			t.Errorf("ran %+v, want the stuck job's second attempt", job)
		}
	case <-time.After(2 * time.Minute): // a wait, not a timing
		t.Fatal("the job left running by a dead host was not run again within 2 minutes")
	}
}

// openFile opens a store in a file of the test's, closed at its end.
func openFile(t *testing.T) (store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// rawDB opens the store's file with database/sql, as another program
// would, closed at the test's end.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// The audit log, changed directly in the database file, fails
// verification naming the entry.
func TestAuditTampering(t *testing.T) {
	storetest.AuditTampering(t, func(t *testing.T) (store.Store, func(*testing.T, string)) {
		path := filepath.Join(t.TempDir(), "agent.db")
		s, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return s, func(t *testing.T, q string) {
			t.Helper()
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	})
}

// The cost of one append (one entry, its own transaction).
func BenchmarkAppendAudit(b *testing.B) {
	s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "agent.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rec := []api.AuditRecord{{Kind: api.AuditApprovalDecided, Principal: "bearer-token:alice", Subject: "tool_promote_1",
		Detail: []byte(`{"tool":"promote","status":"approved","via":"http"}`)}}
	for b.Loop() {
		if _, err := s.AppendAudit(context.Background(), store.AppendAuditParams{Records: rec}); err != nil {
			b.Fatal(err)
		}
	}
}

// What the audit entry adds to a decision: parking and deciding a call,
// with and without its entry in the decision's transaction.
func BenchmarkDecisionAudit(b *testing.B) {
	for _, audited := range []bool{false, true} {
		b.Run(map[bool]string{false: "without", true: "with"}[audited], func(b *testing.B) {
			ctx := context.Background()
			s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "agent.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			i := 0
			for b.Loop() {
				i++
				id := fmt.Sprintf("call%d", i)
				if _, err := s.CreateApproval(ctx, api.Approval{CallID: id, Tool: "promote", Input: json.RawMessage(`{}`), ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
					b.Fatal(err)
				}
				p := store.ResolveApprovalParams{CallID: id, By: "bearer-token:alice"}
				if audited {
					p.Audit.Records = []api.AuditRecord{{Kind: api.AuditApprovalDecided, Principal: "bearer-token:alice", Subject: id,
						Detail: []byte(`{"tool":"promote","status":"denied","via":"http"}`)}}
				}
				if _, _, err := s.ResolveApproval(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

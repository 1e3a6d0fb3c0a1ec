package postgres_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/pgtest"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/postgres"
	"github.com/agentsdk/agentsdk/store/storetest"
)

// The audit log, changed directly in the database, fails verification
// naming the entry.
func TestAuditTampering(t *testing.T) {
	storetest.AuditTampering(t, func(t *testing.T) (store.Store, func(*testing.T, string)) {
		url := pgtest.Schema(t)
		s, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		conn := connect(t, url)
		return s, func(t *testing.T, q string) {
			t.Helper()
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	})
}

// Two store handles on one database (two hosts) appending at once, alone
// and with decisions, make one chain without gaps.
func TestAuditConcurrentHandles(t *testing.T) {
	t.Parallel()
	url := pgtest.Schema(t)
	var handles [2]store.Store
	for i := range handles {
		s, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		handles[i] = s
	}
	const each = 100
	var wg sync.WaitGroup
	for h, s := range handles {
		for g := range 4 {
			wg.Go(func() {
				for i := range each / 4 {
					recs := []api.AuditRecord{{Kind: api.AuditSignIn, Principal: fmt.Sprintf("host%d", h), Subject: fmt.Sprintf("%d.%d", g, i)}}
					if i%5 == 0 { // now and then two entries in one append
						recs = append(recs, api.AuditRecord{Kind: api.AuditSignOut, Principal: fmt.Sprintf("host%d", h), Subject: fmt.Sprintf("%d.%d", g, i)})
					}
					if _, err := s.AppendAudit(ctx, store.AppendAuditParams{Records: recs}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	all, head := storetest.AuditLog(t, handles[1])
	rep, err := api.VerifyAudit(all, &api.AuditVerifyOptions{Head: &head})
	want := 2 * (each + each/5)
	if err != nil || rep.Entries != want || head.Seq != int64(want) {
		t.Fatalf("VerifyAudit = %+v, %v; want %d entries (head %+v)", rep, err, want, head)
	}
}

// The cost of one append (one entry, its own transaction), one handle.
func BenchmarkAppendAudit(b *testing.B) {
	s, err := postgres.Open(ctx, pgtest.Schema(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rec := []api.AuditRecord{{Kind: api.AuditApprovalDecided, Principal: "bearer-token:alice", Subject: "tool_promote_1",
		Detail: []byte(`{"tool":"promote","status":"approved","via":"http"}`)}}
	for b.Loop() {
		if _, err := s.AppendAudit(ctx, store.AppendAuditParams{Records: rec}); err != nil {
			b.Fatal(err)
		}
	}
}

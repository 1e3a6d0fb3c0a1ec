package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// AuditTampering checks that a SQL store's audit log, changed behind
// the store's back, fails [api.VerifyAudit] naming the entry: open
// returns a new empty store and a function that runs statements directly
// on its database, as someone with write access to it would.
func AuditTampering(t *testing.T, open func(t *testing.T) (store.Store, func(t *testing.T, sql string))) {
	tests := []struct {
		name    string
		sql     []string
		seq     int64
		problem api.AuditProblem
		message string
	}{
		{"ChangedPrincipal", []string{`UPDATE audit SET principal = 'bearer-token:someone-else' WHERE seq = 7`}, 7, api.AuditChanged, "entry 7 was changed: its hash is"},
		{"ChangedDetail", []string{`UPDATE audit SET detail = '{"via":"cli"}' WHERE seq = 3`}, 3, api.AuditChanged, "entry 3 was changed"},
		{"ChangedTime", []string{`UPDATE audit SET at = at + 1 WHERE seq = 1`}, 1, api.AuditChanged, "entry 1 was changed"},
		{"Removed", []string{`DELETE FROM audit WHERE seq = 8`}, 8, api.AuditMissing, "entry 8 is missing (7 is followed by 9)"},
		{"RemovedFirst", []string{`DELETE FROM audit WHERE seq = 1`}, 1, api.AuditMissing, "entry 1 is missing (the log begins at entry 2)"},
		{"RemovedLast", []string{`DELETE FROM audit WHERE seq = 10`}, 10, api.AuditMissing, "entry 10 is missing: the log's head is entry 10, its last entry is 9"},
		{"Reordered", []string{`UPDATE audit SET seq = -7 WHERE seq = 7`, `UPDATE audit SET seq = 7 WHERE seq = 8`, `UPDATE audit SET seq = 8 WHERE seq = -7`},
			7, api.AuditReordered, "entry 7 was reordered: it holds what was entry 8"},
		{"RehashedOne", []string{`UPDATE audit SET principal = 'x', hash = 'ab' WHERE seq = 4`}, 4, api.AuditChanged, "entry 4 was changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, exec := open(t)
			t.Cleanup(func() { s.Close() })
			for i := range 10 {
				if _, err := s.AppendAudit(ctx, store.AppendAuditParams{Records: []api.AuditRecord{
					record(api.AuditApprovalDecided, fmt.Sprintf("call%d", i+1), `{"via":"http"}`)}}); err != nil {
					t.Fatal(err)
				}
			}
			all, head := AuditLog(t, s)
			if _, err := api.VerifyAudit(all, &api.AuditVerifyOptions{Head: &head}); err != nil {
				t.Fatalf("before tampering: %v", err)
			}
			for _, q := range tt.sql {
				exec(t, q)
			}
			all, head = AuditLog(t, s)
			_, err := api.VerifyAudit(all, &api.AuditVerifyOptions{Head: &head})
			var b *api.AuditBreak
			if !errors.As(err, &b) || b.Seq != tt.seq || b.Problem != tt.problem || !contains(b.Message, tt.message) {
				t.Fatalf("VerifyAudit = %v (%+v), want entry %d %s: %q", err, b, tt.seq, tt.problem, tt.message)
			}
		})
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

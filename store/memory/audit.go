package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

func (m *memStore) AppendAudit(ctx context.Context, p store.AppendAuditParams) ([]api.AuditEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out, err := m.auditLocked(p)
	if err != nil {
		return nil, fmt.Errorf("appending to the audit log: %w", err)
	}
	m.audit = append(m.audit, out...)
	return cloneAudit(out), nil
}

// auditLocked makes p's records the entries that follow the log's last,
// without appending them.
func (m *memStore) auditLocked(p store.AppendAuditParams) ([]api.AuditEntry, error) {
	if len(p.Records) == 0 {
		return nil, nil
	}
	var head api.AuditHead
	if n := len(m.audit); n > 0 {
		head = api.AuditHead{Seq: m.audit[n-1].Seq, Hash: m.audit[n-1].Hash}
	}
	return store.AuditEntries(p, head, m.clock())
}

func (m *memStore) ListAudit(ctx context.Context, after int64, limit int) ([]api.AuditEntry, api.AuditHead, error) {
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var head api.AuditHead
	if n := len(m.audit); n > 0 {
		head = api.AuditHead{Seq: m.audit[n-1].Seq, Hash: m.audit[n-1].Hash}
	}
	i, _ := slices.BinarySearchFunc(m.audit, after+1, func(e api.AuditEntry, seq int64) int { return int(e.Seq - seq) })
	page := m.audit[i:]
	if len(page) > limit {
		page = page[:limit]
	}
	return cloneAudit(page), head, nil
}

func cloneAudit(in []api.AuditEntry) []api.AuditEntry {
	if len(in) == 0 {
		return nil
	}
	out := slices.Clone(in)
	for i := range out {
		out[i].Detail = slices.Clone(out[i].Detail)
	}
	return out
}

package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

func (m *memStore) CreateKey(ctx context.Context, p store.CreateKeyParams) error {
	k := p.Key
	if k.ID == "" || len(k.Hash) == 0 {
		return errors.New("creating key: empty id or hash")
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = m.now()
	}
	k = copyKey(k)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.keys[k.ID]; ok {
		return fmt.Errorf("creating key %s: %w", k.ID, store.ErrExists)
	}
	audit, err := m.auditLocked(p.Audit)
	if err != nil {
		return fmt.Errorf("creating key: %w", err)
	}
	m.keys[k.ID] = k
	m.audit = append(m.audit, audit...)
	return nil
}

func (m *memStore) Key(ctx context.Context, id string) (store.KeyRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[id]
	if !ok {
		return store.KeyRecord{}, fmt.Errorf("key %s: %w", id, store.ErrNotFound)
	}
	return copyKey(k), nil
}

func (m *memStore) ListKeys(ctx context.Context) ([]api.Key, error) {
	m.mu.Lock()
	out := make([]api.Key, 0, len(m.keys))
	for _, k := range m.keys {
		out = append(out, copyKey(k).Key)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b api.Key) int { return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID)) })
	return out, nil
}

func (m *memStore) RevokeKey(ctx context.Context, p store.RevokeKeyParams) (api.Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[p.ID]
	if !ok {
		return api.Key{}, fmt.Errorf("revoking key %s: %w", p.ID, store.ErrNotFound)
	}
	if k.RevokedAt == nil {
		t := micro(p.At)
		k.RevokedAt = &t
		if p.AuditFor != nil {
			audit, err := m.auditLocked(p.AuditFor(copyKey(k).Key))
			if err != nil {
				return api.Key{}, fmt.Errorf("revoking key %s: %w", p.ID, err)
			}
			m.audit = append(m.audit, audit...)
		}
		m.keys[p.ID] = k
	}
	return copyKey(k).Key, nil
}

func (m *memStore) TouchKey(ctx context.Context, id string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[id]
	if ok && (k.LastUsedAt == nil || k.LastUsedAt.Before(micro(at))) {
		t := micro(at)
		k.LastUsedAt = &t
		m.keys[id] = k
	}
	return nil
}

// copyKey returns k with its slices and times its own, and its times as
// the store keeps them.
func copyKey(k store.KeyRecord) store.KeyRecord {
	k.Roles = slices.Clone(k.Roles)
	if k.Roles == nil {
		k.Roles = []string{}
	}
	k.Hash = slices.Clone(k.Hash)
	k.CreatedAt = micro(k.CreatedAt)
	k.LastUsedAt, k.ExpiresAt, k.RevokedAt = microPtr(k.LastUsedAt), microPtr(k.ExpiresAt), microPtr(k.RevokedAt)
	return k
}

func microPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := micro(*t)
	return &v
}

package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// kvEntry is a key's value. An expired entry reads as absent (a write
// starts its versions again) but stays, as in SQL, until it is written or
// deleted.
type kvEntry struct {
	value     []byte
	version   int64
	expiresAt *time.Time
	updatedAt time.Time
}

// live reports whether the entry has not expired at now.
func (e *kvEntry) live(now time.Time) bool {
	return e.expiresAt == nil || e.expiresAt.UnixMicro() > now.UnixMicro()
}

func (e *kvEntry) record(key string) tool.KVEntry {
	return tool.KVEntry{Key: key, Value: slices.Clone(e.value), Version: e.version, ExpiresAt: clonePtr(e.expiresAt), UpdatedAt: e.updatedAt}
}

func (m *memStore) KVGet(ctx context.Context, ns, key string) (tool.KVEntry, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.kv[ns][key]
	if !ok || !e.live(now) {
		return tool.KVEntry{}, fmt.Errorf("key %q: %w", key, store.ErrNotFound)
	}
	return e.record(key), nil
}

func (m *memStore) KVSet(ctx context.Context, p store.KVSetParams) (tool.KVEntry, error) {
	now := m.clock()
	stored := &kvEntry{value: slices.Clone(p.Value), updatedAt: now}
	if stored.value == nil {
		stored.value = []byte{}
	}
	out := tool.KVEntry{Key: p.Key, Value: p.Value, UpdatedAt: now}
	if p.TTL > 0 {
		t := now.Add(p.TTL)
		kept := micro(t)
		out.ExpiresAt, stored.expiresAt = &t, &kept
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	current := int64(0)
	if e, ok := m.kv[p.Namespace][p.Key]; ok && e.live(now) {
		current = e.version
	}
	if p.IfVersion != nil && *p.IfVersion != current {
		return tool.KVEntry{}, fmt.Errorf("key %q is at version %d, not %d: %w", p.Key, current, *p.IfVersion, store.ErrConflict)
	}
	stored.version, out.Version = current+1, current+1
	if m.kv[p.Namespace] == nil {
		m.kv[p.Namespace] = map[string]*kvEntry{}
	}
	m.kv[p.Namespace][p.Key] = stored
	return out, nil
}

func (m *memStore) KVDelete(ctx context.Context, ns, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.kv[ns], key)
	return nil
}

func (m *memStore) KVList(ctx context.Context, p store.ListParams) ([]tool.KVEntry, string, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	entries := m.kv[p.Namespace]
	keys, next := prefixPage(entries, p, func(e *kvEntry) bool { return e.live(now) })
	var out []tool.KVEntry // nil when empty, as in SQL
	for _, k := range keys {
		out = append(out, entries[k].record(k))
	}
	return out, next, nil
}

func (m *memStore) PutFileMeta(ctx context.Context, ns string, f tool.FileInfo) error {
	if f.UpdatedAt.IsZero() {
		f.UpdatedAt = m.now()
	}
	f.UpdatedAt = micro(f.UpdatedAt)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files[ns] == nil {
		m.files[ns] = map[string]tool.FileInfo{}
	}
	m.files[ns][f.Name] = f
	return nil
}

func (m *memStore) FileMeta(ctx context.Context, ns, name string) (tool.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.files[ns][name]
	if !ok {
		return tool.FileInfo{}, fmt.Errorf("file %q: %w", name, store.ErrNotFound)
	}
	return f, nil
}

func (m *memStore) DeleteFileMeta(ctx context.Context, ns, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.files[ns], name)
	return nil
}

func (m *memStore) ListFileMeta(ctx context.Context, p store.ListParams) ([]tool.FileInfo, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	files := m.files[p.Namespace]
	names, next := prefixPage(files, p, func(tool.FileInfo) bool { return true })
	var out []tool.FileInfo // nil when empty, as in SQL
	for _, n := range names {
		out = append(out, files[n])
	}
	return out, next, nil
}

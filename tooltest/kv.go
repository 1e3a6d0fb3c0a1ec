package tooltest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// KV is call.Host.KV in memory, answering as a host's does: the same
// checks of keys and values, versions counting a key's writes from 1,
// expiry, CompareAndSet, and pages in key order with the previous page's
// last key as the cursor. The errors match tool.ErrKeyNotFound and
// tool.ErrVersionConflict.
type KV struct {
	now     func() time.Time
	mu      sync.Mutex
	entries map[string]kvEntry
}

type kvEntry struct {
	value     []byte
	version   int64
	expiresAt *time.Time
	updatedAt time.Time
}

var _ tool.KV = (*KV)(nil)

func newKV(now func() time.Time) *KV { return &KV{now: now, entries: map[string]kvEntry{}} }

func (e kvEntry) live(now time.Time) bool {
	return e.expiresAt == nil || e.expiresAt.UnixMicro() > now.UnixMicro()
}

func (e kvEntry) record(key string) tool.KVEntry {
	var exp *time.Time
	if e.expiresAt != nil {
		t := *e.expiresAt
		exp = &t
	}
	return tool.KVEntry{Key: key, Value: slices.Clone(e.value), Version: e.version, ExpiresAt: exp, UpdatedAt: e.updatedAt}
}

// Get returns a key's live entry, or an error matching tool.ErrKeyNotFound.
func (kv *KV) Get(ctx context.Context, key string) (tool.KVEntry, error) {
	if err := tool.CheckKey(key); err != nil {
		return tool.KVEntry{}, err
	}
	now := kv.now()
	kv.mu.Lock()
	defer kv.mu.Unlock()
	e, ok := kv.entries[key]
	if !ok || !e.live(now) {
		return tool.KVEntry{}, fmt.Errorf("kv: %w", tool.ErrKeyNotFound)
	}
	return e.record(key), nil
}

// Set writes a value, whatever the key holds.
func (kv *KV) Set(ctx context.Context, key string, value []byte, opts *tool.KVSetOptions) (tool.KVEntry, error) {
	return kv.write(key, value, nil, opts)
}

// CompareAndSet writes a value only if the key is at version (0: only if
// it does not exist); otherwise an error matching tool.ErrVersionConflict.
func (kv *KV) CompareAndSet(ctx context.Context, key string, version int64, value []byte, opts *tool.KVSetOptions) (tool.KVEntry, error) {
	if version < 0 {
		return tool.KVEntry{}, errors.New("kv: the version is negative")
	}
	return kv.write(key, value, &version, opts)
}

func (kv *KV) write(key string, value []byte, ifVersion *int64, opts *tool.KVSetOptions) (tool.KVEntry, error) {
	if err := tool.CheckKey(key); err != nil {
		return tool.KVEntry{}, err
	}
	if len(value) > tool.MaxValueBytes {
		return tool.KVEntry{}, fmt.Errorf("kv: the value is %d bytes; the limit is %d", len(value), tool.MaxValueBytes)
	}
	var ttl time.Duration
	if opts != nil {
		ttl = opts.TTL
	}
	if ttl < 0 {
		return tool.KVEntry{}, errors.New("kv: the TTL is negative")
	}
	now := kv.now()
	stored := kvEntry{value: slices.Clone(value), updatedAt: now}
	if stored.value == nil {
		stored.value = []byte{}
	}
	if ttl > 0 {
		at := now.Add(ttl)
		stored.expiresAt = &at
	}
	kv.mu.Lock()
	defer kv.mu.Unlock()
	current := int64(0)
	if e, ok := kv.entries[key]; ok && e.live(now) {
		current = e.version
	}
	if ifVersion != nil && *ifVersion != current {
		return tool.KVEntry{}, fmt.Errorf("kv: %w: key %q is at version %d, not %d", tool.ErrVersionConflict, key, current, *ifVersion)
	}
	stored.version = current + 1
	kv.entries[key] = stored
	return stored.record(key), nil
}

// Delete removes a key; an absent key is no error.
func (kv *KV) Delete(ctx context.Context, key string) error {
	if err := tool.CheckKey(key); err != nil {
		return err
	}
	kv.mu.Lock()
	defer kv.mu.Unlock()
	delete(kv.entries, key)
	return nil
}

// List returns the live entries whose keys start with prefix, in key
// order, and the cursor of the next page ("" after the last).
func (kv *KV) List(ctx context.Context, prefix string, opts *tool.KVListOptions) ([]tool.KVEntry, string, error) {
	var o tool.KVListOptions
	if opts != nil {
		o = *opts
	}
	now := kv.now()
	kv.mu.Lock()
	defer kv.mu.Unlock()
	var keys []string
	for key, e := range kv.entries {
		if strings.HasPrefix(key, prefix) && (o.Cursor == "" || key > o.Cursor) && e.live(now) {
			keys = append(keys, key)
		}
	}
	keys, next := pageOf(keys, o.Limit)
	var out []tool.KVEntry // nil when empty, as from a host
	for _, key := range keys {
		out = append(out, kv.entries[key].record(key))
	}
	return out, next, nil
}

// Keys returns the live keys, sorted: what a test looks at after a call.
func (kv *KV) Keys() []string {
	now := kv.now()
	kv.mu.Lock()
	defer kv.mu.Unlock()
	var keys []string
	for key, e := range kv.entries {
		if e.live(now) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys
}

// pageOf sorts names and cuts them to a page of limit (100 unless it is
// 1 to 1000, as a host's store pages), returning the next page's cursor:
// the page's last name, or "" after the last page.
func pageOf(names []string, limit int) ([]string, string) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	slices.Sort(names)
	if len(names) <= limit {
		return names, ""
	}
	return names[:limit], names[limit-1]
}

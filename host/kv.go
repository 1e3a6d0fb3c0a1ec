package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// kvService is call.Host.KV: the store's key-value entries in the agent's
// namespace.
type kvService struct {
	store store.Store
	ns    string
}

func kvEntry(e store.KVEntry) tool.KVEntry {
	return tool.KVEntry{Key: e.Key, Value: e.Value, Version: e.Version, ExpiresAt: e.ExpiresAt}
}

func kvError(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("kv: %w", tool.ErrKeyNotFound)
	case errors.Is(err, store.ErrConflict):
		return fmt.Errorf("kv: %w: %v", tool.ErrVersionConflict, err)
	}
	return fmt.Errorf("kv: %w", err)
}

func (k kvService) Get(ctx context.Context, key string) (tool.KVEntry, error) {
	if err := tool.CheckKey(key); err != nil {
		return tool.KVEntry{}, err
	}
	e, err := k.store.KVGet(ctx, k.ns, key)
	if err != nil {
		return tool.KVEntry{}, kvError(err)
	}
	return kvEntry(e), nil
}

func (k kvService) write(ctx context.Context, key string, version int64, value []byte, opts *tool.KVSetOptions) (tool.KVEntry, error) {
	if err := tool.CheckKey(key); err != nil {
		return tool.KVEntry{}, err
	}
	if len(value) > tool.MaxValueBytes {
		return tool.KVEntry{}, fmt.Errorf("kv: the value is %d bytes; the limit is %d", len(value), tool.MaxValueBytes)
	}
	var o tool.KVSetOptions
	if opts != nil {
		o = *opts
	}
	if o.TTL < 0 {
		return tool.KVEntry{}, errors.New("kv: the TTL is negative")
	}
	e, err := k.store.KVSet(ctx, k.ns, key, value, version, o.TTL)
	if err != nil {
		return tool.KVEntry{}, kvError(err)
	}
	return kvEntry(e), nil
}

func (k kvService) Set(ctx context.Context, key string, value []byte, opts *tool.KVSetOptions) (tool.KVEntry, error) {
	return k.write(ctx, key, -1, value, opts)
}

func (k kvService) CompareAndSet(ctx context.Context, key string, version int64, value []byte, opts *tool.KVSetOptions) (tool.KVEntry, error) {
	if version < 0 {
		return tool.KVEntry{}, errors.New("kv: the version is negative")
	}
	return k.write(ctx, key, version, value, opts)
}

func (k kvService) Delete(ctx context.Context, key string) error {
	if err := tool.CheckKey(key); err != nil {
		return err
	}
	if err := k.store.KVDelete(ctx, k.ns, key); err != nil {
		return kvError(err)
	}
	return nil
}

func (k kvService) List(ctx context.Context, prefix string, opts *tool.KVListOptions) ([]tool.KVEntry, string, error) {
	var o tool.KVListOptions
	if opts != nil {
		o = *opts
	}
	entries, next, err := k.store.KVList(ctx, k.ns, prefix, store.Page{Limit: o.Limit, Cursor: o.Cursor})
	if err != nil {
		return nil, "", kvError(err)
	}
	out := make([]tool.KVEntry, len(entries))
	for i, e := range entries {
		out[i] = kvEntry(e)
	}
	return out, next, nil
}

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
	store store.KV
	ns    string
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
	return e, nil
}

func (k kvService) write(ctx context.Context, p store.KVSetParams, opts *tool.KVSetOptions) (tool.KVEntry, error) {
	if err := tool.CheckKey(p.Key); err != nil {
		return tool.KVEntry{}, err
	}
	if len(p.Value) > tool.MaxValueBytes {
		return tool.KVEntry{}, fmt.Errorf("kv: the value is %d bytes; the limit is %d", len(p.Value), tool.MaxValueBytes)
	}
	if opts != nil {
		p.TTL = opts.TTL
	}
	if p.TTL < 0 {
		return tool.KVEntry{}, errors.New("kv: the TTL is negative")
	}
	p.Namespace = k.ns
	e, err := k.store.KVSet(ctx, p)
	if err != nil {
		return tool.KVEntry{}, kvError(err)
	}
	return e, nil
}

func (k kvService) Set(ctx context.Context, key string, value []byte, opts *tool.KVSetOptions) (tool.KVEntry, error) {
	return k.write(ctx, store.KVSetParams{Key: key, Value: value}, opts)
}

func (k kvService) CompareAndSet(ctx context.Context, key string, version int64, value []byte, opts *tool.KVSetOptions) (tool.KVEntry, error) {
	if version < 0 {
		return tool.KVEntry{}, errors.New("kv: the version is negative")
	}
	return k.write(ctx, store.KVSetParams{Key: key, Value: value, IfVersion: &version}, opts)
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
	entries, next, err := k.store.KVList(ctx, store.ListParams{Namespace: k.ns, Prefix: prefix, Page: store.Page{Limit: o.Limit, Cursor: o.Cursor}})
	if err != nil {
		return nil, "", kvError(err)
	}
	return entries, next, nil
}

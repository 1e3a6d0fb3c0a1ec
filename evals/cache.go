package evals

import (
	"cmp"
	"context"
	"sync"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/store"
)

// batchCases are a batch's cases, which never change, kept in memory so
// that starting a case does not read its batch; and how far the batch's
// cases have been started, as far as this service knows.
type batchCases struct {
	cases       []api.EvalCase
	concurrency int    // cases at once
	principal   string // who ran the batch: its cases' sessions are its

	mu   sync.Mutex
	next int // the cases before it are not queued
}

// queued returns the first case that may still be queued.
func (b *batchCases) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.next
}

// taken records that case i is not queued any more (a case that has left
// the queue never returns to it).
func (b *batchCases) taken(i int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next == i {
		b.next = i + 1
	}
}

// cacheBatches is how many batches a cache keeps.
const cacheBatches = 16

// cache holds the cases of the batches a service has started cases of,
// by batch id, the most recent cacheBatches of them.
type cache struct {
	mu      sync.Mutex
	batches map[string]*batchCases
	order   []string // the oldest first
}

func newCache() cache { return cache{batches: map[string]*batchCases{}} }

// batch returns a batch's cases, from the cache, or read with r (and
// kept); ErrNotFound without the batch.
func (c *cache) batch(ctx context.Context, r store.Evals, batchID string) (*batchCases, error) {
	c.mu.Lock()
	bc := c.batches[batchID]
	c.mu.Unlock()
	if bc != nil {
		return bc, nil
	}
	b, err := r.EvalBatch(ctx, batchID)
	if err != nil {
		return nil, err
	}
	bc = &batchCases{cases: make([]api.EvalCase, len(b.Cases)), next: len(b.Cases), concurrency: max(b.Concurrency, 1), principal: cmp.Or(b.Principal, host.EvalPrincipal)}
	for i, cr := range b.Cases {
		bc.cases[i] = cr.Case
		if cr.Status == api.EvalQueued && i < bc.next {
			bc.next = i
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept := c.batches[batchID]; kept != nil {
		return kept, nil
	}
	c.batches[batchID] = bc
	c.order = append(c.order, batchID)
	for len(c.order) > cacheBatches {
		delete(c.batches, c.order[0])
		c.order = c.order[1:]
	}
	return bc, nil
}

// forget drops a completed batch from the cache.
func (c *cache) forget(batchID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.batches[batchID] == nil {
		return
	}
	delete(c.batches, batchID)
	for i, id := range c.order {
		if id == batchID {
			c.order = append(c.order[:i:i], c.order[i+1:]...)
			break
		}
	}
}

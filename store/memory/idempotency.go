package memory

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/agentsdk/agentsdk/store"
)

// idemRecord is an Idempotency-Key's record.
type idemRecord struct {
	store.IdempotentRecord
	runningUntil, expires time.Time
}

func (m *memStore) BeginIdempotent(ctx context.Context, p store.BeginIdempotentParams) (store.IdempotentRecord, bool, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{p.Scope, p.Key}
	if r, ok := m.idem[k]; ok && !lapsed(r.expires, now) && (r.Done || !lapsed(r.runningUntil, now)) {
		out := r.IdempotentRecord
		out.Answer.Body = slices.Clone(out.Answer.Body)
		return out, false, nil
	}
	m.idem[k] = &idemRecord{IdempotentRecord: store.IdempotentRecord{Hash: p.Hash}, runningUntil: now.Add(p.Lease), expires: now.Add(p.TTL)}
	return store.IdempotentRecord{Hash: p.Hash}, true, nil
}

func (m *memStore) FinishIdempotent(ctx context.Context, scope, key string, a store.IdempotentAnswer) error {
	if a.Status == 0 {
		return errors.New("recording an idempotent answer: no status")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.idem[[2]string{scope, key}]; ok {
		a.Body = slices.Clone(a.Body)
		if a.Body == nil {
			a.Body = []byte{}
		}
		r.Done, r.Answer = true, a
	}
	return nil
}

func (m *memStore) ForgetIdempotent(ctx context.Context, scope, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.idem, [2]string{scope, key})
	return nil
}

func (m *memStore) PruneIdempotent(ctx context.Context, now time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for k, r := range m.idem {
		if lapsed(r.expires, now) {
			delete(m.idem, k)
			n++
		}
	}
	return n, nil
}

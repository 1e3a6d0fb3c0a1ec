package serve

import (
	"context"
	"sync"
	"time"

	"github.com/agentsdk/agentsdk/store"
)

// A host remembers the keys it read from the store for keyCacheTTL, so
// that a client sending the same key on every request costs one store
// read a second on each host rather than one per request (a read is tens
// of microseconds on SQLite and a round trip on PostgreSQL; a hit is a
// SHA-256 and a map read).
//
// Revocation stays at once, in the sense a user can check: when a revoke
// answers, every host refuses the key. An entry is trusted until
// keyCacheTTL after its read *began*, so one read before the revocation
// committed is trusted no later than keyCacheTTL after the commit; the
// revoke waits that long after its commit before it answers (and drops
// the key from its own host's cache at once). A request on another host
// during that second, racing the revocation, may still get through, as it
// could have before its commit. A key's expiry is checked on every
// request against the record, so an expired key is refused at its
// expiresAt to the microsecond, cached or not. Only keys the store knows
// are remembered (a key created on one host works on every other at
// once: an unknown id is read every time); a revoked or expired record is
// remembered too, which is what the store would say again.

const (
	keyCacheTTL = time.Second
	keyCacheMax = 10000
)

type keyCache struct {
	mu sync.Mutex
	m  map[string]*keyEntry
}

type keyEntry struct {
	rec     store.KeyRecord
	p       Principal
	until   time.Time // when the read began, plus keyCacheTTL
	touched time.Time // its last use as the store has it, or as this host last wrote it
}

func (c *keyCache) get(id string, now time.Time) (*keyEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if ok && !now.Before(e.until) {
		delete(c.m, id)
		return nil, false
	}
	return e, ok
}

func (c *keyCache) put(id string, e *keyEntry, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*keyEntry{}
	}
	if len(c.m) >= keyCacheMax {
		for k, old := range c.m {
			if !now.Before(old.until) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= keyCacheMax {
			clear(c.m)
		}
	}
	c.m[id] = e
}

// claimTouch reports whether this request should write e's last use: it
// is over keyTouchEvery old. Only one of the requests that find it stale
// at once is told to.
func (c *keyCache) claimTouch(e *keyEntry, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !e.touched.IsZero() && now.Sub(e.touched) < keyTouchEvery {
		return false
	}
	e.touched = now
	return true
}

func (c *keyCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}

// waitOutCaches returns once every host's entry for a key read before now
// has lapsed (keyCacheTTL), or when ctx ends.
func waitOutCaches(ctx context.Context) {
	t := time.NewTimer(keyCacheTTL)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

package serve

import (
	"sync"
	"time"
)

// expiring is a map whose entries lapse each at a time of its own (the
// caches of verified JWTs and of API keys read lately). It holds at most
// max entries: when full, lapsed ones are dropped, and if none had, all of
// them.
type expiring[K comparable, V any] struct {
	max int
	mu  sync.Mutex
	m   map[K]expiringEntry[V]
}

type expiringEntry[V any] struct {
	v     V
	until time.Time
}

// get returns k's value if it has not lapsed at now.
func (c *expiring[K, V]) get(k K, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if ok && !now.Before(e.until) {
		delete(c.m, k)
		ok = false
	}
	return e.v, ok
}

// put sets k's value until then.
func (c *expiring[K, V]) put(k K, v V, until, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[K]expiringEntry[V]{}
	}
	if len(c.m) >= c.max {
		for key, old := range c.m {
			if !now.Before(old.until) {
				delete(c.m, key)
			}
		}
		if len(c.m) >= c.max {
			clear(c.m)
		}
	}
	c.m[k] = expiringEntry[V]{v: v, until: until}
}

// drop forgets k.
func (c *expiring[K, V]) drop(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
}

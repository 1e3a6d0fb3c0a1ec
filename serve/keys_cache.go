package serve

import (
	"context"
	"sync/atomic"
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

// keyCache is the keys read lately, each for keyCacheTTL from its read.
type keyCache = expiring[string, *keyEntry]

func newKeyCache() *keyCache { return &keyCache{max: keyCacheMax} }

type keyEntry struct {
	rec     store.KeyRecord
	p       Principal
	touched atomic.Int64 // its last use (Unix ns) as the store has it, or as this host last wrote it
}

// claimTouch reports whether this request should write e's last use: it
// is over keyTouchEvery old. Only one of the requests that find it stale
// at once is told to.
func (e *keyEntry) claimTouch(now time.Time) bool {
	last := e.touched.Load()
	if last != 0 && now.Sub(time.Unix(0, last)) < keyTouchEvery {
		return false
	}
	return e.touched.CompareAndSwap(last, now.UnixNano())
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

package serve

import (
	"crypto/sha256"
	"sync"
	"time"
)

// Verified tokens are remembered for a short while, so that a client
// sending the same token on every request pays for its signature once a
// minute rather than every time (an RS256 check is ~100 µs, an ES256 one
// more; a hit is a SHA-256 of the token and a map read). An entry lasts
// until the token's exp or tokenCacheTTL, whichever comes first: a token
// is never accepted past its exp, and a key the issuer withdrew stops
// opening anything within tokenCacheTTL plus the keys' maximum age. A JWT
// cannot be revoked before its exp anyway; what the cache changes is only
// how often the same answer is worked out. It holds at most
// tokenCacheMax entries; when full, expired ones are dropped, and if none
// were, all of them.

const (
	tokenCacheTTL = time.Minute
	tokenCacheMax = 10000
)

type tokenCache struct {
	mu sync.Mutex
	m  map[tokenCacheKey]tokenEntry
}

// tokenCacheKey is the token's SHA-256 and the verifier it passed (the
// API's or the MCP endpoint's audience).
type tokenCacheKey struct {
	sum    [sha256.Size]byte
	forMCP bool
}

type tokenEntry struct {
	p      Principal
	scopes []string
	until  time.Time
}

func cacheKey(raw string, forMCP bool) tokenCacheKey {
	return tokenCacheKey{sum: sha256.Sum256([]byte(raw)), forMCP: forMCP}
}

func (c *tokenCache) get(k tokenCacheKey, now time.Time) (tokenEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if ok && !now.Before(e.until) {
		delete(c.m, k)
		return tokenEntry{}, false
	}
	return e, ok
}

func (c *tokenCache) put(k tokenCacheKey, e tokenEntry, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[tokenCacheKey]tokenEntry{}
	}
	if len(c.m) >= tokenCacheMax {
		for key, old := range c.m {
			if !now.Before(old.until) {
				delete(c.m, key)
			}
		}
		if len(c.m) >= tokenCacheMax {
			clear(c.m)
		}
	}
	c.m[k] = e
}

package serve

import (
	"sync"
	"time"
)

// Verified tokens are remembered for a short while, so that a client
// sending the same token on every request pays for its signature once a
// minute rather than every time (an RS256 check is ~100 µs, an ES256 one
// more; a hit is a map read, ~0.1 µs: the map hashes the token with the
// runtime's string hash and compares it whole, so no other token finds
// its entry, and a SHA-256 of it, ~1 µs for a 2048-bit RS256 token, was
// most of a hit's cost). An entry lasts
// until the token's exp or tokenCacheTTL, whichever comes first: a token
// is never accepted past its exp, and a key the issuer withdrew stops
// opening anything within tokenCacheTTL plus the keys' maximum age. A JWT
// cannot be revoked before its exp anyway; what the cache changes is only
// how often the same answer is worked out. It holds at most
// tokenCacheMax entries (each holds its token, ~1 KB: at most ~4 MiB, of
// tokens the issuer signed: a token that fails is never kept); when full,
// expired ones are dropped, and if none were, all of them.

const (
	tokenCacheTTL = time.Minute
	tokenCacheMax = 4096
)

type tokenCache struct {
	mu sync.Mutex
	m  map[tokenCacheKey]tokenEntry
}

// tokenCacheKey is the token and the verifier it passed (the API's or the
// MCP endpoint's audience).
type tokenCacheKey struct {
	raw    string
	forMCP bool
}

type tokenEntry struct {
	p      Principal
	scopes []string
	until  time.Time
}

func cacheKey(raw string, forMCP bool) tokenCacheKey {
	return tokenCacheKey{raw: raw, forMCP: forMCP}
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

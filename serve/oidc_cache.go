package serve

import "time"

// Verified tokens are remembered for a short while, so that a client
// sending the same token on every request pays for its signature once a
// minute rather than every time (an RS256 check is ~100 µs, an ES256 one
// more; a hit is a map read, ~0.1 µs: the map hashes the token with the
// runtime's string hash and compares it whole, so no other token finds its
// entry; a SHA-256 of it, ~1 µs for a 2048-bit RS256 token, was most of a
// hit's cost). An entry lasts until the token's exp or tokenCacheTTL,
// whichever comes first: a token is never accepted past its exp, and a key
// the issuer withdrew stops opening anything within tokenCacheTTL plus the
// keys' maximum age. A JWT cannot be revoked before its exp anyway; what
// the cache changes is only how often the same answer is worked out. It
// holds at most tokenCacheMax entries (each holds its token, ~1 KB: at most
// ~4 MiB, of tokens the issuer signed: a token that fails is never kept).

const (
	tokenCacheTTL = time.Minute
	tokenCacheMax = 4096
)

// tokenCache is the verified tokens, each until its exp or tokenCacheTTL.
type tokenCache = expiring[tokenCacheKey, tokenEntry]

func newTokenCache() *tokenCache { return &tokenCache{max: tokenCacheMax} }

// tokenCacheKey is the token and the verifier it passed (the API's or the
// MCP endpoint's audience).
type tokenCacheKey struct {
	raw    string
	forMCP bool
}

type tokenEntry struct {
	p      Principal
	scopes []string
}

func cacheKey(raw string, forMCP bool) tokenCacheKey {
	return tokenCacheKey{raw: raw, forMCP: forMCP}
}

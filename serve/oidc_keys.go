package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// oidcAlgs are the signature algorithms a bearer JWT may use: RS256 and
// ES256. Anything else — none, HS256 (whose "secret" an attacker would
// take from the issuer's public keys), the rest — is refused when the
// token is parsed, before any key is looked at.
var oidcAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.ES256}

// maxJWKSBytes bounds an issuer's key set document.
const maxJWKSBytes = 1 << 20

// keySet is an issuer's signing keys (its JWKS), for go-oidc's verifier
// (an oidc.KeySet). It keeps them in memory and fetches them again when a
// token names a key it does not hold (the issuer rotated its keys) — at
// most once per refetch interval, however many such tokens arrive, so
// that tokens with made-up key ids cannot make the host hammer the issuer —
// and when they are older than maxAge (a key the issuer withdrew stops
// verifying). One fetch runs at a time; requests that need it wait for
// it. A failed fetch keeps the keys it had.
type keySet struct {
	url     string
	client  *http.Client
	timeout time.Duration
	every   time.Duration // the least time between two fetches
	maxAge  time.Duration

	mu      sync.RWMutex
	keys    []jose.JSONWebKey
	fetched time.Time // the last successful fetch
	tried   time.Time // the last attempt
	lastErr error     // the last attempt's failure; nil after a success

	fetchMu sync.Mutex   // held while fetching
	fetches atomic.Int64 // attempts, for tests and logs
}

// VerifySignature checks jwt's signature with the issuer's keys and
// returns its payload (oidc.KeySet).
func (k *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(jwt, oidcAlgs)
	if err != nil {
		return nil, fmt.Errorf("parsing the token: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("the token has more than one signature")
	}
	kid := jws.Signatures[0].Header.KeyID
	keys, fresh := k.cached()
	if fresh {
		if payload, ok := verifyWith(jws, keys, kid); ok {
			return payload, nil
		}
	}
	keys, err = k.refresh(ctx)
	if payload, ok := verifyWith(jws, keys, kid); ok {
		return payload, nil
	}
	if err != nil {
		if u, ok := ctx.Value(keysUnavailableKey{}).(*error); ok && errors.Is(err, errKeysUnavailable) {
			*u = err // go-oidc keeps only the text of the error it is given
		}
		return nil, err
	}
	return nil, fmt.Errorf("no key of the issuer verifies the token (kid %q)", kid)
}

func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey, kid string) ([]byte, bool) {
	for i := range keys {
		if kid != "" && keys[i].KeyID != kid {
			continue
		}
		if payload, err := jws.Verify(&keys[i]); err == nil {
			return payload, true
		}
	}
	return nil, false
}

// cached returns the keys held and whether they are younger than maxAge.
func (k *keySet) cached() ([]jose.JSONWebKey, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.keys, !k.fetched.IsZero() && time.Since(k.fetched) < k.maxAge
}

// errKeysUnavailable wraps a failure to fetch an issuer's keys when none
// are held to check a token with.
var errKeysUnavailable = errors.New("the OIDC issuer's keys could not be fetched")

// keysUnavailableKey is the context key of an *error where VerifySignature
// puts an errKeysUnavailable: go-oidc's Verify returns only its text, and
// the host answers it 503, not 401 (the token may be good).
type keysUnavailableKey struct{}

// refresh fetches the keys again unless an attempt was made within the
// refetch interval, and returns the keys held then. The error is the
// fetch's (wrapping errKeysUnavailable when no keys are held at all).
func (k *keySet) refresh(ctx context.Context) ([]jose.JSONWebKey, error) {
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	k.mu.RLock()
	tried, keys, lastErr := k.tried, k.keys, k.lastErr
	k.mu.RUnlock()
	if !tried.IsZero() && time.Since(tried) < k.every {
		// fetched just now, by this request's or another's
		if len(keys) == 0 && lastErr != nil {
			return nil, fmt.Errorf("%w: the last fetch, less than %s ago, failed: %w", errKeysUnavailable, k.every, lastErr)
		}
		return keys, nil
	}
	k.fetches.Add(1)
	fetched, err := k.fetch(ctx)
	now := time.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.tried, k.lastErr = now, err
	if err != nil {
		if len(k.keys) == 0 {
			return nil, fmt.Errorf("%w: %w", errKeysUnavailable, err)
		}
		return k.keys, err
	}
	k.keys, k.fetched = fetched, now
	return fetched, nil
}

// fetch reads the key set document within the timeout. Keys of types or
// algorithms go-jose does not know, and private keys, are skipped, as
// RFC 7517 (5) asks.
func (k *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, fmt.Errorf("fetching the OIDC issuer's keys: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the OIDC issuer's keys from %s: %w", k.url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading the OIDC issuer's keys from %s: %w", k.url, err)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("fetching the OIDC issuer's keys from %s: %s", k.url, resp.Status)
	case len(body) > maxJWKSBytes:
		return nil, fmt.Errorf("fetching the OIDC issuer's keys from %s: over %d bytes", k.url, maxJWKSBytes)
	}
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("decoding the OIDC issuer's keys from %s: %w", k.url, err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range doc.Keys {
		var key jose.JSONWebKey
		if json.Unmarshal(raw, &key) != nil || !key.Valid() || !key.IsPublic() || (key.Use != "" && key.Use != "sig") {
			continue
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("the OIDC issuer's key set at %s has no usable signing key", k.url)
	}
	return keys, nil
}

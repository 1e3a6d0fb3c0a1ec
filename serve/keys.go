package serve

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// API keys are ask_<id>_<secret>: id is 8 random bytes and secret 32,
// each in lower-case base32 without padding (so neither holds a '_').
// The store keeps the key's record and the SHA-256 of its secret, never
// the secret: a database that leaks gives nobody a key.
//
// Why SHA-256 and not argon2id (or bcrypt): a slow hash protects
// low-entropy secrets, passwords a person picks, from guessing. A key's
// secret is 256 random bits: no guess finds it, however fast the hash,
// so a slow one would only cost every request tens of milliseconds and
// hand whoever floods the host with bad keys its CPU. SHA-256 costs well
// under a microsecond. It is unkeyed on purpose: a hash keyed from the host
// token would make every key invalid when the token changes. The digest
// is compared in constant time.
//
// A key is read from the store at most once a second on each host
// (keys_cache.go); a revoke answers only once every host that shares the
// store refuses the key (401), and an expired key is refused at its
// expiry. Its last use is written at most once a minute by each host.

var keyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

const (
	keyIDBytes     = 8
	keySecretBytes = 32
	// keyTouchEvery is how stale a key's last use may get before a
	// request with it writes the new one.
	keyTouchEvery = time.Minute
)

// newKeySecret returns a new key's id, its full text (ask_<id>_<secret>)
// and the hash of its secret.
func newKeySecret() (id, key string, hash []byte, err error) {
	b := make([]byte, keyIDBytes+keySecretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", "", nil, fmt.Errorf("making a key: %w", err)
	}
	id = strings.ToLower(keyEncoding.EncodeToString(b[:keyIDBytes]))
	secret := strings.ToLower(keyEncoding.EncodeToString(b[keyIDBytes:]))
	sum := keyHash(secret)
	return id, api.KeyPrefix + id + "_" + secret, sum[:], nil
}

func keyHash(secret string) [sha256.Size]byte { return sha256.Sum256([]byte(secret)) }

// parseKey splits an API key into its id and secret; ok is false for a
// credential that is not shaped like one.
func parseKey(cred string) (id, secret string, ok bool) {
	rest, ok := strings.CutPrefix(cred, api.KeyPrefix)
	if !ok {
		return "", "", false
	}
	id, secret, ok = strings.Cut(rest, "_")
	return id, secret, ok && id != "" && secret != "" && len(id) <= 32 && len(secret) <= 128
}

// errBadKey is the 401 of a key the host does not take.
var errBadKey = &api.Error{Code: api.CodeUnauthorized, Message: "unknown, revoked or expired API key (agent-sdk keys list shows the host's keys)"}

// keyPrincipal returns the principal of the API key r carries. ok is
// false when r carries none (the host token, a cookie, nothing); err is
// errBadKey for a key that is unknown, wrong, revoked or expired, or the
// store's failure.
func (s *Server) keyPrincipal(ctx context.Context, h http.Header) (p Principal, ok bool, err error) {
	cred, ok := bearerCredential(h)
	if !ok {
		return Principal{}, false, nil
	}
	id, secret, ok := parseKey(cred)
	if !ok {
		return Principal{}, false, nil
	}
	now := time.Now()
	e, err := s.cachedKey(ctx, id, now)
	if errors.Is(err, store.ErrNotFound) {
		return Principal{}, true, errBadKey
	}
	if err != nil {
		return Principal{}, true, err
	}
	sum := keyHash(secret)
	if subtle.ConstantTimeCompare(sum[:], e.rec.Hash) != 1 || !e.rec.Usable(now) {
		return Principal{}, true, errBadKey
	}
	if e.claimTouch(now) {
		if err := s.host.Store().TouchKey(ctx, id, now); err != nil {
			s.logger.Warn("recording an API key's use", "key", id, "err", err)
		}
	}
	return e.p, true, nil
}

// cachedKey returns key id's record and principal, from this host's cache
// or read from the store (keys_cache.go); store.ErrNotFound without it.
func (s *Server) cachedKey(ctx context.Context, id string, now time.Time) (*keyEntry, error) {
	if e, ok := s.keyCache.get(id, now); ok {
		return e, nil
	}
	k, err := s.host.Store().Key(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("checking an API key: %w", err)
	}
	e := &keyEntry{rec: k, p: Principal{ID: "key:" + k.ID, Name: k.Name, Roles: k.Roles, perms: s.roles.of(k.Roles)}}
	if k.LastUsedAt != nil {
		e.touched.Store(k.LastUsedAt.UnixNano())
	}
	s.keyCache.put(id, e, now.Add(keyCacheTTL), now)
	return e, nil
}

// parseExpiry reads a key's lifetime: a number of days ("90d") or a Go
// duration ("720h"); it must be positive.
func parseExpiry(s string) (time.Duration, error) {
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		n, err = strconv.Atoi(days)
		d = time.Duration(n) * 24 * time.Hour
		if n > 100*365 {
			err = errors.New("over 100 years")
		}
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("expiry %q: want a positive number of days (90d) or a duration (720h)", s)
	}
	return d, nil
}

// maxKeyName bounds a key's name, in bytes.
const maxKeyName = 200

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	var req api.CreateKeyRequest
	if err == nil {
		err = decodeJSON(body, &req)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	req.Name = strings.TrimSpace(req.Name)
	switch {
	case req.Name == "" || len(req.Name) > maxKeyName || strings.ContainsFunc(req.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		writeError(w, api.Errorf(api.CodeInvalidKey, "a key needs a name: 1 to %d characters, no control characters", maxKeyName))
		return
	case len(req.Roles) == 0:
		writeError(w, api.Errorf(api.CodeInvalidKey, "a key needs at least one role (the host's: %s)", strings.Join(s.roles.names(), ", ")))
		return
	}
	if bad := s.roles.unknown(req.Roles); bad != "" {
		writeError(w, api.Errorf(api.CodeInvalidKey, "unknown role %q (the host's roles: %s)", bad, strings.Join(s.roles.names(), ", ")))
		return
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	k := api.Key{Name: req.Name, Roles: dedupe(req.Roles), CreatedAt: now}
	if req.ExpiresIn != "" {
		d, err := parseExpiry(req.ExpiresIn)
		if err != nil {
			writeError(w, api.Errorf(api.CodeInvalidKey, "%v", err))
			return
		}
		exp := now.Add(d)
		k.ExpiresAt = &exp
	}
	id, secret, hash, err := newKeySecret()
	if err == nil {
		k.ID = id
		err = s.host.Store().CreateKey(r.Context(), store.CreateKeyParams{Key: store.KeyRecord{Key: k, Hash: hash},
			Audit: s.host.AuditParams(keyAudit(r, api.AuditKeyCreated, k))})
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.logger.Info("created an API key", "key", id, "name", k.Name, "roles", strings.Join(k.Roles, ","), "by", principalOf(r).ID)
	writeJSON(w, http.StatusCreated, api.KeyCreated{OK: true, Key: k, Secret: secret})
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	keys, err := s.host.Store().ListKeys(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	if keys == nil {
		keys = []api.Key{}
	}
	writeJSON(w, http.StatusOK, api.KeyList{OK: true, Keys: keys})
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	k, err := s.host.Store().RevokeKey(r.Context(), store.RevokeKeyParams{ID: id, At: time.Now(),
		AuditFor: func(k api.Key) store.AppendAuditParams {
			return s.host.AuditParams(keyAudit(r, api.AuditKeyRevoked, k))
		}})
	if errors.Is(err, store.ErrNotFound) {
		err = api.Errorf(api.CodeKeyNotFound, "no API key has the id %q (agent-sdk keys list)", id)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.keyCache.drop(id)
	waitOutCaches(r.Context()) // until no host still trusts a read from before the commit
	s.logger.Info("revoked an API key", "key", id, "by", principalOf(r).ID)
	writeJSON(w, http.StatusOK, api.KeyResponse{OK: true, Key: k})
}

func dedupe(list []string) []string {
	var out []string
	for _, v := range list {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

package serve

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// Whom a playground session acts for. The sign-in form takes the host's
// token (the session acts as the bootstrap admin, as it always has) or a
// personal API key (as the key's principal, with its roles); signing in
// with the OIDC issuer (playground_oidc.go) records the token's principal.
// A key's session holds only the key's id: every request the cookie
// admits checks the key again (keys_cache.go), so that a revoked or
// expired key ends its playground sessions at once, on every host. The
// secret is checked once, at sign-in, and never stored.

// pgRecord is a playground session's record in the KV.
type pgRecord struct {
	CreatedAt time.Time    `json:"createdAt"`
	ExpiresAt time.Time    `json:"expiresAt"`
	Remote    string       `json:"remote"`
	Key       string       `json:"key,omitempty"`       // signed in with this API key (its id)
	Principal *pgPrincipal `json:"principal,omitempty"` // signed in with the OIDC issuer
}

// pgPrincipal is an OIDC principal as a playground session records it.
type pgPrincipal struct {
	ID    string   `json:"id"`
	Name  string   `json:"name"`
	Email string   `json:"email,omitempty"`
	Roles []string `json:"roles"`
}

// signInPrincipal checks what the sign-in form posted: the host's token
// or an API key. ok is false for neither (or a key that is unknown,
// wrong, revoked or expired); err is the store's failure.
func (s *Server) signInPrincipal(ctx context.Context, posted string) (rec pgRecord, p Principal, ok bool, err error) {
	sum := sha256.Sum256([]byte(posted))
	if subtle.ConstantTimeCompare(sum[:], s.pg.tokenHash[:]) == 1 {
		return pgRecord{}, tokenPrincipal, true, nil
	}
	if _, _, isKey := parseKey(posted); !isKey {
		return pgRecord{}, Principal{}, false, nil
	}
	p, _, err = s.keyPrincipal(ctx, http.Header{"Authorization": {"Bearer " + posted}})
	switch {
	case errors.Is(err, errBadKey):
		return pgRecord{}, Principal{}, false, nil
	case err != nil:
		return pgRecord{}, Principal{}, false, err
	}
	id, _, _ := parseKey(posted)
	return pgRecord{Key: id}, p, true, nil
}

// sessionPrincipal returns whom a live playground session acts for. ok
// is false when the key it was opened with is no longer usable.
func (s *Server) sessionPrincipal(ctx context.Context, rec pgRecord) (Principal, bool, error) {
	switch {
	case rec.Key != "":
		now := time.Now()
		e, err := s.cachedKey(ctx, rec.Key, now)
		if errors.Is(err, store.ErrNotFound) {
			return Principal{}, false, nil
		}
		if err != nil {
			return Principal{}, false, api.Errorf(api.CodeInternal, "checking the playground session's key: %w", err)
		}
		if !e.rec.Usable(now) {
			return Principal{}, false, nil
		}
		return e.p, true, nil
	case rec.Principal != nil:
		pp := rec.Principal
		return Principal{ID: pp.ID, Name: pp.Name, Email: pp.Email, Roles: pp.Roles, perms: s.roles.of(pp.Roles)}, true, nil
	}
	return tokenPrincipal, true, nil
}

// decodeRecord reads a session's record; one written before records
// named a principal is the token's.
func decodeRecord(b []byte) pgRecord {
	var rec pgRecord
	_ = json.Unmarshal(b, &rec)
	return rec
}

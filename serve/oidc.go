package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/agentsdk/agentsdk/api"
)

// Bearer JWTs from an OpenID Connect issuer ([Options.OIDC]). A bearer
// credential shaped like a JWT (three dot-separated parts) that is neither
// the host token nor an API key is checked by github.com/coreos/go-oidc:
// its signature with the issuer's keys (RS256 or ES256 only: keySet),
// iss (exactly the issuer), aud (it must hold the audience), exp (required,
// no leeway) and nbf (go-oidc allows five minutes of clock skew). The
// issuer's discovery document (/.well-known/openid-configuration) is read
// at the first such token, within the fetch timeout, and its jwks_uri
// gives the keys. The principal is oidc:<sub>, named by the name claim
// (else preferred_username, else email, else sub), with the roles of the
// roles claim. A verified token is remembered for a minute at most, never
// past its exp (oidc_cache.go).

// Defaults of [OIDCOptions].
const (
	// OIDCFetchTimeoutDefault bounds each fetch of the issuer's discovery
	// document or keys.
	OIDCFetchTimeoutDefault = 10 * time.Second
	// OIDCRefetchDefault is the least time between two fetches of the
	// issuer's keys (a token naming an unknown key asks for one).
	OIDCRefetchDefault = 30 * time.Second
	// OIDCKeysMaxAgeDefault is how long fetched keys are used before they
	// are fetched again.
	OIDCKeysMaxAgeDefault = time.Hour
)

// OIDCOptions configure bearer JWTs from an OpenID Connect issuer
// (agent.yaml's auth.oidc).
type OIDCOptions struct {
	// Issuer is the issuer's URL, exactly as its tokens' iss claim and its
	// discovery document say it (https, or http on loopback for tests).
	// Required.
	Issuer string
	// Audience is what a token's aud must hold to open the API. Required.
	Audience string
	// RolesClaim names the claim the principal's roles are read from: a
	// string (one role, or several separated by spaces or commas) or an
	// array of strings; a dotted name walks objects (realm_access.roles).
	// Empty: tokens carry no roles (and so no permissions).
	RolesClaim string
	// ClientID is the playground's client at the issuer: with it, the
	// playground offers to sign in with the issuer (authorization code
	// with PKCE, a public client). Empty: no such sign-in.
	ClientID string
	// HTTPClient fetches the discovery document, keys and tokens. Nil: a
	// client of its own.
	HTTPClient *http.Client
	// FetchTimeout bounds each fetch; zero means OIDCFetchTimeoutDefault.
	FetchTimeout time.Duration
	// Refetch is the least time between two fetches of the keys; zero
	// means OIDCRefetchDefault.
	Refetch time.Duration
	// KeysMaxAge is how long fetched keys are trusted; zero means
	// OIDCKeysMaxAgeDefault.
	KeysMaxAge time.Duration
}

// oidcAuth checks a host's bearer JWTs.
type oidcAuth struct {
	o     OIDCOptions
	roles roleTable

	cache *tokenCache // tokens verified lately (oidc_cache.go)

	mu        sync.Mutex
	discovery *oidcDiscovery // once read
	tried     time.Time      // the last failed discovery
	lastErr   error
}

// oidcDiscovery is what the issuer's discovery document gave.
type oidcDiscovery struct {
	keys     *keySet
	api      *oidc.IDTokenVerifier // aud: the audience
	mcp      *oidc.IDTokenVerifier // aud: the MCP endpoint's resource URL; nil without one
	client   *oidc.IDTokenVerifier // aud: the playground's client (its ID tokens); nil without one
	endpoint oauth2.Endpoint
}

func newOIDC(o OIDCOptions, roles roleTable) (*oidcAuth, error) {
	u, err := url.Parse(o.Issuer)
	if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopbackHost(u.Host))) {
		return nil, fmt.Errorf("OIDC issuer %q: want an https URL (http only on loopback)", o.Issuer)
	}
	if strings.TrimSpace(o.Audience) == "" {
		return nil, errors.New("OIDC: an audience is required (the aud the API's tokens carry)")
	}
	o.FetchTimeout = orDefault(o.FetchTimeout, OIDCFetchTimeoutDefault)
	o.Refetch = orDefault(o.Refetch, OIDCRefetchDefault)
	o.KeysMaxAge = orDefault(o.KeysMaxAge, OIDCKeysMaxAgeDefault)
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: o.FetchTimeout}
	}
	return &oidcAuth{o: o, roles: roles, cache: newTokenCache()}, nil
}

// discover reads the issuer's discovery document once (again at most
// once per refetch interval after a failure).
func (a *oidcAuth) discover(ctx context.Context, mcpResource string) (*oidcDiscovery, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.discovery != nil {
		return a.discovery, nil
	}
	if !a.tried.IsZero() && time.Since(a.tried) < a.o.Refetch {
		return nil, a.lastErr
	}
	d, err := a.readDiscovery(ctx, mcpResource)
	if err != nil {
		a.tried, a.lastErr = time.Now(), err
		return nil, err
	}
	a.discovery = d
	return d, nil
}

func (a *oidcAuth) readDiscovery(ctx context.Context, mcpResource string) (*oidcDiscovery, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.o.FetchTimeout)
	defer cancel()
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, a.o.HTTPClient), a.o.Issuer)
	if err != nil {
		return nil, fmt.Errorf("reading the OIDC issuer's discovery document (%s/.well-known/openid-configuration): %w", strings.TrimSuffix(a.o.Issuer, "/"), err)
	}
	var doc struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := p.Claims(&doc); err != nil || doc.JWKSURI == "" {
		return nil, fmt.Errorf("the OIDC issuer's discovery document names no jwks_uri")
	}
	keys := &keySet{url: doc.JWKSURI, client: a.o.HTTPClient, timeout: a.o.FetchTimeout, every: a.o.Refetch, maxAge: a.o.KeysMaxAge}
	algs := make([]string, len(oidcAlgs))
	for i, alg := range oidcAlgs {
		algs[i] = string(alg)
	}
	d := &oidcDiscovery{keys: keys, endpoint: p.Endpoint(),
		api: oidc.NewVerifier(a.o.Issuer, keys, &oidc.Config{ClientID: a.o.Audience, SupportedSigningAlgs: algs})}
	if mcpResource != "" {
		d.mcp = oidc.NewVerifier(a.o.Issuer, keys, &oidc.Config{ClientID: mcpResource, SupportedSigningAlgs: algs})
	}
	if a.o.ClientID != "" {
		d.client = oidc.NewVerifier(a.o.Issuer, keys, &oidc.Config{ClientID: a.o.ClientID, SupportedSigningAlgs: algs})
	}
	return d, nil
}

// looksLikeJWT reports whether a bearer credential is shaped like a
// compact JWS: three dot-separated parts, the first two not empty (an
// unsigned token's third part is empty: it is a JWT, and refused).
func looksLikeJWT(cred string) bool {
	if strings.Count(cred, ".") != 2 {
		return false
	}
	h, rest, _ := strings.Cut(cred, ".")
	p, _, _ := strings.Cut(rest, ".")
	return h != "" && p != ""
}

// jwtError is the 401 of a bearer JWT the host does not take; its
// message says why (expired, audience, issuer, signature, algorithm).
type jwtError struct{ reason string }

func (e *jwtError) Error() string { return "invalid bearer token: " + e.reason }

// tokenClaims are the claims a principal is made of.
type tokenClaims struct {
	Subject           string          `json:"sub"`
	Name              string          `json:"name"`
	PreferredUsername string          `json:"preferred_username"`
	Email             string          `json:"email"`
	Scope             json.RawMessage `json:"scope"` // "a b c" (RFC 8693) or, from some issuers, an array
	Scp               json.RawMessage `json:"scp"`   // Entra's and Okta's array or string
}

// principal checks a JWT for the API (mcp false: aud must hold the
// audience) or the MCP endpoint (aud must hold its resource URL), and
// returns its principal and scopes. A token that fails a check is a
// *jwtError; an issuer that cannot be reached, another error.
func (a *oidcAuth) principal(ctx context.Context, raw string, mcpResource string, forMCP bool) (Principal, []string, error) {
	now := time.Now()
	key := cacheKey(raw, forMCP)
	if e, ok := a.cache.get(key, now); ok {
		return e.p, e.scopes, nil
	}
	d, err := a.discover(ctx, mcpResource)
	if err != nil {
		return Principal{}, nil, err
	}
	v := d.api
	if forMCP && d.mcp != nil {
		v = d.mcp
	}
	p, scopes, exp, _, err := a.check(ctx, v, raw)
	if err == nil {
		until := now.Add(tokenCacheTTL)
		if exp.Before(until) {
			until = exp
		}
		a.cache.put(key, tokenEntry{p: p, scopes: scopes}, until, now)
	}
	return p, scopes, err
}

// check verifies raw with v and returns its principal, scopes, expiry and
// nonce.
func (a *oidcAuth) check(ctx context.Context, v *oidc.IDTokenVerifier, raw string) (p Principal, scopes []string, exp time.Time, nonce string, err error) {
	var unavailable error
	tok, err := v.Verify(context.WithValue(ctx, keysUnavailableKey{}, &unavailable), raw)
	if err != nil {
		if unavailable != nil {
			return Principal{}, nil, time.Time{}, "", unavailable
		}
		return Principal{}, nil, time.Time{}, "", &jwtError{reason: jwtReason(err)}
	}
	var c tokenClaims
	var all map[string]json.RawMessage
	if err := tok.Claims(&c); err != nil || tok.Claims(&all) != nil {
		return Principal{}, nil, time.Time{}, "", &jwtError{reason: "its claims are not a JSON object"}
	}
	if c.Subject == "" || len(c.Subject) > 255 || strings.ContainsFunc(c.Subject, isControl) {
		return Principal{}, nil, time.Time{}, "", &jwtError{reason: "its sub claim is missing or not a plain string of at most 255 bytes"}
	}
	roles := boundRoles(claimStrings(lookupClaim(all, a.o.RolesClaim)))
	name := firstOf(c.Name, c.PreferredUsername, c.Email, c.Subject)
	p = Principal{ID: "oidc:" + c.Subject, Name: clean(name), Email: clean(c.Email), Roles: roles, perms: a.roles.of(roles)}
	scopes = claimStrings(c.Scope)
	if len(scopes) == 0 {
		scopes = claimStrings(c.Scp)
	}
	return p, scopes, tok.Expiry, tok.Nonce, nil
}

// jwtReason says in a few words why go-oidc refused a token.
func jwtReason(err error) string {
	var expired *oidc.TokenExpiredError
	if errors.As(err, &expired) {
		return fmt.Sprintf("expired at %s", expired.Expiry.UTC().Format(time.RFC3339))
	}
	msg := strings.TrimPrefix(err.Error(), "oidc: ")
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return msg
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// clean drops control characters and bounds a claim shown in logs and
// records.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if isControl(r) {
			return -1
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

func firstOf(list ...string) string {
	for _, s := range list {
		if s != "" {
			return s
		}
	}
	return ""
}

// lookupClaim returns the claim name names, walking objects along a
// dotted name (realm_access.roles) when the whole name is not a claim.
func lookupClaim(all map[string]json.RawMessage, name string) json.RawMessage {
	if name == "" {
		return nil
	}
	if v, ok := all[name]; ok {
		return v
	}
	head, rest, ok := strings.Cut(name, ".")
	if !ok {
		return nil
	}
	var inner map[string]json.RawMessage
	if json.Unmarshal(all[head], &inner) != nil {
		return nil
	}
	return lookupClaim(inner, rest)
}

// boundRoles keeps at most 64 of a token's roles, each of at most 64
// bytes without control characters: roles the host does not define
// grant nothing, but they are shown in refusals and records.
func boundRoles(roles []string) []string {
	roles = slices.DeleteFunc(roles, func(r string) bool { return len(r) > 64 || strings.ContainsFunc(r, isControl) })
	return roles[:min(len(roles), 64)]
}

// claimStrings reads a claim that is a string (values separated by
// spaces or commas) or an array of strings; anything else is none.
func claimStrings(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return dedupe(strings.FieldsFunc(one, func(r rune) bool { return r == ' ' || r == ',' }))
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return dedupe(slices.DeleteFunc(list, func(s string) bool { return strings.TrimSpace(s) == "" }))
	}
	return nil
}

// jwtPrincipal returns the principal of the bearer JWT r carries. ok is
// false when r carries none or OIDC is not configured.
func (s *Server) jwtPrincipal(r *http.Request) (p Principal, ok bool, err error) {
	return s.jwtPrincipalFor(r.Context(), r.Header, r.URL.Path == "/"+s.slug+mcpPath)
}

// jwtPrincipalFor is jwtPrincipal for a request's header, on the MCP
// endpoint (forMCP) or the API.
func (s *Server) jwtPrincipalFor(ctx context.Context, h http.Header, forMCP bool) (p Principal, ok bool, err error) {
	if s.oidc == nil {
		return Principal{}, false, nil
	}
	cred, ok := bearerCredential(h)
	if !ok || !looksLikeJWT(cred) {
		return Principal{}, false, nil
	}
	p, scopes, err := s.oidc.principal(ctx, cred, s.mcpResource(), forMCP)
	if err != nil {
		return Principal{}, true, err
	}
	if forMCP && s.mcpResource() != "" {
		if !slices.Contains(scopes, ScopeToolsCall) {
			return Principal{}, true, errInsufficientScope
		}
		p.perms = scopedPerms(p.perms, scopes)
	}
	return p, true, nil
}

// refuseJWT answers a bearer JWT the host does not take: 401 invalid_token
// (403 insufficient_scope on the MCP endpoint), or 503 when the issuer
// cannot be reached, with a WWW-Authenticate challenge that points an MCP
// client at the endpoint's protected-resource metadata.
func (s *Server) refuseJWT(w http.ResponseWriter, r *http.Request, err error) {
	var bad *jwtError
	switch {
	case errors.As(err, &bad):
		w.Header().Set("WWW-Authenticate", s.challenge(r, `error="invalid_token"`))
		s.logger.Debug("refused a bearer JWT", "path", r.URL.Path, "reason", bad.reason)
		refuse(w, r, &api.Error{Code: api.CodeUnauthorized, Message: bad.Error()}, refusalGrace)
	case errors.Is(err, errInsufficientScope):
		w.Header().Set("WWW-Authenticate", s.challenge(r, `error="insufficient_scope", scope="`+ScopeToolsCall+`"`))
		refuse(w, r, errInsufficientScope, refusalGrace)
	default:
		s.logger.Warn("could not check a bearer JWT", "err", err)
		refuse(w, r, api.Errorf(api.CodeUnhealthy, "checking a bearer JWT: %v", err), refusalGrace)
	}
}

// challenge is a WWW-Authenticate value for a refusal of r: Bearer with
// params, and on the MCP endpoint of a resource server the URL of its
// metadata.
func (s *Server) challenge(r *http.Request, params string) string {
	v := `Bearer realm="agent-sdk"`
	if params != "" {
		v += ", " + params
	}
	if s.oauth != nil && r.URL.Path == "/"+s.slug+mcpPath {
		v += `, resource_metadata="` + s.oauth.metadataURL + `"`
	}
	return v
}

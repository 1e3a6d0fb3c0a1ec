package serve

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html"
	"net/http"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Signing in to the playground with the OIDC issuer (OIDCOptions.ClientID
// set): the authorization code flow with PKCE (S256), as a public client.
//
//   - GET /<slug>/playground/oidc/login makes a state, a PKCE verifier
//     and a nonce, and keeps them in a cookie for ten minutes, MACed with
//     a key derived from the host token (so that only a host of this agent
//     made it, and any of them takes it back), HttpOnly, SameSite=Lax (so
//     that it comes back with the issuer's redirect) and only for the
//     callback's path; nothing is written on the host, so that requests
//     without any credential cannot fill its store. It then sends the
//     browser to the issuer's authorization endpoint.
//   - GET /<slug>/playground/oidc/callback takes the code: the cookie must
//     be valid and unexpired and its state the one the issuer sent back (a
//     login started in another browser, or by a page of another site, is
//     refused), and it is cleared; the code, which the issuer takes once,
//     is exchanged with the verifier; the ID token is checked as any token
//     (signature, iss, exp, nbf) with the client as its audience, and its
//     nonce must be the cookie's. Its principal (oidc:<sub>, name, email,
//     the roles of the roles claim) is recorded with a new playground
//     session, whose cookie is set as for a sign-in with the token.

const (
	pgOIDCCookie = "agent_playground_oidc"
	pgOIDCTTL    = 10 * time.Minute
)

// pgLogin is a login in flight, as its cookie carries it.
type pgLogin struct {
	State    string `json:"state"`
	Verifier string `json:"verifier"`
	Nonce    string `json:"nonce"`
	Expires  int64  `json:"exp"` // Unix seconds
}

// loginCookie is l's cookie value: its JSON, base64url, a dot and its MAC.
func (pg *playground) loginCookie(l pgLogin) string {
	b, _ := json.Marshal(l)
	body := base64.RawURLEncoding.EncodeToString(b)
	return body + "." + pg.loginMAC(body)
}

func (pg *playground) loginMAC(body string) string {
	m := hmac.New(sha256.New, pg.loginKey[:])
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// readLogin checks a login cookie's MAC and expiry and returns its login.
func (pg *playground) readLogin(value string) (pgLogin, bool) {
	body, mac, ok := strings.Cut(value, ".")
	if !ok || len(value) > 4096 || !hmac.Equal([]byte(mac), []byte(pg.loginMAC(body))) {
		return pgLogin{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	var l pgLogin
	if err != nil || json.Unmarshal(raw, &l) != nil || l.State == "" || l.Verifier == "" || time.Now().Unix() > l.Expires {
		return pgLogin{}, false
	}
	return l, true
}

// oidcSignIn reports whether the playground offers a sign-in with the
// issuer.
func (s *Server) oidcSignIn() bool { return s.oidc != nil && s.oidc.o.ClientID != "" }

// signinOIDCLink is the sign-in page's link to the issuer's sign-in, or
// nothing.
func (s *Server) signinOIDCLink() []byte {
	if !s.oidcSignIn() {
		return nil
	}
	return []byte(`<p class="oidc"><a id="signin-oidc" href="oidc/login">Sign in with ` + html.EscapeString(s.oidc.o.Issuer) + `</a></p>`)
}

// callbackURL is the callback's absolute URL: under the public URL when
// the host has one, else the request's own scheme and host (the issuer
// only redirects to a URL registered for the client).
func (s *Server) callbackURL(r *http.Request) string {
	path := s.pg.base + "/playground/oidc/callback"
	if s.publicURL != "" {
		return s.publicURL + path
	}
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	return scheme + "://" + r.Host + path
}

func (s *Server) oauthConfig(ctx context.Context, r *http.Request) (*oauth2.Config, *oidcDiscovery, error) {
	d, err := s.oidc.discover(ctx, s.mcpResource())
	if err != nil {
		return nil, nil, err
	}
	return &oauth2.Config{ClientID: s.oidc.o.ClientID, Endpoint: d.endpoint, RedirectURL: s.callbackURL(r),
		Scopes: []string{oidc.ScopeOpenID, "profile", "email"}}, d, nil
}

// oidcLogin starts a sign-in with the issuer.
func (s *Server) oidcLogin(w http.ResponseWriter, r *http.Request) {
	cfg, _, err := s.oauthConfig(r.Context(), r)
	if err != nil {
		s.pgSignInError(w, http.StatusServiceUnavailable, "the OIDC issuer cannot be reached: "+err.Error())
		return
	}
	l := pgLogin{State: rand.Text(), Nonce: rand.Text(), Verifier: oauth2.GenerateVerifier(), Expires: time.Now().Add(pgOIDCTTL).Unix()}
	http.SetCookie(w, &http.Cookie{Name: pgOIDCCookie, Value: s.pg.loginCookie(l), Path: s.pg.base + "/playground/oidc/", MaxAge: int(pgOIDCTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"})
	pgRedirect(w, cfg.AuthCodeURL(l.State, oauth2.S256ChallengeOption(l.Verifier), oidc.Nonce(l.Nonce)))
}

// oidcCallback ends a sign-in with the issuer.
func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		s.pgSignInError(w, http.StatusUnauthorized, "the issuer refused the sign-in: "+clean(e)+" "+clean(q.Get("error_description")))
		return
	}
	state, code := q.Get("state"), q.Get("code")
	var login pgLogin
	ok := false
	if c, err := r.Cookie(pgOIDCCookie); err == nil {
		login, ok = s.pg.readLogin(c.Value)
	}
	if state == "" || code == "" || !ok || !hmac.Equal([]byte(login.State), []byte(state)) {
		s.pgSignInError(w, http.StatusBadRequest, "this sign-in was not started in this browser, or it expired: start again")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: pgOIDCCookie, Path: s.pg.base + "/playground/oidc/", MaxAge: -1, HttpOnly: true})
	cfg, d, err := s.oauthConfig(r.Context(), r)
	if err != nil {
		s.pgSignInError(w, http.StatusServiceUnavailable, "the OIDC issuer cannot be reached: "+err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(r.Context(), s.oidc.o.HTTPClient), s.oidc.o.FetchTimeout)
	defer cancel()
	tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(login.Verifier))
	if err != nil {
		s.pgSignInError(w, http.StatusUnauthorized, "exchanging the code at the issuer: "+err.Error())
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		s.pgSignInError(w, http.StatusUnauthorized, "the issuer answered without an ID token")
		return
	}
	p, _, _, nonce, err := s.oidc.check(ctx, d.client, raw)
	if err == nil && !hmac.Equal([]byte(nonce), []byte(login.Nonce)) {
		err = errors.New("the ID token's nonce is not this sign-in's")
	}
	if err != nil {
		s.logger.Warn("refused a playground sign-in with the OIDC issuer", "err", err)
		s.pgSignInError(w, http.StatusUnauthorized, "the ID token was refused: "+err.Error())
		return
	}
	s.openPlaygroundSession(w, r, pgRecord{Principal: &pgPrincipal{ID: p.ID, Name: p.Name, Email: p.Email, Roles: p.Roles}}, p, PlaygroundTTL)
}

// pgSignInError answers a failed sign-in with the issuer: the sign-in page
// with the reason.
func (s *Server) pgSignInError(w http.ResponseWriter, status int, msg string) {
	page := strings.Replace(string(s.pg.signin), `<p id="signin-error" hidden class="error">Wrong token or key.</p>`,
		`<p id="signin-error" class="error">`+html.EscapeString(msg)+`</p>`, 1)
	pgHTML(w, status, []byte(page))
}

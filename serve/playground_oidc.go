package serve

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/agentsdk/agentsdk/tool"
)

// Signing in to the playground with the OIDC issuer (OIDCOptions.ClientID
// set): the authorization code flow with PKCE (S256), as a public client.
//
//   - GET /<slug>/playground/oidc/login makes a state, a PKCE verifier
//     and a nonce, records them in the agent's KV under
//     playground/oidc/<SHA-256 of the state> for ten minutes (so that the
//     callback may reach any host of the agent), sets a cookie holding the
//     state (SameSite=Lax, so that it comes back with the issuer's
//     redirect, and only to the callback's path), and sends the browser
//     to the issuer's authorization endpoint.
//   - GET /<slug>/playground/oidc/callback takes the code: the state must
//     be the cookie's (a login started in another browser, or by a page
//     of another site, is refused) and recorded (each once: the record is
//     deleted as it is read); the code is exchanged with the verifier;
//     the ID token is checked as any token (signature, iss, exp, nbf) with
//     the client as its audience, and its nonce must be the recorded one.
//     Its principal (oidc:<sub>, name, email, the roles of the roles claim)
//     is recorded with a new playground session, whose cookie is set as
//     for a sign-in with the token.

const (
	pgOIDCKVPrefix = "playground/oidc/"
	pgOIDCCookie   = "agent_playground_oidc"
	pgOIDCTTL      = 10 * time.Minute
)

// pgLogin is a login in flight, as the KV records it.
type pgLogin struct {
	Verifier string `json:"verifier"`
	Nonce    string `json:"nonce"`
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
	state, nonce, verifier := rand.Text(), rand.Text(), oauth2.GenerateVerifier()
	rec, _ := json.Marshal(pgLogin{Verifier: verifier, Nonce: nonce})
	if _, err := s.pg.kv.Set(r.Context(), loginKey(state), rec, &tool.KVSetOptions{TTL: pgOIDCTTL}); err != nil {
		s.pgSignInError(w, http.StatusInternalServerError, "recording the sign-in: "+err.Error())
		return
	}
	http.SetCookie(w, &http.Cookie{Name: pgOIDCCookie, Value: state, Path: s.pg.base + "/playground/oidc/", MaxAge: int(pgOIDCTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"})
	pgRedirect(w, cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce)))
}

func loginKey(state string) string {
	sum := sha256.Sum256([]byte(state))
	return pgOIDCKVPrefix + hex.EncodeToString(sum[:])
}

// oidcCallback ends a sign-in with the issuer.
func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		s.pgSignInError(w, http.StatusUnauthorized, "the issuer refused the sign-in: "+clean(e)+" "+clean(q.Get("error_description")))
		return
	}
	state, code := q.Get("state"), q.Get("code")
	c, err := r.Cookie(pgOIDCCookie)
	if state == "" || code == "" || err != nil || !hmac.Equal([]byte(c.Value), []byte(state)) {
		s.pgSignInError(w, http.StatusBadRequest, "this sign-in was not started in this browser (or its cookie expired): start again")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: pgOIDCCookie, Path: s.pg.base + "/playground/oidc/", MaxAge: -1, HttpOnly: true})
	login, err := s.takeLogin(r.Context(), state)
	if err != nil {
		s.pgSignInError(w, http.StatusBadRequest, err.Error())
		return
	}
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

// takeLogin reads and deletes the login of state: each is used once.
func (s *Server) takeLogin(ctx context.Context, state string) (pgLogin, error) {
	key := loginKey(state)
	v, err := s.pg.kv.Get(ctx, key)
	if errors.Is(err, tool.ErrKeyNotFound) {
		return pgLogin{}, errors.New("this sign-in is unknown, used already or expired: start again")
	}
	if err != nil {
		return pgLogin{}, fmt.Errorf("reading the sign-in: %w", err)
	}
	if err := s.pg.kv.Delete(ctx, key); err != nil {
		return pgLogin{}, fmt.Errorf("ending the sign-in: %w", err)
	}
	var l pgLogin
	if json.Unmarshal(v.Value, &l) != nil || l.Verifier == "" {
		return pgLogin{}, errors.New("the sign-in's record is damaged: start again")
	}
	return l, nil
}

// pgSignInError answers a failed sign-in with the issuer: the sign-in page
// with the reason.
func (s *Server) pgSignInError(w http.ResponseWriter, status int, msg string) {
	page := strings.Replace(string(s.pg.signin), `<p id="signin-error" hidden class="error">Wrong token or key.</p>`,
		`<p id="signin-error" class="error">`+html.EscapeString(msg)+`</p>`, 1)
	pgHTML(w, status, []byte(page))
}

package serve

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// The playground is a web UI on the host: one page at /<slug>/ (sessions
// and their trajectories, approvals, tools with forms made from their
// schemas, evals), its script and style sheet, and a sign-in page, all
// embedded in the binary. The page calls the API under /<slug>/v1 with a
// cookie in place of the bearer token:
//
//   - Signing in posts the host's token (compared in constant time) to
//     /<slug>/playground/signin. The host then makes a random session id,
//     records it in the agent's KV under playground/sessions/ (keyed by the
//     id's SHA-256, so that a tool listing the KV learns nothing it could
//     sign in with) for PlaygroundTTL, and sets the cookie <id>.<MAC>: the
//     MAC, keyed from the host's token, means a cookie is only ever one a
//     host with this token made (a KV entry a tool writes opens nothing),
//     and the KV entry means it holds on every host of the agent until it
//     expires or someone signs out.
//   - The cookie admits the API's routes but the runner's: GET and HEAD as
//     it is, any other method only with X-CSRF-Token, the HMAC of the
//     session id under another key derived from the host's token, which
//     the page carries in a meta tag. It never admits the MCP endpoint, the
//     runner routes or the channels' routes. It is looked at only for a
//     request without an Authorization header: a bearer token, right or
//     wrong, is judged as before.
//   - Signing out deletes the KV entry: the cookie is refused from then on.

// playgroundFiles are the playground's page, script, style sheet and
// sign-in page.
//
//go:embed playground
var playgroundFiles embed.FS

const (
	// PlaygroundTTL is how long a playground sign-in lasts.
	PlaygroundTTL = 12 * time.Hour
	// PlaygroundCookie names the playground's session cookie.
	PlaygroundCookie = "agent_playground"
	// CSRFHeader carries the playground's CSRF token on the requests the
	// page makes with its cookie that change anything.
	CSRFHeader = "X-CSRF-Token"

	playgroundKVPrefix = "playground/sessions/"
	playgroundCSP      = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	csrfPlaceholder    = "{{csrf}}"
	maxSigninBody      = 8 << 10
)

// playground is the server's web UI.
type playground struct {
	kv         tool.KV
	base       string   // /<slug>
	sessionKey [32]byte // keys the cookies' MACs
	csrfKey    [32]byte // keys the CSRF tokens
	loginKey   [32]byte // keys the cookies of sign-ins with the OIDC issuer (playground_oidc.go)
	tokenHash  [32]byte // the host token's SHA-256, compared with the posted one's

	pageHead, pageTail   []byte // the page, around its CSRF token
	signin, signinFailed []byte
	assets               map[string]pgAsset // by pattern
	// cookieRoutes are the patterns the cookie admits: the API's routes
	// but the public and the runner's, and sign-out.
	cookieRoutes map[string]bool
}

type pgAsset struct {
	body        []byte
	contentType string
	etag        string
}

// mountPlayground mounts the playground's routes. The page, the sign-in
// page and form, and the assets are public in the admission's sense: the
// page's handler checks the cookie itself and sends a request without a
// valid one to the sign-in page (303) rather than answering 401.
func (s *Server) mountPlayground(known *http.ServeMux) error {
	read := func(name string) ([]byte, error) { return playgroundFiles.ReadFile("playground/" + name) }
	base := "/" + s.slug
	pg := &playground{kv: s.host.Handle().Host.KV, base: base, assets: map[string]pgAsset{}, cookieRoutes: map[string]bool{}}
	pg.sessionKey = sha256.Sum256(append([]byte("agent-sdk playground session\x00"), s.token...))
	pg.csrfKey = sha256.Sum256(append([]byte("agent-sdk playground csrf\x00"), s.token...))
	pg.loginKey = sha256.Sum256(append([]byte("agent-sdk playground oidc login\x00"), s.token...))
	pg.tokenHash = sha256.Sum256(s.token)

	index, err := read("index.html")
	if err != nil {
		return fmt.Errorf("playground: %w", err)
	}
	slug := html.EscapeString(s.slug)
	index = bytes.ReplaceAll(bytes.ReplaceAll(index, []byte("{{base}}"), []byte(html.EscapeString(base))), []byte("{{slug}}"), []byte(slug))
	head, tail, ok := bytes.Cut(index, []byte(csrfPlaceholder))
	if !ok {
		return errors.New("playground: index.html has no " + csrfPlaceholder)
	}
	pg.pageHead, pg.pageTail = head, tail
	signin, err := read("signin.html")
	if err != nil {
		return fmt.Errorf("playground: %w", err)
	}
	pg.signin = bytes.ReplaceAll(bytes.ReplaceAll(signin, []byte("{{slug}}"), []byte(slug)), []byte("{{oidc}}"), s.signinOIDCLink())
	pg.signinFailed = bytes.Replace(pg.signin, []byte(`id="signin-error" hidden`), []byte(`id="signin-error"`), 1)

	get := func(p string) string { return http.MethodGet + " " + base + p }
	assets := []string{"app.js", "app.css"}
	for _, name := range assets {
		b, err := read(name)
		if err != nil {
			return fmt.Errorf("playground: %w", err)
		}
		sum := sha256.Sum256(b)
		ctype := "text/javascript; charset=utf-8"
		if strings.HasSuffix(name, ".css") {
			ctype = "text/css; charset=utf-8"
		}
		pg.assets[get("/playground/"+name)] = pgAsset{body: b, contentType: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
	}
	for _, r := range api.Routes {
		if !r.Public && !strings.HasPrefix(r.Path, "/runner/") {
			pg.cookieRoutes[r.Pattern(s.slug)] = true
		}
	}
	signout := http.MethodPost + " " + base + "/playground/signout"
	pg.cookieRoutes[signout] = true

	mount := func(pattern string, public bool, h http.HandlerFunc) {
		s.mux.Handle(pattern, h)
		known.Handle(pattern, h)
		s.patterns = append(s.patterns, pattern)
		if public {
			_, path, _ := strings.Cut(pattern, " ")
			path = strings.TrimSuffix(path, "{$}")
			s.public[path] = append(s.public[path], pattern)
			s.unauth.limit(pattern, maxPublicBody) // the sign-in form's, maxSigninBody; the others take none
		}
	}
	mount(get("/{$}"), true, s.playgroundPage)
	mount(get(""), true, func(w http.ResponseWriter, r *http.Request) { pgRedirect(w, base+"/") })
	mount(get("/playground/signin"), true, s.signinPage)
	mount(http.MethodPost+" "+base+"/playground/signin", true, s.signIn)
	mount(signout, false, s.signOut)
	if s.oidcSignIn() {
		mount(get("/playground/oidc/login"), true, s.oidcLogin)
		mount(get("/playground/oidc/callback"), true, s.oidcCallback)
	}
	for _, name := range assets {
		mount(get("/playground/"+name), true, s.playgroundAsset)
	}
	s.pg = pg
	return nil
}

// pgHeaders sets the headers of every playground answer.
func pgHeaders(h http.Header, contentType string) {
	h.Set("Content-Type", contentType)
	h.Set("Content-Security-Policy", playgroundCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

func pgRedirect(w http.ResponseWriter, to string) {
	pgHeaders(w.Header(), "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", to)
	w.WriteHeader(http.StatusSeeOther)
}

func pgHTML(w http.ResponseWriter, status int, parts ...[]byte) {
	pgHeaders(w.Header(), "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	w.Header().Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(status)
	for _, p := range parts {
		w.Write(p)
	}
}

// playgroundPage serves the page, with the CSRF token of the session, or
// sends a request without a valid cookie to the sign-in page.
func (s *Server) playgroundPage(w http.ResponseWriter, r *http.Request) {
	sid, ok, err := s.livePlaygroundSession(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if !ok {
		pgRedirect(w, s.pg.base+"/playground/signin")
		return
	}
	pgHTML(w, http.StatusOK, s.pg.pageHead, []byte(s.pg.csrf(sid)), s.pg.pageTail)
}

func (s *Server) playgroundAsset(w http.ResponseWriter, r *http.Request) {
	a := s.pg.assets[r.Pattern]
	pgHeaders(w.Header(), a.contentType)
	w.Header().Set("ETag", a.etag)
	w.Header().Set("Cache-Control", "no-cache")
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(http.StatusOK)
	w.Write(a.body)
}

func (s *Server) signinPage(w http.ResponseWriter, r *http.Request) {
	if _, ok, _ := s.livePlaygroundSession(r); ok {
		pgRedirect(w, s.pg.base+"/")
		return
	}
	pgHTML(w, http.StatusOK, s.pg.signin)
}

// signIn takes the sign-in form: the host's token, as token. A right one
// opens a session and sets its cookie; a wrong one is 401, the form again.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		pgHeaders(w.Header(), "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte("sign-in refused: the form was posted from another origin\n"))
		return
	}
	body, err := s.readBody(w, r)
	if err == nil && len(body) > maxSigninBody {
		err = api.AsError(&http.MaxBytesError{Limit: maxSigninBody})
	}
	if err != nil {
		writeError(w, err)
		return
	}
	form, _ := url.ParseQuery(string(body))
	rec, p, ok, err := s.signInPrincipal(r.Context(), strings.TrimSpace(form.Get("token")))
	if err != nil {
		writeError(w, err)
		return
	}
	if !ok {
		s.logger.Warn("refused a playground sign-in: wrong token or key", "remote", r.RemoteAddr)
		pgHTML(w, http.StatusUnauthorized, s.pg.signinFailed)
		return
	}
	s.openPlaygroundSession(w, r, rec, p, PlaygroundTTL)
}

// openPlaygroundSession records a session of rec for ttl, sets its
// cookie and sends the browser to the page.
func (s *Server) openPlaygroundSession(w http.ResponseWriter, r *http.Request, rec pgRecord, p Principal, ttl time.Duration) {
	var raw [32]byte
	rand.Read(raw[:])
	sid := base64.RawURLEncoding.EncodeToString(raw[:])
	now := time.Now().UTC()
	rec.CreatedAt, rec.ExpiresAt, rec.Remote = now, now.Add(ttl), r.RemoteAddr
	b, _ := json.Marshal(rec)
	if _, err := s.pg.kv.Set(r.Context(), s.pg.key(sid), b, &tool.KVSetOptions{TTL: ttl}); err != nil {
		writeError(w, api.Errorf(api.CodeInternal, "recording the playground session: %w", err))
		return
	}
	s.logger.Info("signed in to the playground", "principal", p.ID, "remote", r.RemoteAddr)
	s.auditSignIn(r, api.AuditSignIn, sid, p)
	http.SetCookie(w, s.pg.cookie(r, sid+"."+s.pg.mac(sid), int(ttl/time.Second)))
	pgRedirect(w, s.pg.base+"/")
}

// signOut ends the request's playground session (the cookie admitted the
// request, with its CSRF token) and clears the cookie.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	for _, c := range r.CookiesNamed(PlaygroundCookie) {
		if sid, ok := s.pg.verify(c.Value); ok {
			if err := s.pg.kv.Delete(r.Context(), s.pg.key(sid)); err != nil {
				writeError(w, api.Errorf(api.CodeInternal, "ending the playground session: %w", err))
				return
			}
			s.auditSignIn(r, api.AuditSignOut, sid, principalOf(r))
		}
	}
	http.SetCookie(w, s.pg.cookie(r, "", -1))
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, api.OKResponse{OK: true})
}

// cookie is the session cookie with value, for maxAge seconds (negative:
// deleted).
func (pg *playground) cookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: PlaygroundCookie, Value: value, Path: pg.base + "/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"}
}

// sameOrigin reports whether a form post may come from a page of this
// host: by Sec-Fetch-Site when the browser sends it, else by Origin when
// it names one (a page with Referrer-Policy no-referrer, as the
// playground's, posts Origin: null; a client that is not a browser sends
// neither).
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

func (pg *playground) key(sid string) string {
	sum := sha256.Sum256([]byte(sid))
	return playgroundKVPrefix + hex.EncodeToString(sum[:])
}

func (pg *playground) mac(sid string) string {
	m := hmac.New(sha256.New, pg.sessionKey[:])
	m.Write([]byte(sid))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrf is the session's CSRF token.
func (pg *playground) csrf(sid string) string {
	m := hmac.New(sha256.New, pg.csrfKey[:])
	m.Write([]byte(sid))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verify checks a cookie's MAC and returns its session id.
func (pg *playground) verify(value string) (string, bool) {
	sid, mac, ok := strings.Cut(value, ".")
	if !ok || len(sid) != 43 || len(mac) != 43 {
		return "", false
	}
	return sid, hmac.Equal([]byte(mac), []byte(pg.mac(sid)))
}

// livePlaygroundSession returns the session of r's cookie: a cookie with
// a valid MAC whose session is recorded (not expired, not signed out) and,
// opened with a key, whose key is still usable. An error is the store's.
func (s *Server) livePlaygroundSession(r *http.Request) (string, bool, error) {
	sid, rec, ok, err := s.pg.sessionRecord(r)
	if err != nil || !ok {
		return "", false, err
	}
	if _, ok, err = s.sessionPrincipal(r.Context(), rec); err != nil || !ok {
		return "", false, err
	}
	return sid, true, nil
}

// sessionRecord is session with the session's record.
func (pg *playground) sessionRecord(r *http.Request) (string, pgRecord, bool, error) {
	for _, c := range r.CookiesNamed(PlaygroundCookie) {
		sid, ok := pg.verify(c.Value)
		if !ok {
			continue
		}
		v, err := pg.kv.Get(r.Context(), pg.key(sid))
		switch {
		case errors.Is(err, tool.ErrKeyNotFound):
			continue
		case err != nil:
			return "", pgRecord{}, false, api.Errorf(api.CodeInternal, "checking the playground session: %w", err)
		}
		return sid, decodeRecord(v.Value), true, nil
	}
	return "", pgRecord{}, false, nil
}

// cookieAdmits reports whether the playground's cookie admits r, which has
// no valid bearer token, and as whom: r has no Authorization header, is
// for a route the cookie opens, and carries a cookie of a live session
// (opened with a key that is still usable); and, unless r is a GET or
// HEAD, the session's CSRF token. A valid cookie without that token is
// the error (403), as is a store that cannot be read.
func (s *Server) cookieAdmits(r *http.Request) (Principal, bool, error) {
	if s.pg == nil || r.Header["Cookie"] == nil || r.Header["Authorization"] != nil {
		return Principal{}, false, nil
	}
	if _, pattern := s.mux.Handler(r); !s.pg.cookieRoutes[pattern] {
		return Principal{}, false, nil
	}
	sid, rec, ok, err := s.pg.sessionRecord(r)
	if err != nil || !ok {
		return Principal{}, false, err
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead &&
		!hmac.Equal([]byte(r.Header.Get(CSRFHeader)), []byte(s.pg.csrf(sid))) {
		return Principal{}, false, api.Errorf(api.CodeForbidden, "a %s with the playground's cookie needs the page's CSRF token in %s", r.Method, CSRFHeader)
	}
	return s.sessionPrincipal(r.Context(), rec)
}

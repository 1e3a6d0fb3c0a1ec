package serve_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/channel"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// pg is a host served over HTTP (or HTTPS) for the playground's tests,
// with a client that neither follows redirects nor keeps cookies: each
// request says what it carries.
type pg struct {
	base   string // http://127.0.0.1:port
	srv    *serve.Server
	h      *host.Host
	c      *http.Client
	hooked atomic.Int32 // requests the hook channel's handlers ran
}

func servePlayground(t *testing.T, st store.Store, useTLS bool) *pg {
	t.Helper()
	p := &pg{}
	quick, _ := tool.New("quick", tool.Config{Description: "Answers at once."},
		func(ctx context.Context, call *tool.Call, in struct {
			Text string `json:"text,omitempty"`
		}) (any, error) {
			return map[string]string{"echo": in.Text}, nil
		})
	set, err := tool.NewSet(quick)
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(set, &host.Options{StateRoot: t.TempDir(), Store: st, Channels: []*channel.Channel{hookChannel(t, &p.hooked)}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(h, &serve.Options{Slug: "agent", Token: testToken, ApprovalWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	var ts *httptest.Server
	if useTLS {
		ts = httptest.NewTLSServer(srv)
	} else {
		ts = httptest.NewServer(srv)
	}
	c := ts.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.Timeout = 30 * time.Second
	t.Cleanup(func() { srv.Shutdown(); ts.Close(); h.Close() })
	p.base, p.srv, p.h, p.c = ts.URL, srv, h, c
	return p
}

// req makes one request: cookie is the playground cookie's value ("" for
// none), csrf the X-CSRF-Token ("" for none), extra any other headers.
func (p *pg) req(t *testing.T, method, path, cookie, csrf, body string, extra ...string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequest(method, p.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if cookie != "" {
		r.AddCookie(&http.Cookie{Name: serve.PlaygroundCookie, Value: cookie})
	}
	if csrf != "" {
		r.Header.Set(serve.CSRFHeader, csrf)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		r.Header.Set(extra[i], extra[i+1])
	}
	resp, err := p.c.Do(r)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, close: resp.Close, body: string(b), code: codeOf(b)}
	return a
}

// signIn posts the token and returns the sign-in's answer.
func (p *pg) signIn(t *testing.T, token string, extra ...string) answer {
	t.Helper()
	return p.req(t, "POST", "/agent/playground/signin", "", "", url.Values{"token": {token}}.Encode(),
		append([]string{"Content-Type", "application/x-www-form-urlencoded"}, extra...)...)
}

// session signs in and returns the cookie's value and the page's CSRF
// token, read from the page as a browser would.
func (p *pg) session(t *testing.T) (cookie, csrf string) {
	t.Helper()
	a := p.signIn(t, testToken)
	cookie = sessionCookie(t, a).Value
	page := p.req(t, "GET", "/agent/", cookie, "", "")
	if page.status != 200 {
		t.Fatalf("the page with the cookie: %d %s", page.status, page.body)
	}
	m := regexp.MustCompile(`<meta name="csrf-token" content="([A-Za-z0-9_-]+)">`).FindStringSubmatch(page.body)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", page.body)
	}
	if m[1] != serve.PlaygroundCSRF(p.srv, cookie) {
		t.Fatal("the page's CSRF token is not the session's")
	}
	return cookie, m[1]
}

func sessionCookie(t *testing.T, a answer) *http.Cookie {
	t.Helper()
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/agent/" {
		t.Fatalf("sign-in: %d (Location %q) %s", a.status, a.header.Get("Location"), a.body)
	}
	cookies := (&http.Response{Header: a.header}).Cookies()
	if len(cookies) != 1 || cookies[0].Name != serve.PlaygroundCookie || cookies[0].Value == "" {
		t.Fatalf("sign-in set %v", a.header["Set-Cookie"])
	}
	return cookies[0]
}

func wantHeaders(t *testing.T, what string, a answer, contentType string) {
	t.Helper()
	want := map[string]string{
		"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
		"X-Frame-Options":         "DENY",
		"Referrer-Policy":         "no-referrer",
		"X-Content-Type-Options":  "nosniff",
		"Content-Type":            contentType,
	}
	for k, v := range want {
		if got := a.header.Get(k); got != v {
			t.Errorf("%s: %s is %q, want %q", what, k, got, v)
		}
	}
}

// Signing in: a wrong token is refused (401, the form again with its error,
// no cookie); a form posted from another origin is 403; the right token
// sets the cookie (HttpOnly, SameSite=Strict, Path=/<slug>/, 12 h; Secure
// over TLS) and sends the browser to the page, which without the cookie
// sends it to the sign-in page.
func TestPlaygroundSignIn(t *testing.T) {
	p := servePlayground(t, nil, false)
	for _, path := range []string{"/agent/", "/agent"} {
		a := p.req(t, "GET", path, "", "", "")
		want := map[string]string{"/agent/": "/agent/playground/signin", "/agent": "/agent/"}[path]
		if a.status != http.StatusSeeOther || a.header.Get("Location") != want {
			t.Errorf("GET %s without the cookie: %d, Location %q; want 303 to %s", path, a.status, a.header.Get("Location"), want)
		}
	}
	a := p.req(t, "GET", "/agent/", "", "", "", "Authorization", "Bearer "+testToken)
	if a.status != http.StatusSeeOther {
		t.Errorf("the page with the bearer token but no cookie: %d; want 303 to the sign-in page", a.status)
	}
	form := p.req(t, "GET", "/agent/playground/signin", "", "", "")
	wantHeaders(t, "the sign-in page", form, "text/html; charset=utf-8")
	if form.status != 200 || !strings.Contains(form.body, `<form method="post" action="signin" id="signin-form"`) || !strings.Contains(form.body, `id="signin-error" hidden`) {
		t.Errorf("the sign-in page: %d %s", form.status, form.body)
	}
	for _, wrong := range []string{"", "wrong", testToken + "x", testToken[:len(testToken)-1], strings.ToUpper(testToken)} {
		a := p.signIn(t, wrong)
		if a.status != http.StatusUnauthorized || a.header.Get("Set-Cookie") != "" || !strings.Contains(a.body, `id="signin-error" class="error"`) {
			t.Errorf("sign-in with %q: %d, Set-Cookie %q, %s", wrong, a.status, a.header.Get("Set-Cookie"), a.body)
		}
		wantHeaders(t, "a refused sign-in", a, "text/html; charset=utf-8")
	}
	if a := p.req(t, "POST", "/agent/playground/signin", "", "", `{"token":"`+testToken+`"}`, "Content-Type", "application/json"); a.status != 401 {
		t.Errorf("sign-in with JSON: %d", a.status)
	}
	for _, from := range [][]string{{"Origin", "https://evil.example"}, {"Sec-Fetch-Site", "cross-site"}, {"Sec-Fetch-Site", "same-site"},
		{"Sec-Fetch-Site", "same-origin", "Origin", "https://evil.example"}} {
		if a := p.signIn(t, testToken, from...); a.status != http.StatusForbidden || a.header.Get("Set-Cookie") != "" {
			t.Errorf("sign-in posted with %q: %d, Set-Cookie %q", from, a.status, a.header.Get("Set-Cookie"))
		}
	}
	// A browser posting the form from the sign-in page (Referrer-Policy
	// no-referrer: Origin null).
	sessionCookie(t, p.signIn(t, testToken, "Origin", "null", "Sec-Fetch-Site", "same-origin"))
	c := sessionCookie(t, p.signIn(t, testToken, "Origin", p.base))
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/agent/" || c.MaxAge != int(serve.PlaygroundTTL/time.Second) || c.Secure {
		t.Errorf("cookie over HTTP: %+v", c)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{43}\.[A-Za-z0-9_-]{43}$`).MatchString(c.Value) {
		t.Errorf("cookie value %q", c.Value)
	}
	if again := sessionCookie(t, p.signIn(t, testToken)); again.Value == c.Value {
		t.Error("two sign-ins got the same session")
	}
	if a := p.req(t, "GET", "/agent/playground/signin", c.Value, "", ""); a.status != http.StatusSeeOther || a.header.Get("Location") != "/agent/" {
		t.Errorf("the sign-in page when signed in: %d %q", a.status, a.header.Get("Location"))
	}

	page := p.req(t, "GET", "/agent/", c.Value, "", "")
	wantHeaders(t, "the page", page, "text/html; charset=utf-8")
	if page.status != 200 || page.header.Get("Cache-Control") != "no-store" || !strings.Contains(page.body, `<meta name="agent-base" content="/agent">`) ||
		!strings.Contains(page.body, `<script src="playground/app.js" defer></script>`) {
		t.Errorf("the page: %d %v\n%s", page.status, page.header, page.body)
	}

	s := servePlayground(t, nil, true)
	sc := sessionCookie(t, s.signIn(t, testToken))
	if !sc.Secure || !sc.HttpOnly || sc.SameSite != http.SameSiteStrictMode || sc.Path != "/agent/" {
		t.Errorf("cookie over HTTPS: %+v", sc)
	}
}

// The cookie stands in for the bearer token on the API: GETs as they are,
// anything else only with the session's CSRF token (else 403 forbidden and
// the connection closed); a cookie with a wrong MAC is 401; a request with
// an Authorization header is judged by it alone, as before.
func TestPlaygroundCookieOnAPI(t *testing.T) {
	p := servePlayground(t, nil, false)
	cookie, csrf := p.session(t)
	other, otherCSRF := p.session(t)

	for _, path := range []string{"/agent/v1/tools", "/agent/v1/sessions", "/agent/v1/approvals?status=pending", "/agent/v1/openapi.json"} {
		if a := p.req(t, "GET", path, cookie, "", ""); a.status != 200 {
			t.Errorf("GET %s with the cookie: %d %s", path, a.status, a.body)
		}
	}
	call := `{"input":{"text":"<script>alert(1)</script>"}}`
	for _, bad := range []string{"", "wrong", otherCSRF, csrf + "x", strings.ToUpper(csrf)} {
		a := p.req(t, "POST", "/agent/v1/tools/quick", cookie, bad, call)
		if a.status != http.StatusForbidden || a.code != string(api.CodeForbidden) || !a.close {
			t.Errorf("POST with the cookie and X-CSRF-Token %q: %d %s (close %v)", bad, a.status, a.body, a.close)
		}
	}
	a := p.req(t, "POST", "/agent/v1/tools/quick", cookie, csrf, call)
	var out api.CallResponse
	if a.status != 200 || json.Unmarshal([]byte(a.body), &out) != nil || out.IsError || !strings.Contains(string(out.Result), "alert(1)") {
		t.Errorf("POST with the cookie and its CSRF token: %d %s", a.status, a.body)
	}
	if a := p.req(t, "POST", "/agent/v1/tools/quick", other, otherCSRF, call); a.status != 200 {
		t.Errorf("another session with its own CSRF token: %d %s", a.status, a.body)
	}
	created := p.req(t, "POST", "/agent/v1/session", cookie, csrf, `{}`)
	var sess api.TurnStartedResponse
	if created.status != 201 || json.Unmarshal([]byte(created.body), &sess) != nil {
		t.Fatalf("creating a session with the cookie: %d %s", created.status, created.body)
	}
	if a := p.req(t, "GET", "/agent/v1/session/"+sess.SessionID+"/events?follow=false", cookie, "", ""); a.status != 200 {
		t.Errorf("stored events with the cookie: %d %s", a.status, a.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, _ := http.NewRequestWithContext(ctx, "GET", p.base+"/agent/v1/session/"+sess.SessionID+"/events", nil)
	r.AddCookie(&http.Cookie{Name: serve.PlaygroundCookie, Value: cookie})
	r.Header.Set("Last-Event-ID", "0")
	resp, err := p.c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := readLine(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || line != "id: 1" {
		t.Errorf("the event stream with the cookie: %d %v, first line %q", resp.StatusCode, resp.Header, line)
	}

	sid, _, _ := strings.Cut(cookie, ".")
	_, otherMAC, _ := strings.Cut(other, ".")
	first := "x" // the cookie with its first character changed
	if cookie[0] == 'x' {
		first = "y"
	}
	for _, forged := range []string{sid, sid + ".", sid + "." + otherMAC, first + cookie[1:], cookie + "x"} {
		if a := p.req(t, "GET", "/agent/v1/tools", forged, "", ""); a.status != 401 || a.code != "unauthorized" {
			t.Errorf("GET with cookie %q: %d %s", forged, a.status, a.body)
		}
	}
	// An Authorization header is judged alone: a wrong one is 401 with the
	// cookie; the right one works without it, and without a CSRF token.
	for _, auth := range []string{"Bearer wrong", "Bearer " + testToken + "x", "Basic " + testToken} {
		if a := p.req(t, "GET", "/agent/v1/tools", cookie, csrf, "", "Authorization", auth); a.status != 401 {
			t.Errorf("the cookie with Authorization %q: %d", auth, a.status)
		}
	}
	if a := p.req(t, "POST", "/agent/v1/tools/quick", "", "", call, "Authorization", "Bearer "+testToken); a.status != 200 {
		t.Errorf("the bearer token: %d %s", a.status, a.body)
	}
	if a := p.req(t, "POST", "/agent/v1/tools/quick", cookie, "wrong", call, "Authorization", "Bearer "+testToken); a.status != 200 {
		t.Errorf("the bearer token, with a cookie and a wrong CSRF token: %d %s", a.status, a.body)
	}
	if a := p.req(t, "GET", "/agent/v1/tools", "", "", ""); a.status != 401 || a.header.Get("WWW-Authenticate") == "" {
		t.Errorf("neither token nor cookie: %d %v", a.status, a.header)
	}
}

func readLine(r io.Reader) (string, error) {
	var b []byte
	one := make([]byte, 1)
	for {
		if _, err := r.Read(one); err != nil {
			return string(b), err
		}
		if one[0] == '\n' {
			return string(b), nil
		}
		b = append(b, one[0])
	}
}

// Signing out ends the session: the old cookie is refused by the API (401)
// and the page sends it to the sign-in page; another session goes on.
func TestPlaygroundSignOut(t *testing.T) {
	p := servePlayground(t, nil, false)
	cookie, csrf := p.session(t)
	other, _ := p.session(t)
	if a := p.req(t, "POST", "/agent/playground/signout", cookie, "", ""); a.status != 403 {
		t.Errorf("sign-out without the CSRF token: %d %s", a.status, a.body)
	}
	if a := p.req(t, "POST", "/agent/playground/signout", "", "", ""); a.status != 401 {
		t.Errorf("sign-out without the cookie: %d %s", a.status, a.body)
	}
	a := p.req(t, "POST", "/agent/playground/signout", cookie, csrf, "")
	cleared := (&http.Response{Header: a.header}).Cookies()
	if a.status != 200 || len(cleared) != 1 || cleared[0].Name != serve.PlaygroundCookie || cleared[0].MaxAge >= 0 || cleared[0].Value != "" || cleared[0].Path != "/agent/" {
		t.Errorf("sign-out: %d %s, Set-Cookie %v", a.status, a.body, a.header["Set-Cookie"])
	}
	if a := p.req(t, "GET", "/agent/v1/tools", cookie, "", ""); a.status != 401 {
		t.Errorf("the API with the old cookie: %d", a.status)
	}
	if a := p.req(t, "POST", "/agent/v1/tools/quick", cookie, csrf, `{}`); a.status != 401 {
		t.Errorf("a POST with the old cookie and its CSRF token: %d", a.status)
	}
	if a := p.req(t, "GET", "/agent/", cookie, "", ""); a.status != http.StatusSeeOther || a.header.Get("Location") != "/agent/playground/signin" {
		t.Errorf("the page with the old cookie: %d %q", a.status, a.header.Get("Location"))
	}
	if a := p.req(t, "POST", "/agent/playground/signout", cookie, csrf, ""); a.status != 401 {
		t.Errorf("signing out again: %d", a.status)
	}
	if a := p.req(t, "GET", "/agent/v1/tools", other, "", ""); a.status != 200 {
		t.Errorf("another session after a sign-out: %d", a.status)
	}
}

// The cookie, even with its CSRF token, opens the API's routes but the
// runner's, and sign-out: never the MCP endpoint, the runner routes, a
// channel's routes or anything else the server mounts. Every mounted
// pattern is walked.
func TestPlaygroundCookieScope(t *testing.T) {
	p := servePlayground(t, nil, false)
	cookie, csrf := p.session(t)
	opens := map[string]bool{"POST /agent/playground/signout": true}
	for _, r := range api.Routes {
		if !r.Public && !strings.HasPrefix(r.Path, "/runner/") {
			opens[r.Pattern("agent")] = true
		}
	}
	mounted := serve.MountedPatterns(p.srv)
	for _, want := range []string{"POST /agent/mcp", "GET /agent/mcp", "POST /agent/v1/runner/claim", "GET /agent/channels/hook/items/{id}"} {
		if !slices.Contains(mounted, want) {
			t.Fatalf("%s is not mounted: %v", want, mounted)
		}
	}
	for _, pattern := range mounted {
		if serve.Public(p.srv, pattern) || serve.Verified(p.srv, pattern) {
			continue // admitted without credentials; their own handlers decide
		}
		method, path := concrete(pattern)
		methods := []string{method}
		paths := []string{path}
		if method == "" {
			methods, paths = []string{"GET", "POST"}, []string{"/agent/v1/nothing", "/agent/nothing", "/", "/agent/playground/x"}
		}
		for _, m := range methods {
			for _, path := range paths {
				body := ""
				if m == "POST" {
					body = `{}`
				}
				a := p.req(t, m, path, cookie, csrf, body, "Accept", "application/json, text/event-stream", "Content-Type", "application/json")
				if opened := a.status != 401; opened != opens[pattern] {
					t.Errorf("%s %s (%s) with the cookie and its CSRF token: %d %s; want admitted %v", m, path, pattern, a.status, a.body, opens[pattern])
				}
			}
		}
	}
	// Unclean paths are judged by the route they lead to.
	for _, path := range []string{"/agent/v1/x/../runner/claim", "/agent/v1/./runner/claim", "/agent/./mcp", "/agent/v1/../mcp"} {
		if a := p.req(t, "POST", path, cookie, csrf, `{}`); a.status != 401 {
			t.Errorf("POST %s with the cookie: %d %s", path, a.status, a.body)
		}
	}
	if p.hooked.Load() != 0 {
		t.Errorf("a channel handler ran %d times for the cookie", p.hooked.Load())
	}
}

// Sessions live in the agent's KV, so a sign-in holds on every host of the
// agent and a sign-out on one ends it on all; the KV holds the session id's
// hash only, and an entry a tool writes there opens nothing without the
// cookie's MAC.
func TestPlaygroundSessionsAcrossHosts(t *testing.T) {
	db := filepath.Join(t.TempDir(), "agent.db")
	open := func() store.Store {
		st, err := sqlite.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	a, b := servePlayground(t, open(), false), servePlayground(t, open(), false)
	cookie, csrf := a.session(t)
	if r := b.req(t, "POST", "/agent/v1/tools/quick", cookie, csrf, `{}`); r.status != 200 {
		t.Errorf("host B with host A's cookie: %d %s", r.status, r.body)
	}
	kv := a.h.Handle().Host.KV
	entries, _, err := kv.List(context.Background(), "playground/", nil)
	if err != nil || len(entries) != 1 {
		t.Fatalf("KV entries under playground/: %v %v", entries, err)
	}
	sid, _, _ := strings.Cut(cookie, ".")
	e := entries[0]
	if strings.Contains(e.Key, sid) || strings.Contains(string(e.Value), sid) || !strings.HasPrefix(e.Key, "playground/sessions/") ||
		e.ExpiresAt == nil || time.Until(*e.ExpiresAt) > serve.PlaygroundTTL || time.Until(*e.ExpiresAt) < serve.PlaygroundTTL-time.Minute {
		t.Errorf("the KV entry: %s = %s (expires %v)", e.Key, e.Value, e.ExpiresAt)
	}
	// A session id of a tool's making, recorded as the host records one:
	// without the MAC, no cookie opens it.
	forged := strings.Repeat("A", 43)
	sum := sha256.Sum256([]byte(forged))
	if _, err := kv.Set(context.Background(), "playground/sessions/"+hex.EncodeToString(sum[:]), e.Value, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{forged + "." + strings.Repeat("B", 43), sid + "." + strings.Repeat("B", 43)} {
		if r := a.req(t, "GET", "/agent/v1/tools", c, "", ""); r.status != 401 {
			t.Errorf("a forged cookie %q: %d", c, r.status)
		}
	}
	if r := b.req(t, "POST", "/agent/playground/signout", cookie, csrf, ""); r.status != 200 {
		t.Fatalf("sign-out on host B: %d %s", r.status, r.body)
	}
	if r := a.req(t, "GET", "/agent/v1/tools", cookie, "", ""); r.status != 401 {
		t.Errorf("host A after the sign-out on host B: %d", r.status)
	}
}

// The page, its script and its style sheet are embedded, served with their
// content types, revalidated by ETag, and small; the script never puts
// text in the page as HTML, and the pages hold no inline script or style
// (the policy would refuse them).
func TestPlaygroundAssets(t *testing.T) {
	p := servePlayground(t, nil, false)
	cookie, _ := p.session(t)
	total := 0
	for _, tt := range []struct{ path, ctype, cookie string }{
		{"/agent/", "text/html; charset=utf-8", cookie},
		{"/agent/playground/app.js", "text/javascript; charset=utf-8", ""},
		{"/agent/playground/app.css", "text/css; charset=utf-8", ""},
		{"/agent/playground/signin", "text/html; charset=utf-8", ""},
	} {
		a := p.req(t, "GET", tt.path, tt.cookie, "", "")
		wantHeaders(t, tt.path, a, tt.ctype)
		if a.status != 200 || a.header.Get("Content-Length") != strconv.Itoa(len(a.body)) {
			t.Errorf("GET %s: %d, Content-Length %q for %d bytes", tt.path, a.status, a.header.Get("Content-Length"), len(a.body))
		}
		if tt.path != "/agent/playground/signin" {
			total += len(a.body)
		}
		t.Logf("%s: %d bytes", tt.path, len(a.body))
		if strings.HasSuffix(tt.ctype, "html; charset=utf-8") {
			if regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]|<style|\sstyle=|\son[a-z]+=`).MatchString(a.body) {
				t.Errorf("%s has inline script or style:\n%s", tt.path, a.body)
			}
		}
		if etag := a.header.Get("ETag"); strings.HasPrefix(tt.path, "/agent/playground/app.") {
			if etag == "" {
				t.Errorf("%s has no ETag", tt.path)
			}
			if r := p.req(t, "GET", tt.path, "", "", "", "If-None-Match", etag); r.status != http.StatusNotModified || r.body != "" {
				t.Errorf("%s revalidated: %d", tt.path, r.status)
			}
		}
		if tt.path == "/agent/playground/app.js" {
			for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setAttribute('style'", "srcdoc", "javascript:"} {
				if strings.Contains(a.body, sink) {
					t.Errorf("app.js uses %s", sink)
				}
			}
		}
	}
	const budget = 60 << 10
	if total > budget {
		t.Errorf("the page, its script and style sheet are %d bytes; the budget is %d", total, budget)
	}
	t.Logf("the page transfers %d bytes uncompressed (page, app.js, app.css)", total)
	if a := p.req(t, "HEAD", "/agent/playground/app.js", "", "", ""); a.status != 200 || a.body != "" {
		t.Errorf("HEAD app.js: %d", a.status)
	}
	if a := p.req(t, "GET", "/agent/playground/nothing.js", "", "", ""); a.status != 401 {
		t.Errorf("an asset that does not exist: %d", a.status)
	}
}

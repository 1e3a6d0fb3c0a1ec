package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/serve"
)

// noRedirects is a client that shows each redirect rather than
// following it, and keeps no cookies: each request says what it carries.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, u string, cookies ...*http.Cookie) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func cookieNamed(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name && c.MaxAge >= 0 {
			return c
		}
	}
	return nil
}

// Signing in to the playground with the OIDC issuer, at the HTTP level
// against the fake issuer: the sign-in page links to it; the login
// redirects to the issuer's authorization endpoint with PKCE (S256), a
// nonce and the callback under the public URL, and sets the state
// cookie; the issuer's redirect back, with that cookie, opens a
// playground session acting as oidc:alice with her roles. The callback
// without the login cookie, with another login's or a tampered one, or
// again (the issuer takes a code once), is refused.
func TestPlaygroundOIDCSignIn(t *testing.T) {
	fi := newFakeIssuer(t)
	b, public := setupOIDC(t, fi, func(o *serve.OIDCOptions) { o.ClientID = "pg-client" })

	page, err := http.Get(public + "/agent/playground/signin")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if page.StatusCode != 200 || !strings.Contains(string(body), `href="oidc/login"`) {
		t.Fatalf("the sign-in page: %d, want a link to oidc/login:\n%s", page.StatusCode, body)
	}

	login := get(t, public+"/agent/playground/oidc/login")
	to, err := url.Parse(login.Header.Get("Location"))
	if login.StatusCode != http.StatusSeeOther || err != nil || !strings.HasPrefix(to.String(), fi.URL+"/authorize?") {
		t.Fatalf("the login: %d to %q, want 303 to the issuer's authorization endpoint", login.StatusCode, login.Header.Get("Location"))
	}
	q := to.Query()
	if q.Get("client_id") != "pg-client" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" ||
		q.Get("redirect_uri") != public+"/agent/playground/oidc/callback" || !strings.Contains(q.Get("scope"), "openid") {
		t.Errorf("the authorization request: %v", q)
	}
	state := cookieNamed(login, "agent_playground_oidc")
	if state == nil || !state.HttpOnly || state.SameSite != http.SameSiteLaxMode || state.Path != "/agent/playground/oidc/" {
		t.Fatalf("the login cookie: %+v, want HttpOnly, SameSite=Lax, for the callback's path", state)
	}
	other := get(t, public+"/agent/playground/oidc/login") // another login, in another browser
	otherState := cookieNamed(other, "agent_playground_oidc")

	back := get(t, to.String())
	callback := back.Header.Get("Location")
	if back.StatusCode != http.StatusFound || !strings.HasPrefix(callback, public+"/agent/playground/oidc/callback?") {
		t.Fatalf("the issuer's redirect: %d %q", back.StatusCode, callback)
	}
	tampered := *state
	tampered.Value = strings.Replace(tampered.Value, ".", ".x", 1)
	for name, cookies := range map[string][]*http.Cookie{"no login cookie": nil, "another login's cookie": {otherState}, "a tampered cookie": {&tampered}} {
		if resp := get(t, callback, cookies...); resp.StatusCode != http.StatusBadRequest || cookieNamed(resp, serve.PlaygroundCookie) != nil {
			t.Errorf("the callback with %s: %d, want 400 and no session", name, resp.StatusCode)
		}
	}
	done := get(t, callback, state)
	session := cookieNamed(done, serve.PlaygroundCookie)
	if done.StatusCode != http.StatusSeeOther || done.Header.Get("Location") != "/agent/" || session == nil {
		t.Fatalf("the callback: %d %q, want 303 to the page with a session cookie", done.StatusCode, done.Header.Get("Location"))
	}
	if again := get(t, callback, state); again.StatusCode == http.StatusSeeOther || cookieNamed(again, serve.PlaygroundCookie) != nil {
		t.Errorf("the same callback again: %d, want it refused", again.StatusCode)
	}

	// The session acts as oidc:alice, an operator.
	req, _ := http.NewRequest("GET", public+"/agent/", nil)
	req.AddCookie(session)
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`<meta name="csrf-token" content="([A-Za-z0-9_-]+)">`).FindStringSubmatch(string(html))
	if resp.StatusCode != 200 || m == nil {
		t.Fatalf("the page with the session: %d", resp.StatusCode)
	}
	req, _ = http.NewRequest("POST", public+"/agent/v1/session", strings.NewReader(`{}`))
	req.AddCookie(session)
	req.Header.Set(serve.CSRFHeader, m[1])
	resp, err = noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var started api.TurnStartedResponse
	json.NewDecoder(resp.Body).Decode(&started)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("opening a session from the playground: %d", resp.StatusCode)
	}
	sess, err := b.st.Session(context.Background(), started.SessionID)
	if err != nil || sess.Principal != "oidc:alice" {
		t.Errorf("the playground session's principal: %q %v, want oidc:alice", sess.Principal, err)
	}

	// The audit log's sign-in names her, with her email.
	log, _, err := b.h.AuditLog(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var signins []string
	for _, e := range log {
		if e.Kind == api.AuditSignIn {
			var d api.AuditSignInDetail
			json.Unmarshal(e.Detail, &d)
			signins = append(signins, e.Principal+" "+d.Email)
		}
	}
	if len(signins) != 1 || signins[0] != "oidc:alice alice@example.com" {
		t.Errorf("the audit log's sign-ins: %q, want oidc:alice with alice@example.com", signins)
	}
}

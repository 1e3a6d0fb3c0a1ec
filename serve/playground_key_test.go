package serve_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
)

// The playground signs in with a personal API key as well as the host
// token: the page then acts as the key's principal, with its roles (a
// reader lists, but cannot open a session: 403 naming the key and its
// role) and sees only its own sessions; a wrong key is the form again;
// revoking the key ends its playground session at once, on the API and
// the page.
func TestPlaygroundKeySignIn(t *testing.T) {
	p := servePlayground(t, nil, false)
	created := p.req(t, "POST", "/agent/v1/keys", "", "", `{"name":"pat","roles":["reader"]}`, "Authorization", "Bearer "+testToken)
	var k api.KeyCreated
	if err := json.Unmarshal([]byte(created.body), &k); err != nil || created.status != 201 {
		t.Fatalf("creating a key: %d %s", created.status, created.body)
	}
	if a := p.signIn(t, "ask_aaaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"); a.status != http.StatusUnauthorized || a.header.Get("Set-Cookie") != "" {
		t.Errorf("signing in with a key the host does not have: %d, want 401 and no cookie", a.status)
	}
	if a := p.req(t, "POST", "/agent/v1/session", "", "", `{}`, "Authorization", "Bearer "+testToken); a.status != 201 {
		t.Fatalf("the token opening a session: %d", a.status)
	}

	a := p.signIn(t, k.Secret)
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/agent/" {
		t.Fatalf("signing in with the key: %d %s", a.status, a.body)
	}
	cookie := sessionCookie(t, a).Value
	page := p.req(t, "GET", "/agent/", cookie, "", "")
	m := regexp.MustCompile(`<meta name="csrf-token" content="([A-Za-z0-9_-]+)">`).FindStringSubmatch(page.body)
	if page.status != 200 || m == nil {
		t.Fatalf("the page with the key's cookie: %d", page.status)
	}
	list := p.req(t, "GET", "/agent/v1/sessions", cookie, "", "")
	var sessions api.SessionList
	if err := json.Unmarshal([]byte(list.body), &sessions); err != nil || list.status != 200 || len(sessions.Sessions) != 0 {
		t.Errorf("the key's playground lists sessions: %d %s, want 200 and none (the token's is not its)", list.status, list.body)
	}
	if a := p.req(t, "POST", "/agent/v1/session", cookie, m[1], `{}`); a.status != 403 || !strings.Contains(a.body, "pat (reader)") {
		t.Errorf("a reader's playground opening a session: %d %s, want 403 naming pat (reader)", a.status, a.body)
	}

	if a := p.req(t, "POST", "/agent/v1/keys/"+k.Key.ID+"/revoke", "", "", "", "Authorization", "Bearer "+testToken); a.status != 200 {
		t.Fatalf("revoking the key: %d", a.status)
	}
	if a := p.req(t, "GET", "/agent/v1/sessions", cookie, "", ""); a.status != 401 {
		t.Errorf("the revoked key's playground on the API: %d, want 401", a.status)
	}
	if a := p.req(t, "GET", "/agent/", cookie, "", ""); a.status != http.StatusSeeOther || a.header.Get("Location") != "/agent/playground/signin" {
		t.Errorf("the revoked key's playground page: %d %s, want 303 to the sign-in", a.status, a.header.Get("Location"))
	}
	if a := p.signIn(t, k.Secret); a.status != http.StatusUnauthorized {
		t.Errorf("signing in with the revoked key: %d, want 401", a.status)
	}
}

package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// oidcAudience is the API's audience in the OIDC tests.
const oidcAudience = "agent-api"

// setupOIDC is a host on SQLite served on loopback at its public URL,
// taking JWTs from fi (audience oidcAudience, roles from the claim
// "roles"), with the tools echo, deploy (Callers: deployer) and promote
// (needs approval), and an operator key; change adjusts the OIDC options.
func setupOIDC(t testing.TB, fi *fakeIssuer, change func(*serve.OIDCOptions)) (b *accessBundle, public string) {
	t.Helper()
	echo, _ := tool.New("echo", tool.Config{Description: "Echo."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "echoed", nil })
	deploy, _ := tool.New("deploy", tool.Config{Description: "Deploy.", Callers: []string{"deployer"}},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "deployed", nil })
	gated, _ := tool.New("promote", tool.Config{Description: "Promote.", NeedsApproval: tool.Always},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "promoted", nil })
	set, err := tool.NewSet(echo, deploy, gated)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(set, &host.Options{StateRoot: dir, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	public = "http://" + ts.Listener.Addr().String()
	o := &serve.OIDCOptions{Issuer: fi.URL, Audience: oidcAudience, RolesClaim: "roles"}
	if change != nil {
		change(o)
	}
	srv, err := serve.New(h, &serve.Options{Slug: "agent", Token: testToken, ApprovalWait: -1, Roles: deployerRoles, OIDC: o, PublicURL: public})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = srv
	ts.Start()
	t.Cleanup(func() { ts.Close(); h.Close(); st.Close() })
	b = &accessBundle{url: public + "/agent/v1", srv: srv, h: h, st: st, keys: map[string]api.KeyCreated{}}
	b.keys["operator"] = b.createKey(t, testToken, `{"name":"operator key","roles":["operator"]}`)
	return b, public
}

// with returns claims with the changes over them (a nil value deletes).
func with(claims map[string]any, changes map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range claims {
		out[k] = v
	}
	for k, v := range changes {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// Bearer JWTs: valid RS256 and ES256 tokens open the API as oidc:<sub>
// with the roles of their claim (an array or a string); an expired, a
// not-yet-valid, a wrong-audience, a wrong-issuer, an unsigned (alg none),
// an HS256 (keyed with the issuer's public key), a tampered token and one
// signed by a key the issuer does not publish are each 401 with
// WWW-Authenticate error="invalid_token"; the host token and keys keep
// working beside them.
func TestOIDCBearer(t *testing.T) {
	fi := newFakeIssuer(t)
	fi.addKey("rogue", newRSA(t), false)
	b, _ := setupOIDC(t, fi, nil)
	base := fi.claims(fi.user, oidcAudience)
	now := time.Now()
	valid := fi.sign("rsa-1", jose.RS256, base)
	tampered := strings.Split(valid, ".")
	tampered[1] = strings.TrimRight(tampered[1], "=") + "x"
	for _, c := range []struct {
		name, token string
		status      int
		msg         string
	}{
		{"RS256", valid, 200, ""},
		{"ES256", fi.sign("ec-1", jose.ES256, base), 200, ""},
		{"roles as a string", fi.sign("rsa-1", jose.RS256, with(base, map[string]any{"roles": "reader operator"})), 200, ""},
		{"expired", fi.sign("rsa-1", jose.RS256, with(base, map[string]any{"exp": now.Add(-time.Minute).Unix()})), 401, "expired"},
		{"no exp", fi.sign("rsa-1", jose.RS256, with(base, map[string]any{"exp": nil})), 401, "expired"},
		{"not yet valid", fi.sign("rsa-1", jose.RS256, with(base, map[string]any{"nbf": now.Add(time.Hour).Unix()})), 401, "nbf"},
		{"wrong audience", fi.sign("rsa-1", jose.RS256, with(base, map[string]any{"aud": "another-service"})), 401, "audience"},
		{"wrong issuer", fi.sign("rsa-1", jose.RS256, with(base, map[string]any{"iss": "https://evil.example.com"})), 401, "issued by a different provider"},
		{"alg none", unsigned(base), 401, "invalid bearer token"},
		{"HS256", fi.sign("rsa-1", jose.HS256, base), 401, "invalid bearer token"},
		{"tampered", strings.Join(tampered, "."), 401, "invalid bearer token"},
		{"unpublished key", fi.sign("rogue", jose.RS256, base), 401, "no key of the issuer"},
		{"no sub", fi.sign("rsa-1", jose.RS256, with(base, map[string]any{"sub": nil})), 401, "sub"},
		{"host token", testToken, 200, ""},
		{"API key", b.keys["operator"].Secret, 200, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", b.url+"/sessions", nil)
			req.Header.Set("Authorization", "Bearer "+c.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || !strings.Contains(string(body), c.msg) {
				t.Fatalf("%d %s, want %d with %q", resp.StatusCode, body, c.status, c.msg)
			}
			if c.status == 401 && !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
				t.Errorf("WWW-Authenticate %q, want invalid_token", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}

	// The principal: a session opened with the token is oidc:alice's, and
	// a role without a permission is named in the 403.
	got := b.do(t, "POST", "/session", valid, `{}`)
	if got.status != 201 {
		t.Fatalf("opening a session with a JWT: %d %s", got.status, got.msg)
	}
	sess, err := b.st.Session(context.Background(), got.body["sessionId"].(string))
	if err != nil || sess.Principal != "oidc:alice" {
		t.Errorf("the session's principal: %q %v, want oidc:alice", sess.Principal, err)
	}
	reader := fi.sign("ec-1", jose.ES256, with(base, map[string]any{"sub": "bob", "name": "Bob", "roles": []string{"reader"}}))
	if got := b.do(t, "POST", "/session", reader, `{}`); got.status != 403 || !strings.Contains(got.msg, "Bob (reader)") {
		t.Errorf("a reader's JWT opening a session: %d %q, want 403 naming Bob (reader)", got.status, got.msg)
	}
	if got := b.do(t, "GET", "/sessions", reader, ""); got.status != 200 || len(got.body["sessions"].([]any)) != 0 {
		t.Errorf("bob lists sessions: %d %v, want none of alice's", got.status, got.body)
	}
	nested := fi.sign("rsa-1", jose.RS256, with(base, map[string]any{"roles": nil, "realm_access": map[string]any{"roles": []string{"operator"}}}))
	if got := b.do(t, "GET", "/sessions", nested, ""); got.status != 403 {
		t.Errorf("roles claim \"roles\" absent: %d, want 403 (no roles)", got.status)
	}
}

// An OIDC principal is what a user sees of it where a decision is
// shown: a call decided with alice's token is decided by oidc:alice, on
// the call and in the audit log, whose entry carries her email.
func TestOIDCDeciderEmail(t *testing.T) {
	fi := newFakeIssuer(t)
	b, _ := setupOIDC(t, fi, nil)
	alice := fi.sign("rsa-1", jose.RS256, fi.claims(fi.user, oidcAudience))
	parked := b.do(t, "POST", "/tools/promote", testToken, `{"input":{}}`)
	if parked.status != http.StatusAccepted {
		t.Fatalf("parking a call: %d %s", parked.status, parked.raw)
	}
	call := parked.body["callId"].(string)
	got := b.do(t, "POST", "/approvals/"+call, alice, `{"approved":true}`)
	var ans api.ApprovalResponse
	if json.Unmarshal([]byte(got.raw), &ans); got.status != 200 || ans.Approval.DecidedBy != "oidc:alice" {
		t.Fatalf("alice approving with her token: %d %s, want decided by oidc:alice", got.status, got.raw)
	}
	got = b.do(t, "GET", "/audit", testToken, "")
	var log api.AuditList
	if err := json.Unmarshal([]byte(got.raw), &log); err != nil || got.status != 200 {
		t.Fatalf("reading the audit log: %d %s", got.status, got.raw)
	}
	found := false
	for _, e := range log.Entries {
		if e.Kind != api.AuditApprovalDecided || e.Subject != call {
			continue
		}
		found = true
		var d api.AuditDecision
		json.Unmarshal(e.Detail, &d)
		if e.Principal != "oidc:alice" || d.Email != "alice@example.com" || d.Status != api.ApprovalApproved {
			t.Errorf("the decision's audit entry: %s by %s, detail %s; want approved by oidc:alice with email alice@example.com", e.Kind, e.Principal, e.Detail)
		}
	}
	if !found {
		t.Errorf("no approval.decided entry for %s in %+v", call, log.Entries)
	}
}

// A dotted roles claim walks objects (Keycloak's realm_access.roles).
func TestOIDCNestedRolesClaim(t *testing.T) {
	fi := newFakeIssuer(t)
	b, _ := setupOIDC(t, fi, func(o *serve.OIDCOptions) { o.RolesClaim = "realm_access.roles" })
	tok := fi.sign("rsa-1", jose.RS256, with(fi.claims(fi.user, oidcAudience), map[string]any{"roles": nil, "realm_access": map[string]any{"roles": []string{"operator"}}}))
	if got := b.do(t, "POST", "/session", tok, `{}`); got.status != 201 {
		t.Errorf("a token with realm_access.roles [operator]: %d %s", got.status, got.msg)
	}
}

// Key rotation: a token signed by a key the issuer published after the
// host fetched its keys makes the host fetch them again, once, and is
// accepted; within the refetch interval, tokens naming unknown keys (made
// up or new) fetch nothing and are refused.
func TestOIDCKeyRotation(t *testing.T) {
	t.Run("refetched", func(t *testing.T) {
		fi := newFakeIssuer(t)
		b, _ := setupOIDC(t, fi, func(o *serve.OIDCOptions) { o.Refetch = time.Nanosecond })
		base := fi.claims(fi.user, oidcAudience)
		if got := b.do(t, "GET", "/sessions", fi.sign("rsa-1", jose.RS256, base), ""); got.status != 200 {
			t.Fatalf("before rotation: %d %s", got.status, got.msg)
		}
		if n := fi.jwksFetches.Load(); n != 1 {
			t.Fatalf("JWKS fetched %d times for the first token, want 1", n)
		}
		for range 3 {
			if got := b.do(t, "GET", "/sessions", fi.sign("ec-1", jose.ES256, base), ""); got.status != 200 {
				t.Fatalf("a known key: %d %s", got.status, got.msg)
			}
		}
		if n := fi.jwksFetches.Load(); n != 1 {
			t.Fatalf("JWKS fetched %d times after tokens of known keys, want 1 (cached)", n)
		}
		fi.addKey("rsa-2", newRSA(t), true)
		if got := b.do(t, "GET", "/sessions", fi.sign("rsa-2", jose.RS256, base), ""); got.status != 200 {
			t.Fatalf("a token of the rotated-in key: %d %s", got.status, got.msg)
		}
		if n := fi.jwksFetches.Load(); n != 2 {
			t.Errorf("JWKS fetched %d times after the rotation, want 2", n)
		}
	})
	t.Run("rate limited", func(t *testing.T) {
		fi := newFakeIssuer(t)
		b, _ := setupOIDC(t, fi, func(o *serve.OIDCOptions) { o.Refetch = time.Hour })
		base := fi.claims(fi.user, oidcAudience)
		if got := b.do(t, "GET", "/sessions", fi.sign("rsa-1", jose.RS256, base), ""); got.status != 200 {
			t.Fatalf("first token: %d %s", got.status, got.msg)
		}
		fi.addKey("rsa-2", newRSA(t), true)
		for i := range 20 {
			fi.addKey(fmt.Sprintf("made-up-%d", i), newRSA(t), false)
			if got := b.do(t, "GET", "/sessions", fi.sign(fmt.Sprintf("made-up-%d", i), jose.RS256, base), ""); got.status != 401 {
				t.Fatalf("a token of a made-up key: %d", got.status)
			}
		}
		if got := b.do(t, "GET", "/sessions", fi.sign("rsa-2", jose.RS256, base), ""); got.status != 401 {
			t.Errorf("a new key within the refetch interval: %d, want 401", got.status)
		}
		if n := fi.jwksFetches.Load(); n != 1 {
			t.Errorf("JWKS fetched %d times, want 1: unknown keys within the interval fetch nothing", n)
		}
	})
}

// An issuer that cannot be reached is 503, not a crash or a 401 that
// would send a client to sign in again; the host token still works.
func TestOIDCIssuerDown(t *testing.T) {
	fi := newFakeIssuer(t)
	b, _ := setupOIDC(t, fi, func(o *serve.OIDCOptions) { o.FetchTimeout = 2 * time.Second })
	tok := fi.sign("rsa-1", jose.RS256, fi.claims(fi.user, oidcAudience))
	fi.srv.Close()
	if got := b.do(t, "GET", "/sessions", tok, ""); got.status != 503 || !strings.Contains(got.msg, "discovery document") {
		t.Errorf("a JWT with the issuer down: %d %q, want 503 naming the discovery document", got.status, got.msg)
	}
	if got := b.do(t, "GET", "/sessions", testToken, ""); got.status != 200 {
		t.Errorf("the host token with the issuer down: %d", got.status)
	}
}

// An issuer whose discovery document or key set never comes: a request
// with its token is refused when the fetch times out (the issuer still
// has not answered), 503 unhealthy naming what could not be read — not
// hung, and not a 401 that would send the client to sign in again, also
// for the tokens that come after it; meanwhile the host answers requests
// with its token and keys.
func TestOIDCIssuerHangs(t *testing.T) {
	for _, c := range []struct{ name, path, says string }{
		{"discovery", "/.well-known/openid-configuration", "discovery document"},
		{"JWKS", "/jwks", "keys could not be fetched"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fi := newFakeIssuer(t)
			arrived := fi.hangOn(c.path)
			b, _ := setupOIDC(t, fi, func(o *serve.OIDCOptions) { o.FetchTimeout = time.Second })
			tok := fi.sign("rsa-1", jose.RS256, fi.claims(fi.user, oidcAudience))
			answer := make(chan apiAnswer, 1)
			go func() {
				a, err := sendAPI(b.url, "GET", "/sessions", tok, "")
				if err != nil {
					a.msg = err.Error()
				}
				answer <- a
			}()
			select {
			case <-arrived:
			case a := <-answer:
				t.Fatalf("the JWT was answered before the host asked for %s: %d %s", c.path, a.status, a.raw)
			}
			// The fetch hangs: the host serves others meanwhile.
			for who, token := range map[string]string{"the host token": testToken, "a key": b.keys["operator"].Secret} {
				if got := b.do(t, "GET", "/sessions", token, ""); got.status != 200 {
					t.Errorf("%s while the issuer hangs: %d %s", who, got.status, got.raw)
				}
			}
			a := <-answer
			if a.status != 503 || a.code != "unhealthy" || !strings.Contains(a.msg, c.says) {
				t.Errorf("a JWT with the issuer's %s hanging: %d %s %q, want 503 unhealthy saying %q", c.name, a.status, a.code, a.msg, c.says)
			}
			again := b.do(t, "GET", "/sessions", tok, "")
			if again.status != 503 || again.code != "unhealthy" {
				t.Errorf("the next JWT: %d %s %q, want 503 unhealthy as the first", again.status, again.code, again.msg)
			}
		})
	}
}

// A misconfigured OIDC is refused when the server is made.
func TestOIDCOptionsChecked(t *testing.T) {
	h, err := host.New(mustSet(t), &host.Options{StateRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []serve.OIDCOptions{
		{Issuer: "http://issuer.example.com", Audience: "a"},
		{Issuer: "https://issuer.example.com"},
		{Issuer: "not a url", Audience: "a"},
	} {
		if _, err := serve.New(h, &serve.Options{Slug: "agent", Token: testToken, OIDC: &o}); err == nil {
			t.Errorf("serve.New with %+v: no error", o)
		}
	}
}

func mustSet(t *testing.T) *tool.Set {
	echo, _ := tool.New("echo", tool.Config{Description: "Echo."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "echoed", nil })
	set, err := tool.NewSet(echo)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// decodeJSON reads a JSON answer into v.
func decodeJSON(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// A verified token is remembered (the JWKS is not read again, and the
// answer is the same), but never past its exp: the same token is refused
// from the second its exp passes.
func TestOIDCTokenNotCachedPastExp(t *testing.T) {
	fi := newFakeIssuer(t)
	b, _ := setupOIDC(t, fi, nil)
	exp := time.Now().Add(2 * time.Second).Truncate(time.Second)
	tok := fi.sign("rsa-1", jose.RS256, with(fi.claims(fi.user, oidcAudience), map[string]any{"exp": exp.Unix()}))
	for range 3 {
		if got := b.do(t, "GET", "/sessions", tok, ""); got.status != 200 {
			t.Fatalf("a valid token: %d %s", got.status, got.msg)
		}
	}
	deadline := exp.Add(3 * time.Second)
	for {
		before := time.Now()
		got := b.do(t, "GET", "/sessions", tok, "")
		if got.status == 401 {
			break
		}
		if !before.Before(exp.Add(time.Second)) {
			t.Fatalf("the token still opens the API at %s, its exp %s", before.Format(time.RFC3339Nano), exp.Format(time.RFC3339))
		}
		if time.Now().After(deadline) {
			t.Fatal("the token was never refused")
		}
		time.Sleep(20 * time.Millisecond) // waiting for the clock to pass exp: there is no event to wait on
	}
	if time.Now().Before(exp) {
		t.Errorf("the token was refused before its exp")
	}
}

// Every route but the public ones refuses a bad JWT (expired, or for
// another audience) with 401 invalid_token before anything else, as it
// refuses a wrong token; the MCP endpoint's challenge names its metadata.
func TestOIDCEveryRouteRefusesBadJWT(t *testing.T) {
	fi := newFakeIssuer(t)
	_, public := setupOIDC(t, fi, nil)
	base := fi.claims(fi.user, oidcAudience)
	bad := map[string]string{
		"expired":        fi.sign("rsa-1", jose.RS256, with(base, map[string]any{"exp": time.Now().Add(-time.Hour).Unix()})),
		"wrong audience": fi.sign("ec-1", jose.ES256, with(base, map[string]any{"aud": "elsewhere"})),
	}
	type target struct{ method, url string }
	var targets []target
	for _, r := range api.Routes {
		if !r.Public {
			targets = append(targets, target{r.Method, public + "/agent/v1" + routePath(r, "sess_x")})
		}
	}
	targets = append(targets, target{"POST", public + "/agent/mcp"}, target{"GET", public + "/agent/mcp"})
	for name, tok := range bad {
		for _, tg := range targets {
			req, _ := http.NewRequest(tg.method, tg.url, strings.NewReader(`{}`))
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			www := resp.Header.Get("WWW-Authenticate")
			wantMeta := strings.HasSuffix(tg.url, "/agent/mcp")
			if resp.StatusCode != 401 || !strings.Contains(www, `error="invalid_token"`) || strings.Contains(www, "resource_metadata") != wantMeta {
				t.Errorf("%s %s with an %s JWT: %d %q", tg.method, tg.url, name, resp.StatusCode, www)
			}
		}
	}
}

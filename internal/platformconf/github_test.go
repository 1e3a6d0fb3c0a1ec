package platformconf

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	jwt "github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v88/github"

	"github.com/agentsdk/agentsdk/agentconfig"
)

const (
	testAppID          = 123456
	testInstallationID = 7890123
	testToken          = "ghp_R2xkZ0hVcnRUZXN0VG9rZW4xMjM0NTY3ODkw"
)

// testKey is the GitHub App's private key: made once, 2048 bits as
// GitHub's.
var testKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// pkcs1PEM is the key as GitHub downloads it ("BEGIN RSA PRIVATE KEY").
func pkcs1PEM(k *rsa.PrivateKey) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
}

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// fakeGitHub is GitHub's REST API, the part these clients use: a pull
// request, and an App installation's token exchange. It checks what a
// real GitHub checks: the exchange's JWT (RS256, signed by the App's key,
// iss the App's id, at most 10 minutes long) and the API request's token.
type fakeGitHub struct {
	errorf func(format string, args ...any) // a request GitHub would refuse
	prefix string                           // "" (api.github.com) or "/api/v3" (Enterprise Server)
	key    *rsa.PublicKey
	// expiresIn is how long the nth exchange's token lives (the last
	// repeats).
	expiresIn []time.Duration

	mu        sync.Mutex
	exchanges []exchange
	valid     map[string]bool // tokens the API accepts
	requests  []apiRequest
}

type exchange struct {
	path      string
	token     string
	expiresAt time.Time
}

type apiRequest struct {
	host, path, auth string
}

func newFake(t *testing.T, prefix string) *fakeGitHub {
	return &fakeGitHub{errorf: t.Errorf, prefix: prefix, key: &testKey().PublicKey,
		expiresIn: []time.Duration{time.Hour}, valid: map[string]bool{testToken: true}}
}

func (f *fakeGitHub) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+f.prefix+"/app/installations/{id}/access_tokens", f.accessTokens)
	mux.HandleFunc("GET "+f.prefix+"/repos/{owner}/{repo}/pulls/{number}", f.pull)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		f.errorf("fake GitHub: unexpected %s %s", r.Method, r.URL.Path)
		ghError(w, http.StatusNotFound, "Not Found")
	})
	return mux
}

func ghError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"message":%q,"documentation_url":"https://docs.github.com/rest","status":"%d"}`, msg, status)
}

func (f *fakeGitHub) accessTokens(w http.ResponseWriter, r *http.Request) {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		f.errorf("token exchange: Authorization %q, want Bearer <JWT>", r.Header.Get("Authorization"))
		ghError(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
		return
	}
	var claims jwt.RegisteredClaims
	tok, err := jwt.ParseWithClaims(raw, &claims, func(*jwt.Token) (any, error) { return f.key, nil },
		jwt.WithValidMethods([]string{"RS256"}))
	if err != nil || !tok.Valid {
		f.errorf("token exchange: JWT not valid for the App's key: %v", err)
		ghError(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
		return
	}
	if claims.Issuer != strconv.Itoa(testAppID) || claims.IssuedAt == nil || claims.ExpiresAt == nil ||
		claims.ExpiresAt.Sub(claims.IssuedAt.Time) > 10*time.Minute {
		f.errorf("token exchange: JWT claims %+v: want iss %d, iat and exp at most 10 minutes apart", claims, testAppID)
		ghError(w, http.StatusUnauthorized, "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued")
		return
	}
	if id := r.PathValue("id"); id != strconv.Itoa(testInstallationID) {
		ghError(w, http.StatusNotFound, "Not Found")
		return
	}
	f.mu.Lock()
	n := len(f.exchanges)
	d := f.expiresIn[min(n, len(f.expiresIn)-1)]
	ex := exchange{path: r.URL.Path, token: fmt.Sprintf("ghs_16C7e42F292c6912E7710c838347Ae178B4a%d", n+1),
		expiresAt: time.Now().Add(d).UTC().Truncate(time.Second)}
	f.exchanges = append(f.exchanges, ex)
	f.valid[ex.token] = true
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"token":%q,"expires_at":%q,"permissions":{"metadata":"read","pull_requests":"read"},"repository_selection":"selected"}`,
		ex.token, ex.expiresAt.Format(time.RFC3339))
}

func (f *fakeGitHub) pull(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	f.mu.Lock()
	f.requests = append(f.requests, apiRequest{host: r.Host, path: r.URL.Path, auth: auth})
	tok := strings.TrimPrefix(strings.TrimPrefix(auth, "Bearer "), "token ")
	ok := f.valid[tok]
	f.mu.Unlock()
	if !ok {
		ghError(w, http.StatusUnauthorized, "Bad credentials")
		return
	}
	owner, repo, number := r.PathValue("owner"), r.PathValue("repo"), r.PathValue("number")
	if owner != "acme" || repo != "checkout" || number != "42" {
		ghError(w, http.StatusNotFound, "Not Found")
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	w.Header().Set("X-RateLimit-Limit", "5000")
	w.Header().Set("X-RateLimit-Remaining", "4999")
	w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	w.Header().Set("X-RateLimit-Resource", "core")
	api := "https://" + r.Host + f.prefix
	fmt.Fprintf(w, pullJSON, api)
}

// pullJSON is GitHub's answer to GET /repos/acme/checkout/pulls/42 (its
// documented example, shortened); %[1]s is the API's URL.
const pullJSON = `{
  "url": "%[1]s/repos/acme/checkout/pulls/42",
  "id": 1934501234,
  "node_id": "PR_kwDOAbCdEs5zTq2y",
  "html_url": "https://github.com/acme/checkout/pull/42",
  "diff_url": "https://github.com/acme/checkout/pull/42.diff",
  "patch_url": "https://github.com/acme/checkout/pull/42.patch",
  "issue_url": "%[1]s/repos/acme/checkout/issues/42",
  "number": 42,
  "state": "open",
  "locked": false,
  "title": "Retry card payments once on a gateway timeout",
  "user": {"login": "octocat", "id": 1, "node_id": "MDQ6VXNlcjE=", "type": "User", "site_admin": false,
    "html_url": "https://github.com/octocat", "avatar_url": "https://github.com/images/error/octocat_happy.gif"},
  "body": "Payments that time out at the gateway are retried once with the same idempotency key.\n\nFixes #40.",
  "labels": [{"id": 208045946, "node_id": "MDU6TGFiZWwyMDgwNDU5NDY=", "name": "payments", "color": "f29513", "default": false}],
  "created_at": "2026-03-02T09:14:07Z",
  "updated_at": "2026-03-02T11:40:51Z",
  "closed_at": null,
  "merged_at": null,
  "merge_commit_sha": "e5bd3914e2e596debea16f433f57875b5b90bcd6",
  "assignees": [],
  "requested_reviewers": [{"login": "hubot", "id": 2, "type": "User"}],
  "draft": false,
  "head": {"label": "octocat:retry-timeouts", "ref": "retry-timeouts", "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
    "user": {"login": "octocat", "id": 1, "type": "User"},
    "repo": {"id": 1296269, "name": "checkout", "full_name": "octocat/checkout", "private": false, "owner": {"login": "octocat", "id": 1}}},
  "base": {"label": "acme:main", "ref": "main", "sha": "0c79e2b1f2d4a43c2e0a8c4f1b0e8b0b1a3a2c11",
    "user": {"login": "acme", "id": 9919, "type": "Organization"},
    "repo": {"id": 1296270, "name": "checkout", "full_name": "acme/checkout", "private": true, "owner": {"login": "acme", "id": 9919}, "default_branch": "main"}},
  "author_association": "CONTRIBUTOR",
  "auto_merge": null,
  "merged": false,
  "mergeable": true,
  "rebaseable": true,
  "mergeable_state": "clean",
  "merged_by": null,
  "comments": 3,
  "review_comments": 1,
  "maintainer_can_modify": true,
  "commits": 2,
  "additions": 57,
  "deletions": 9,
  "changed_files": 4
}`

func (f *fakeGitHub) snapshot() ([]exchange, []apiRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]exchange(nil), f.exchanges...), append([]apiRequest(nil), f.requests...)
}

// githubDotCom serves f as https://api.github.com: the returned transport
// dials f's server whatever the address, and trusts its certificate (for
// example.com) as api.github.com's, so that the real client, with its
// default URLs, reaches f unmodified.
func githubDotCom(t *testing.T, f *fakeGitHub) (tr http.RoundTripper, dialed *[]string) {
	srv := httptest.NewTLSServer(f.handler())
	t.Cleanup(srv.Close)
	ht := srv.Client().Transport.(*http.Transport).Clone()
	ht.TLSClientConfig.ServerName = "example.com"
	var mu sync.Mutex
	var addrs []string
	var d net.Dialer
	ht.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		addrs = append(addrs, addr)
		mu.Unlock()
		return d.DialContext(ctx, network, srv.Listener.Addr().String())
	}
	return ht, &addrs
}

// getPR gets acme/checkout#42 and checks what was decoded.
func getPR(t *testing.T, c *github.Client) {
	t.Helper()
	if err := fetchPR(c); err != nil {
		t.Fatal(err)
	}
}

func fetchPR(c *github.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pr, _, err := c.PullRequests.Get(ctx, "acme", "checkout", 42)
	if err != nil {
		return fmt.Errorf("PullRequests.Get: %w", err)
	}
	if pr.GetNumber() != 42 || pr.GetTitle() != "Retry card payments once on a gateway timeout" ||
		pr.GetHead().GetSHA() != "6dcb09b5b57875f334f61aebed695e2e4193db5e" || pr.GetUser().GetLogin() != "octocat" ||
		pr.GetAdditions() != 57 || pr.GetBase().GetRepo().GetFullName() != "acme/checkout" {
		return fmt.Errorf("PullRequests.Get decoded %+v", pr)
	}
	return nil
}

func TestGitHubNotConfigured(t *testing.T) {
	c, err := GitHub(nil, env(map[string]string{"GITHUB_TOKEN": testToken}))
	if c != nil || err != nil {
		t.Fatalf("GitHub(nil) = %v, %v; want nil, nil", c, err)
	}
}

// A token client reaches api.github.com with the token of GITHUB_TOKEN.
func TestGitHubToken(t *testing.T) {
	t.Parallel()
	f := newFake(t, "")
	tr, dialed := githubDotCom(t, f)
	c, err := newGitHub(&agentconfig.GitHub{}, env(map[string]string{"GITHUB_TOKEN": " " + testToken + "\n"}), tr)
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL() != "https://api.github.com/" {
		t.Errorf("BaseURL %q", c.BaseURL())
	}
	getPR(t, c)
	getPR(t, c)
	exs, reqs := f.snapshot()
	if len(exs) != 0 || len(reqs) != 2 {
		t.Fatalf("%d exchanges, %d requests; want 0, 2", len(exs), len(reqs))
	}
	for _, r := range reqs {
		if r.auth != "Bearer "+testToken || r.host != "api.github.com" || r.path != "/repos/acme/checkout/pulls/42" {
			t.Errorf("request %+v: want Bearer <the token> to api.github.com/repos/acme/checkout/pulls/42", r)
		}
	}
	if len(*dialed) == 0 || (*dialed)[0] != "api.github.com:443" {
		t.Errorf("dialed %v, want api.github.com:443", *dialed)
	}

	// tokenEnv names another variable.
	c, err = newGitHub(&agentconfig.GitHub{TokenEnv: "ACME_GH"}, env(map[string]string{"ACME_GH": testToken, "GITHUB_TOKEN": "ghp_other"}), tr)
	if err != nil {
		t.Fatal(err)
	}
	getPR(t, c)
}

// An App client exchanges its JWT for an installation token, uses it, and
// exchanges again once (not once a request) when the token nears expiry.
func TestGitHubApp(t *testing.T) {
	t.Parallel()
	f := newFake(t, "")
	// The first token expires in 63 s: ghinstallation makes another a
	// minute before, 2-3 s from now. The next lives an hour.
	f.expiresIn = []time.Duration{63 * time.Second, time.Hour}
	tr, _ := githubDotCom(t, f)
	cfg := &agentconfig.GitHub{App: &agentconfig.GitHubApp{ID: testAppID, InstallationID: testInstallationID}}
	c, err := newGitHub(cfg, env(map[string]string{"GITHUB_APP_PRIVATE_KEY": pkcs1PEM(testKey()), "GITHUB_TOKEN": "ghp_unused"}), tr)
	if err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	for range 6 { // concurrent first requests: one exchange
		wg.Go(func() {
			if err := fetchPR(c); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	exs, reqs := f.snapshot()
	if len(exs) != 1 {
		t.Fatalf("%d token exchanges for the first 6 requests, want 1", len(exs))
	}
	if exs[0].path != "/app/installations/7890123/access_tokens" {
		t.Errorf("exchange at %s", exs[0].path)
	}
	refreshAt := exs[0].expiresAt.Add(-time.Minute)
	if !time.Now().Before(refreshAt) {
		t.Fatalf("the first requests took until %v, past the token's refresh time %v: machine too slow for this test", time.Now(), refreshAt)
	}
	for _, r := range reqs {
		if r.auth != "token "+exs[0].token || r.host != "api.github.com" || r.path != "/repos/acme/checkout/pulls/42" {
			t.Errorf("request %+v: want the installation token to api.github.com/repos/acme/checkout/pulls/42", r)
		}
	}

	time.Sleep(time.Until(refreshAt) + 100*time.Millisecond)
	for range 4 {
		getPR(t, c)
	}
	exs, reqs = f.snapshot()
	if len(exs) != 2 {
		t.Fatalf("%d token exchanges after the first token neared expiry and 4 more requests, want 2", len(exs))
	}
	for _, r := range reqs[6:] {
		if r.auth != "token "+exs[1].token {
			t.Errorf("request after the refresh: Authorization %q, want the second token", r.auth)
		}
	}
}

// The key may be a path, PEM with escaped newlines, or PKCS#8; a custom
// privateKeyEnv is read.
func TestGitHubAppKeyForms(t *testing.T) {
	t.Parallel()
	k := testKey()
	p8, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "acme-reviewer.2026-03-02.private-key.pem")
	if err := os.WriteFile(file, []byte(pkcs1PEM(k)), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{
		"file":    file,
		"escaped": strings.ReplaceAll(strings.TrimSpace(pkcs1PEM(k)), "\n", `\n`),
		"pkcs8":   string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8})),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, "")
			tr, _ := githubDotCom(t, f)
			cfg := &agentconfig.GitHub{App: &agentconfig.GitHubApp{ID: testAppID, InstallationID: testInstallationID, PrivateKeyEnv: "REVIEWER_KEY"}}
			c, err := newGitHub(cfg, env(map[string]string{"REVIEWER_KEY": v}), tr)
			if err != nil {
				t.Fatal(err)
			}
			getPR(t, c)
			if exs, _ := f.snapshot(); len(exs) != 1 {
				t.Errorf("%d exchanges, want 1", len(exs))
			}
		})
	}
}

// With baseURL, requests and token exchanges go to /api/v3/ on the
// Enterprise Server.
func TestGitHubEnterprise(t *testing.T) {
	t.Parallel()
	f := newFake(t, "/api/v3")
	srv := httptest.NewTLSServer(f.handler())
	t.Cleanup(srv.Close)
	tr := srv.Client().Transport
	host := strings.TrimPrefix(srv.URL, "https://")

	for _, base := range []string{srv.URL, srv.URL + "/", srv.URL + "/api/v3", srv.URL + "/api/v3/"} {
		c, err := newGitHub(&agentconfig.GitHub{BaseURL: base}, env(map[string]string{"GITHUB_TOKEN": testToken}), tr)
		if err != nil {
			t.Fatal(err)
		}
		if c.BaseURL() != srv.URL+"/api/v3/" || c.UploadURL() != srv.URL+"/api/uploads/" {
			t.Errorf("baseURL %s: BaseURL %s, UploadURL %s", base, c.BaseURL(), c.UploadURL())
		}
		getPR(t, c)
	}

	cfg := &agentconfig.GitHub{BaseURL: srv.URL + "/api/v3/", App: &agentconfig.GitHubApp{ID: testAppID, InstallationID: testInstallationID}}
	c, err := newGitHub(cfg, env(map[string]string{"GITHUB_APP_PRIVATE_KEY": pkcs1PEM(testKey())}), tr)
	if err != nil {
		t.Fatal(err)
	}
	getPR(t, c)
	getPR(t, c)
	exs, reqs := f.snapshot()
	if len(exs) != 1 || exs[0].path != "/api/v3/app/installations/7890123/access_tokens" {
		t.Fatalf("exchanges %+v: want one at /api/v3/app/installations/7890123/access_tokens", exs)
	}
	if len(reqs) != 6 {
		t.Fatalf("%d requests, want 6", len(reqs))
	}
	for i, r := range reqs {
		want := "Bearer " + testToken
		if i >= 4 {
			want = "token " + exs[0].token
		}
		if r.path != "/api/v3/repos/acme/checkout/pulls/42" || r.host != host || r.auth != want {
			t.Errorf("request %d %+v: want %s to %s/api/v3/repos/acme/checkout/pulls/42", i, r, want, host)
		}
	}

	// github.com's own URLs are github.com, not an Enterprise Server.
	for _, base := range []string{"https://api.github.com/", "https://github.com"} {
		c, err := GitHub(&agentconfig.GitHub{BaseURL: base}, env(map[string]string{"GITHUB_TOKEN": testToken}))
		if err != nil || c.BaseURL() != "https://api.github.com/" || c.UploadURL() != "https://uploads.github.com/" {
			t.Errorf("baseURL %s: %v, %v", base, c, err)
		}
	}
}

func TestGitHubErrors(t *testing.T) {
	t.Parallel()
	key := pkcs1PEM(testKey())
	app := func(id, inst int64, keyEnv string) *agentconfig.GitHubApp {
		return &agentconfig.GitHubApp{ID: id, InstallationID: inst, PrivateKeyEnv: keyEnv}
	}
	bad := "-----BEGIN RSA PRIVATE KEY-----\nMIIEsecretsecretsecret\n-----END RSA PRIVATE KEY-----\n"
	for _, tc := range []struct {
		name string
		cfg  agentconfig.GitHub
		env  map[string]string
		want []string // in the error
	}{
		{"no token", agentconfig.GitHub{}, nil, []string{"github.tokenEnv", "GITHUB_TOKEN", "not set"}},
		{"blank token", agentconfig.GitHub{}, map[string]string{"GITHUB_TOKEN": "  \n"}, []string{"github.tokenEnv", "GITHUB_TOKEN"}},
		{"tokenEnv unset", agentconfig.GitHub{TokenEnv: "ACME_GH"}, map[string]string{"GITHUB_TOKEN": testToken}, []string{"github.tokenEnv", "ACME_GH"}},
		{"token with a space", agentconfig.GitHub{}, map[string]string{"GITHUB_TOKEN": "ghp_abc def"}, []string{"GITHUB_TOKEN", "spaces"}},
		{"token and app", agentconfig.GitHub{TokenEnv: "GITHUB_TOKEN", App: app(testAppID, testInstallationID, "")},
			map[string]string{"GITHUB_TOKEN": testToken, "GITHUB_APP_PRIVATE_KEY": key}, []string{"github", "tokenEnv", "app", "not both"}},
		{"zero app id", agentconfig.GitHub{App: app(0, testInstallationID, "")}, map[string]string{"GITHUB_APP_PRIVATE_KEY": key}, []string{"github.app.id"}},
		{"negative app id", agentconfig.GitHub{App: app(-4, testInstallationID, "")}, map[string]string{"GITHUB_APP_PRIVATE_KEY": key}, []string{"github.app.id"}},
		{"zero installation id", agentconfig.GitHub{App: app(testAppID, 0, "")}, map[string]string{"GITHUB_APP_PRIVATE_KEY": key}, []string{"github.app.installationId"}},
		{"no key", agentconfig.GitHub{App: app(testAppID, testInstallationID, "")}, map[string]string{"GITHUB_TOKEN": testToken},
			[]string{"github.app.privateKeyEnv", "GITHUB_APP_PRIVATE_KEY", "not set"}},
		{"custom key variable unset", agentconfig.GitHub{App: app(testAppID, testInstallationID, "REVIEWER_KEY")}, map[string]string{"GITHUB_APP_PRIVATE_KEY": key},
			[]string{"github.app.privateKeyEnv", "REVIEWER_KEY"}},
		{"malformed key", agentconfig.GitHub{App: app(testAppID, testInstallationID, "")}, map[string]string{"GITHUB_APP_PRIVATE_KEY": bad},
			[]string{"github.app.privateKeyEnv", "GITHUB_APP_PRIVATE_KEY", "RSA private key"}},
		{"key neither PEM nor file", agentconfig.GitHub{App: app(testAppID, testInstallationID, "")}, map[string]string{"GITHUB_APP_PRIVATE_KEY": "MIIEsecretsecretsecret"},
			[]string{"github.app.privateKeyEnv", "GITHUB_APP_PRIVATE_KEY", "neither"}},
		{"baseURL ftp", agentconfig.GitHub{BaseURL: "ftp://github.example.com/"}, map[string]string{"GITHUB_TOKEN": testToken}, []string{"github.baseURL", "ftp://github.example.com/"}},
		{"baseURL without scheme", agentconfig.GitHub{BaseURL: "github.example.com/api/v3"}, map[string]string{"GITHUB_TOKEN": testToken}, []string{"github.baseURL", "http"}},
		{"baseURL not a URL", agentconfig.GitHub{BaseURL: "https://github example com/"}, map[string]string{"GITHUB_TOKEN": testToken}, []string{"github.baseURL"}},
		{"baseURL with credentials", agentconfig.GitHub{BaseURL: "https://me:hunter2@github.example.com/"}, map[string]string{"GITHUB_TOKEN": testToken}, []string{"github.baseURL", "credentials"}},
		{"baseURL with a query", agentconfig.GitHub{BaseURL: "https://github.example.com/api/v3/?x=1"}, map[string]string{"GITHUB_TOKEN": testToken}, []string{"github.baseURL", "query"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			c, err := GitHub(&cfg, env(tc.env))
			if err == nil {
				t.Fatalf("no error (client %v)", c)
			}
			if c != nil {
				t.Errorf("a client with the error")
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			for _, secret := range []string{"secretsecret", "hunter2", "ghp_abc", key[40:80]} {
				if strings.Contains(msg, secret) {
					t.Errorf("error %q repeats a secret", msg)
				}
			}
		})
	}
}

// A client made from one key is refused by a GitHub that knows another:
// the fake does check the signature.
func TestGitHubAppWrongKey(t *testing.T) {
	t.Parallel()
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(t, "")
	f.key = &other.PublicKey
	f.errorf = func(string, ...any) {} // its complaint is this test's expectation
	tr, _ := githubDotCom(t, f)
	cfg := &agentconfig.GitHub{App: &agentconfig.GitHubApp{ID: testAppID, InstallationID: testInstallationID}}
	c, err := newGitHub(cfg, env(map[string]string{"GITHUB_APP_PRIVATE_KEY": pkcs1PEM(testKey())}), tr)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.PullRequests.Get(context.Background(), "acme", "checkout", 42)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("PullRequests.Get with a key GitHub does not know: %v, want a 401 from the token exchange", err)
	}
	if _, reqs := f.snapshot(); len(reqs) != 0 {
		t.Errorf("%d API requests without an installation token", len(reqs))
	}
}

func TestPullJSONIsJSON(t *testing.T) {
	if s := fmt.Sprintf(pullJSON, "https://api.github.com"); !json.Valid([]byte(s)) {
		t.Fatal("pullJSON is not JSON")
	}
}

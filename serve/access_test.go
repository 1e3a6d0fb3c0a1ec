package serve_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// accessBundle is a host on SQLite served on loopback, with a key per
// role.
type accessBundle struct {
	url  string // http://127.0.0.1:port/agent/v1
	srv  *serve.Server
	h    *host.Host
	st   store.Store
	keys map[string]api.KeyCreated // by role, created with the token
}

// deployerRoles are the roles the access tests add to the defaults.
var deployerRoles = map[string][]api.Permission{"deployer": {api.PermRead, api.PermCall}}

func setupAccess(t testing.TB) *accessBundle {
	t.Helper()
	return setupAccessOn(t, nil, nil)
}

// setupAccessOn is setupAccess on st (nil: a new SQLite file), with the
// host options opts changes.
func setupAccessOn(t testing.TB, st store.Store, opts func(*host.Options)) *accessBundle {
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
	if st == nil {
		if st, err = sqlite.Open(context.Background(), filepath.Join(dir, "agent.db")); err != nil {
			t.Fatal(err)
		}
	}
	o := &host.Options{StateRoot: dir, Store: st}
	if opts != nil {
		opts(o)
	}
	h, err := host.New(set, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(h, &serve.Options{Slug: "agent", Token: testToken, ApprovalWait: -1, Roles: deployerRoles})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); h.Close(); st.Close() })
	b := &accessBundle{url: ts.URL + "/agent/v1", srv: srv, h: h, st: st, keys: map[string]api.KeyCreated{}}
	for _, role := range append(slices.Sorted(mapKeys(api.DefaultRoles)), "deployer") {
		b.keys[role] = b.createKey(t, testToken, `{"name":"`+role+` key","roles":["`+role+`"]}`)
	}
	return b
}

// A key revoked through one host is refused by another on the same
// PostgreSQL from its next request, although that host had just read the
// key (and remembers it for a second): the revoke answers only when no
// host trusts what it read before.
func TestKeyRevokedOnEveryHost(t *testing.T) {
	open := sharedPostgres(t)
	a := setupAccessOn(t, open(), nil)
	b := setupAccessOn(t, open(), nil)
	k := a.keys["operator"]
	if got := b.do(t, "GET", "/sessions", k.Secret, ""); got.status != 200 {
		t.Fatalf("host B with host A's key: %d %s", got.status, got.msg)
	}
	if got := a.do(t, "POST", "/keys/"+k.Key.ID+"/revoke", testToken, ""); got.status != 200 {
		t.Fatal(got.msg)
	}
	if got := b.do(t, "GET", "/sessions", k.Secret, ""); got.status != 401 {
		t.Errorf("host B right after host A revoked the key: %d, want 401", got.status)
	}
}

// A key that expires while its host remembers it is refused from its
// expiresAt on: the expiry is checked on every request, not only when
// the key is read.
func TestKeyExpiresWhileRemembered(t *testing.T) {
	b := setupAccess(t)
	exp := time.Now().Add(800 * time.Millisecond)
	sum := sha256.Sum256([]byte("soonsecret"))
	if err := b.st.CreateKey(context.Background(), store.CreateKeyParams{Key: store.KeyRecord{Key: api.Key{ID: "soon1", Name: "soon", Roles: []string{"reader"}, ExpiresAt: &exp}, Hash: sum[:]}}); err != nil {
		t.Fatal(err)
	}
	if got := b.do(t, "GET", "/sessions", "ask_soon1_soonsecret", ""); got.status != 200 {
		t.Fatalf("the key before its expiry: %d %s", got.status, got.msg)
	}
	if got := b.do(t, "GET", "/sessions", "ask_soon1_wrongsecret", ""); got.status != 401 {
		t.Errorf("the remembered key's id with another secret: %d", got.status)
	}
	time.Sleep(time.Until(exp))
	if got := b.do(t, "GET", "/sessions", "ask_soon1_soonsecret", ""); got.status != 401 {
		t.Errorf("the key at its expiry: %d, want 401", got.status)
	}
}

// Many requests with one key at once, while the host reads and remembers
// it, all get through; once it is revoked, all are refused.
func TestKeyConcurrently(t *testing.T) {
	b := setupAccess(t)
	k := b.createKey(t, testToken, `{"name":"busy","roles":["operator"]}`)
	all := func(want int) {
		t.Helper()
		var wg sync.WaitGroup
		got := make(chan int, 16*8)
		for range 16 {
			wg.Go(func() {
				for range 8 {
					a, err := sendAPI(b.url, "POST", "/tools/echo", k.Secret, `{"input":{}}`)
					if err != nil {
						t.Error(err)
						return
					}
					got <- a.status
				}
			})
		}
		wg.Wait()
		close(got)
		for status := range got {
			if status != want {
				t.Fatalf("a request with the key: %d, want %d", status, want)
			}
		}
	}
	all(200)
	if got := b.do(t, "POST", "/keys/"+k.Key.ID+"/revoke", testToken, ""); got.status != 200 {
		t.Fatal(got.msg)
	}
	all(401)
}

// Quotas count per principal: at --max-sessions 1, each principal opens
// its one session, and its second is 429.
func TestQuotaPerPrincipal(t *testing.T) {
	b := setupAccessOn(t, nil, func(o *host.Options) { o.MaxSessions = 1 })
	for _, who := range []string{b.keys["operator"].Secret, b.keys["admin"].Secret, testToken} {
		if got := b.do(t, "POST", "/session", who, `{}`); got.status != 201 {
			t.Errorf("a principal's first session: %d %s", got.status, got.msg)
		}
	}
	if got := b.do(t, "POST", "/session", b.keys["operator"].Secret, `{}`); got.status != 429 || got.code != "quota_exceeded" {
		t.Errorf("the operator's second session: %d %s", got.status, got.code)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// apiAnswer is an answer of the API, decoded: its error's code and
// message, if it is one, and its text.
type apiAnswer struct {
	status int
	code   string
	msg    string
	body   map[string]any
	raw    string
}

// sendAPI makes one request of the API at base, with token if not "";
// it does not touch a testing.T, so that goroutines may call it.
func sendAPI(base, method, path, token, body string) (apiAnswer, error) {
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return apiAnswer{}, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	a := apiAnswer{status: resp.StatusCode, raw: string(data)}
	if json.Unmarshal(data, &a.body) == nil {
		if e, ok := a.body["error"].(map[string]any); ok {
			a.code, _ = e["code"].(string)
			a.msg, _ = e["message"].(string)
		}
	}
	return a, nil
}

func (b *accessBundle) do(t *testing.T, method, path, token, body string) apiAnswer {
	t.Helper()
	a, err := sendAPI(b.url, method, path, token, body)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (b *accessBundle) createKey(t testing.TB, token, body string) api.KeyCreated {
	t.Helper()
	req, _ := http.NewRequest("POST", b.url+"/keys", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var k api.KeyCreated
	if err := json.NewDecoder(resp.Body).Decode(&k); err != nil || resp.StatusCode != http.StatusCreated || !k.OK {
		t.Fatalf("creating a key %s: %d %+v %v", body, resp.StatusCode, k, err)
	}
	return k
}

// session opens a session as the principal directly on the host.
func (b *accessBundle) session(t *testing.T, principal string) string {
	t.Helper()
	sess, _, err := b.h.Sessions().Create(context.Background(), host.SessionOptions{Principal: principal})
	if err != nil {
		t.Fatal(err)
	}
	return sess.ID
}

var pathParam = regexp.MustCompile(`\{([A-Za-z]+)(\.\.\.)?\}`)

// routePath fills a route's path parameters: {id} with sessionID, the
// rest with names nothing has.
func routePath(r api.Route, sessionID string) string {
	p := pathParam.ReplaceAllStringFunc(r.Path, func(m string) string {
		switch m {
		case "{id}":
			if strings.HasPrefix(r.Path, "/session/") {
				return sessionID
			}
			return "nosuch"
		case "{name}":
			if strings.HasPrefix(r.Path, "/tools/") {
				return "echo"
			}
		}
		return "nosuch"
	})
	if r.Name == "events" {
		p += "?follow=false"
	}
	return p
}

// grants is what the test expects of a role: api.DefaultRoles and
// deployerRoles, with admin granting everything.
func grants(role string, perm api.Permission) bool {
	perms, ok := api.DefaultRoles[role]
	if !ok {
		perms = deployerRoles[role]
	}
	return slices.Contains(perms, perm) || slices.Contains(perms, api.PermAdmin)
}

// allowedAnswer is what each route answers the requests of
// TestEveryRouteForEveryRole when the principal has its permission: the
// status and the error code ("" for a success). The requests are
// deliberately plain (an empty object for a body, names nothing has), so
// that the answer is one a user would see, and the same for every role.
var allowedAnswer = map[string]struct {
	status int
	code   string
}{
	"openapi":          {200, ""},
	"listTools":        {200, ""},
	"callTool":         {200, ""},
	"createSession":    {201, ""},
	"listSessions":     {200, ""},
	"getSession":       {200, ""},
	"sendMessage":      {400, "empty_message"},
	"cancelTurn":       {409, "no_running_turn"},
	"compactSession":   {200, ""},
	"events":           {200, ""},
	"resolveInSession": {400, "malformed_json"},
	"resolve":          {400, "malformed_json"},
	"listApprovals":    {200, ""},
	"usage":            {200, ""},
	"callStatus":       {404, "approval_not_found"},
	"listArtifacts":    {200, ""},
	"getArtifact":      {404, "artifact_not_found"},
	"runnerClaim":      {204, ""},
	"runnerReport":     {400, "invalid_report"},
	"runnerAdmit":      {409, "lease_lost"},
	"runnerPermission": {409, "lease_lost"},
	"listSchedules":    {200, ""},
	"runSchedule":      {404, "schedule_not_found"},
	"runEval":          {503, "no_jobs"},
	"listEvals":        {503, "no_jobs"},
	"getEval":          {503, "no_jobs"},
	"createKey":        {400, "invalid_key"},
	"listKeys":         {200, ""},
	"revokeKey":        {404, "key_not_found"},
	"listAudit":        {200, ""},
}

// Every route of api.Routes, asked by every role's key (the defaults and
// the test's deployer) and the host token (the bootstrap admin): each cell
// has one expected answer, generated from the route's permission and the
// role's: 403 forbidden naming the permission when the role lacks it, the
// route's allowedAnswer when it has it. The requests take the principal's
// own session, so that isolation does not hide what the permission
// decides.
func TestEveryRouteForEveryRole(t *testing.T) {
	b := setupAccess(t)
	principals := map[string]struct{ token, id string }{"token": {testToken, "bearer-token"}}
	for role, k := range b.keys {
		principals[role] = struct{ token, id string }{k.Secret, "key:" + k.Key.ID}
	}
	for _, r := range api.Routes {
		if r.Public {
			continue
		}
		want, ok := allowedAnswer[r.Name]
		if !ok {
			t.Errorf("route %s (%s %s) has no allowedAnswer: add what it answers", r.Name, r.Method, r.Path)
			continue
		}
		for _, name := range slices.Sorted(mapKeys(principals)) {
			p := principals[name]
			t.Run(r.Name+"/"+name, func(t *testing.T) {
				body := ""
				if r.Request != nil {
					body = `{}`
				}
				if r.Name == "runnerClaim" {
					body = `{"runner":"r"}` // waits no time
				}
				a := b.do(t, r.Method, routePath(r, b.session(t, p.id)), p.token, body)
				if name == "token" || grants(name, r.Permission) {
					if a.status != want.status || a.code != want.code {
						t.Errorf("%s %s as %s: %d %q (%s), want %d %q", r.Method, r.Path, name, a.status, a.code, a.msg, want.status, want.code)
					}
					return
				}
				if a.status != http.StatusForbidden || a.code != "forbidden" || !strings.Contains(a.msg, "permission "+string(r.Permission)) {
					t.Errorf("%s %s as %s: %d %q (%s), want 403 forbidden naming %s", r.Method, r.Path, name, a.status, a.code, a.msg, r.Permission)
				}
			})
		}
	}
	for name := range allowedAnswer {
		if !slices.ContainsFunc(api.Routes, func(r api.Route) bool { return r.Name == name && !r.Public }) {
			t.Errorf("allowedAnswer names %s, which is no authenticated route of api.Routes", name)
		}
	}
}

// Another principal's session is 404 session_not_found on every session
// route, as a session that does not exist; its owner, an auditor
// (read:all) and the token get past that. Lists are filtered.
func TestAnotherPrincipalsSessionIsNotFound(t *testing.T) {
	b := setupAccess(t)
	alice, bob := b.keys["operator"], b.createKey(t, testToken, `{"name":"bob","roles":["operator"]}`)
	a := b.do(t, "POST", "/session", alice.Secret, `{}`)
	if a.status != http.StatusCreated {
		t.Fatalf("alice opening a session: %d %s", a.status, a.msg)
	}
	id := a.body["sessionId"].(string)
	if got := b.do(t, "GET", "/session/"+id, alice.Secret, ""); got.status != 200 || got.body["session"].(map[string]any)["principal"] != "key:"+alice.Key.ID {
		t.Fatalf("alice reading her session: %d %v", got.status, got.body)
	}
	sessionRoutes := 0
	for _, r := range api.Routes {
		if !strings.HasPrefix(r.Path, "/session/{id}") {
			continue
		}
		sessionRoutes++
		body := ""
		if r.Request != nil {
			body = `{"message":"hi","approved":true}`
		}
		path := routePath(r, id)
		if got := b.do(t, r.Method, path, bob.Secret, body); got.status != http.StatusNotFound || got.code != "session_not_found" {
			t.Errorf("%s %s as bob: %d %s (%s), want 404 session_not_found", r.Method, path, got.status, got.code, got.msg)
		}
		if r.Method == http.MethodGet {
			for _, who := range []string{alice.Secret, b.keys["auditor"].Secret, testToken} {
				if got := b.do(t, r.Method, path, who, ""); got.code == "session_not_found" {
					t.Errorf("%s %s by its owner, an auditor or the token: session_not_found", r.Method, path)
				}
			}
		}
	}
	if sessionRoutes < 8 {
		t.Errorf("only %d session routes", sessionRoutes)
	}
	if got := b.do(t, "POST", "/tools/echo", bob.Secret, `{"input":{},"sessionId":"`+id+`"}`); got.status != http.StatusNotFound || got.code != "session_not_found" {
		t.Errorf("bob calling a tool in alice's session: %d %s", got.status, got.code)
	}
	count := func(token string) int {
		got := b.do(t, "GET", "/sessions", token, "")
		n := 0
		for _, s := range got.body["sessions"].([]any) {
			if s.(map[string]any)["id"] == id {
				n++
			}
		}
		return n
	}
	if count(bob.Secret) != 0 || count(alice.Secret) != 1 || count(testToken) != 1 || count(b.keys["auditor"].Secret) != 1 {
		t.Errorf("listings: bob %d, alice %d, token %d, auditor %d; want 0 1 1 1", count(bob.Secret), count(alice.Secret), count(testToken), count(b.keys["auditor"].Secret))
	}
	// A parked call of alice's is hers and the approvers': a reader of its
	// own sees neither it in the list nor its status.
	parked := b.do(t, "POST", "/tools/promote", alice.Secret, `{"input":{}}`)
	if parked.status != http.StatusAccepted {
		t.Fatalf("alice's gated call: %d %s", parked.status, parked.msg)
	}
	callID := parked.body["callId"].(string)
	reader := b.keys["reader"].Secret
	if got := b.do(t, "GET", "/calls/"+callID, reader, ""); got.status != http.StatusNotFound || got.code != "approval_not_found" {
		t.Errorf("a reader asking for alice's call: %d %s", got.status, got.code)
	}
	if got := b.do(t, "GET", "/approvals", reader, ""); len(got.body["approvals"].([]any)) != 0 {
		t.Errorf("a reader lists %v", got.body["approvals"])
	}
	if got := b.do(t, "GET", "/approvals", b.keys["approver"].Secret, ""); len(got.body["approvals"].([]any)) != 1 {
		t.Errorf("an approver lists %v", got.body["approvals"])
	}
	// The decider is the key: naming another is for admins only.
	if got := b.do(t, "POST", "/approvals/"+callID, b.keys["approver"].Secret, `{"approved":true,"by":"ops"}`); got.status != 403 || got.code != "on_behalf_not_allowed" {
		t.Errorf("the approver deciding by ops: %d %s, want 403 on_behalf_not_allowed", got.status, got.code)
	}
	got := b.do(t, "POST", "/approvals/"+callID, b.keys["approver"].Secret, `{"approved":true}`)
	if got.status != 200 || got.body["approval"].(map[string]any)["decidedBy"] != "key:"+b.keys["approver"].Key.ID {
		t.Errorf("the approver's decision: %d %v", got.status, got.body)
	}
}

// A tool's Callers narrow who may call it directly: the deployer role may,
// an operator (call, but not a deployer) is 403 naming the roles, the
// token (admin) may.
func TestToolCallers(t *testing.T) {
	b := setupAccess(t)
	for _, c := range []struct {
		who    string
		token  string
		status int
	}{{"deployer", b.keys["deployer"].Secret, 200}, {"operator", b.keys["operator"].Secret, 403}, {"token", testToken, 200}, {"reader", b.keys["reader"].Secret, 403}} {
		got := b.do(t, "POST", "/tools/deploy", c.token, `{"input":{}}`)
		if got.status != c.status {
			t.Errorf("%s calling deploy: %d %s (%s), want %d", c.who, got.status, got.code, got.msg, c.status)
		}
		if c.who == "operator" && !strings.Contains(got.msg, "deployer") {
			t.Errorf("the operator's refusal does not name the roles: %s", got.msg)
		}
	}
	if got := b.do(t, "POST", "/tools/echo", b.keys["operator"].Secret, `{"input":{}}`); got.status != 200 {
		t.Errorf("an operator calling echo (no Callers): %d %s", got.status, got.msg)
	}
}

// Keys over HTTP: created with roles and an expiry, listed without their
// secrets, revoked (401 from the next request), expired (401), unknown or
// malformed (401); a bad request is invalid_key; only admin manages keys;
// idempotency keys are per principal.
func TestKeysOverHTTP(t *testing.T) {
	b := setupAccess(t)
	k := b.createKey(t, testToken, `{"name":"ci","roles":["reader","approver"],"expiresIn":"90d"}`)
	if !regexp.MustCompile(`^ask_[a-z2-7]{13}_[a-z2-7]{52}$`).MatchString(k.Secret) || !strings.HasPrefix(k.Secret, "ask_"+k.Key.ID+"_") {
		t.Errorf("key %q", k.Secret)
	}
	if k.Key.ExpiresAt == nil || k.Key.ExpiresAt.Sub(k.Key.CreatedAt) != 90*24*time.Hour || !slices.Equal(k.Key.Roles, []string{"reader", "approver"}) {
		t.Errorf("record %+v", k.Key)
	}
	if got := b.do(t, "GET", "/sessions", k.Secret, ""); got.status != 200 {
		t.Fatalf("the new key: %d %s", got.status, got.msg)
	}
	list := b.do(t, "GET", "/keys", testToken, "")
	raw, _ := json.Marshal(list.body)
	if list.status != 200 || !strings.Contains(string(raw), k.Key.ID) || strings.Contains(string(raw), k.Secret[len(k.Secret)-52:]) {
		t.Errorf("listing: %d %s", list.status, raw)
	}
	if rec, _ := b.st.Key(context.Background(), k.Key.ID); rec.LastUsedAt == nil {
		t.Error("the key's use was not recorded")
	}
	for _, c := range []struct{ body, want string }{
		{`{"roles":["reader"]}`, "name"},
		{`{"name":"x","roles":[]}`, "role"},
		{`{"name":"x","roles":["superuser"]}`, "superuser"},
		{`{"name":"x","roles":["reader"],"expiresIn":"-1d"}`, "expiry"},
		{`{"name":"x","roles":["reader"],"expiresIn":"soon"}`, "expiry"},
	} {
		if got := b.do(t, "POST", "/keys", testToken, c.body); got.status != 400 || got.code != "invalid_key" || !strings.Contains(got.msg, c.want) {
			t.Errorf("creating %s: %d %s %q", c.body, got.status, got.code, got.msg)
		}
	}
	if got := b.do(t, "POST", "/keys", b.keys["operator"].Secret, `{"name":"x","roles":["admin"]}`); got.status != 403 || !strings.Contains(got.msg, "admin") {
		t.Errorf("an operator creating a key: %d %s", got.status, got.msg)
	}
	if got := b.do(t, "POST", "/keys", b.keys["admin"].Secret, `{"name":"by an admin key","roles":["reader"]}`); got.status != 201 {
		t.Errorf("an admin key creating a key: %d %s", got.status, got.msg)
	}
	revoked := b.do(t, "POST", "/keys/"+k.Key.ID+"/revoke", testToken, "")
	if revoked.status != 200 || revoked.body["key"].(map[string]any)["revokedAt"] == nil {
		t.Fatalf("revoking: %d %v", revoked.status, revoked.body)
	}
	if got := b.do(t, "GET", "/sessions", k.Secret, ""); got.status != 401 || got.code != "unauthorized" {
		t.Errorf("the revoked key: %d %s", got.status, got.code)
	}
	if got := b.do(t, "POST", "/keys/nosuch/revoke", testToken, ""); got.status != 404 || got.code != "key_not_found" {
		t.Errorf("revoking an unknown key: %d %s", got.status, got.code)
	}
	// Each key made or revoked is in the audit log, with who did it.
	audit := b.do(t, "GET", "/audit", testToken, "")
	var made, byAdminKey, gone bool
	for _, e := range audit.body["entries"].([]any) {
		e := e.(map[string]any)
		switch {
		case e["kind"] == "key.created" && e["subject"] == k.Key.ID && e["principal"] == "bearer-token":
			made = true
		case e["kind"] == "key.created" && e["principal"] == "key:"+b.keys["admin"].Key.ID:
			byAdminKey = true
		case e["kind"] == "key.revoked" && e["subject"] == k.Key.ID:
			gone = true
		}
	}
	if !made || !byAdminKey || !gone {
		t.Errorf("the audit log of the keys (created %v, by the admin key %v, revoked %v): %v", made, byAdminKey, gone, audit.body)
	}
	if got := b.do(t, "GET", "/audit", b.keys["operator"].Secret, ""); got.status != 403 {
		t.Errorf("an operator reading the audit log: %d", got.status)
	}
	// An expired key, stored as keys create would have stored it.
	past := time.Now().Add(-time.Second)
	sum := sha256.Sum256([]byte("expiredsecret"))
	if err := b.st.CreateKey(context.Background(), store.CreateKeyParams{Key: store.KeyRecord{Key: api.Key{ID: "expired1", Name: "old", Roles: []string{"admin"}, ExpiresAt: &past}, Hash: sum[:]}}); err != nil {
		t.Fatal(err)
	}
	for _, cred := range []string{"ask_expired1_expiredsecret", "ask_nosuch_secret", "ask_" + b.keys["admin"].Key.ID + "_wrongsecret", "ask_", "ask__x"} {
		if got := b.do(t, "GET", "/sessions", cred, ""); got.status != 401 {
			t.Errorf("%s: %d %s", cred, got.status, got.code)
		}
	}
	// An Idempotency-Key is the principal's: the same key from two
	// principals opens two sessions.
	ids := map[string]bool{}
	for _, who := range []string{b.keys["operator"].Secret, testToken} {
		req, _ := http.NewRequest("POST", b.url+"/session", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+who)
		req.Header.Set(api.IdempotencyHeader, "same-key")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var v api.TurnStartedResponse
		json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		ids[v.SessionID] = true
	}
	if len(ids) != 2 {
		t.Errorf("one Idempotency-Key from two principals opened %d sessions, want 2", len(ids))
	}
}

// Over MCP (the official SDK's client, both protocol versions, so both
// the fast path and the SDK's), an API key calls as its principal: a reader
// (no call permission) and an operator on a tool whose Callers exclude it
// get an isError result naming what is missing; a deployer and an
// operator on a tool open to all are answered; a revoked key is refused.
func TestMCPWithKeys(t *testing.T) {
	b := setupAccess(t)
	mb := &mcpBundle{url: strings.TrimSuffix(b.url, "/v1") + "/mcp"}
	for _, version := range mcpVersions {
		for _, c := range []struct {
			role, tool, want string
			isError          bool
		}{
			{"reader", "echo", "permission call", true},
			{"operator", "deploy", "deployer", true},
			{"operator", "echo", "echoed", false},
			{"deployer", "deploy", "deployed", false},
		} {
			s, err := mb.connect(t, b.keys[c.role].Secret, version)
			if err != nil {
				t.Fatalf("%s connecting (%s): %v", c.role, version, err)
			}
			res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("%s calling %s (%s): %v", c.role, c.tool, version, err)
			}
			if got := text(t, res); res.IsError != c.isError || !strings.Contains(got, c.want) {
				t.Errorf("%s calling %s (%s): isError %v %q, want %v containing %q", c.role, c.tool, version, res.IsError, got, c.isError, c.want)
			}
		}
	}
	k := b.createKey(t, testToken, `{"name":"brief","roles":["operator"]}`)
	if got := b.do(t, "POST", "/keys/"+k.Key.ID+"/revoke", testToken, ""); got.status != 200 {
		t.Fatal(got.msg)
	}
	if _, err := mb.connect(t, k.Secret, ""); err == nil {
		t.Error("a revoked key connected over MCP")
	}
}

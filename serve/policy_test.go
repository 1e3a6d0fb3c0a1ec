package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/pgtest"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/postgres"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// deployInput is the input of the policy tests' deploy tool.
type deployInput struct {
	Env     string `json:"env"`
	Version string `json:"version"`
}

// scaleInput is the input of the policy tests' scale tool.
type scaleInput struct {
	Replicas int `json:"replicas"`
}

// policyRuns counts what the policy tests' tools ran, by the input that
// ran, across the hosts of a test.
type policyRuns struct {
	mu  sync.Mutex
	ran []string // "deploy production v2", "scale 5"
}

func (r *policyRuns) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ran = append(r.ran, s)
}

func (r *policyRuns) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ran...)
}

// policyTools are the worked example's tools: deploy (production needs two
// deployers, never the requester), release (three deployers, never the
// requester), scale (more than 3 replicas needs a deployer; edits allowed)
// and rotate (no edits).
func policyTools(t testing.TB, runs *policyRuns) *tool.Set {
	deploy, err := tool.New("deploy", tool.Config{
		Description:   "Deploy a version.",
		NeedsApproval: tool.When(func(in deployInput) bool { return in.Env == "production" }),
		Approval:      &tool.ApprovalPolicy{Roles: []string{"deployer"}, NotRequester: true, Quorum: 2},
	}, func(ctx context.Context, call *tool.Call, in deployInput) (any, error) {
		runs.add("deploy " + in.Env + " " + in.Version)
		return "deployed " + in.Version + " to " + in.Env, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	scale, err := tool.New("scale", tool.Config{
		Description:   "Scale the service.",
		NeedsApproval: tool.When(func(in scaleInput) bool { return in.Replicas > 3 }),
		Approval:      &tool.ApprovalPolicy{Roles: []string{"deployer"}},
	}, func(ctx context.Context, call *tool.Call, in scaleInput) (any, error) {
		runs.add(fmt.Sprintf("scale %d", in.Replicas))
		return map[string]int{"replicas": in.Replicas}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rotate, err := tool.New("rotate", tool.Config{
		Description: "Rotate a secret.", NeedsApproval: tool.Always, Approval: &tool.ApprovalPolicy{NoEdit: true},
	}, func(ctx context.Context, call *tool.Call, in struct {
		Name string `json:"name"`
	}) (any, error) {
		runs.add("rotate " + in.Name)
		return "rotated", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	release, err := tool.New("release", tool.Config{
		Description: "Release a version to everyone.", NeedsApproval: tool.Always,
		Approval: &tool.ApprovalPolicy{Roles: []string{"deployer"}, NotRequester: true, Quorum: 3},
	}, func(ctx context.Context, call *tool.Call, in struct {
		Version string `json:"version"`
	}) (any, error) {
		runs.add("release " + in.Version)
		return "released " + in.Version, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(deploy, scale, rotate, release)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// policyRoles: deployers call, open sessions and approve.
var policyRoles = map[string][]api.Permission{"deployer": {api.PermRead, api.PermMessage, api.PermCall, api.PermApprove}}

// policyHost is one host of a policy test, served on loopback.
type policyHost struct {
	url string // http://127.0.0.1:port/agent/v1
	h   *host.Host
	st  store.Store
}

func startPolicyHost(t testing.TB, st store.Store, runs *policyRuns) *policyHost {
	t.Helper()
	dir := t.TempDir()
	h, err := host.New(policyTools(t, runs), &host.Options{StateRoot: dir, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(h, &serve.Options{Slug: "agent", Token: testToken, ApprovalWait: -1, Roles: policyRoles})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); h.Close(); st.Close() })
	return &policyHost{url: ts.URL + "/agent/v1", h: h, st: st}
}

// send makes one request; it does not touch t, so that goroutines may.
func (p *policyHost) send(method, path, token, body string) (apiAnswer, error) {
	return sendAPI(p.url, method, path, token, body)
}

func (p *policyHost) do(t *testing.T, method, path, token, body string) apiAnswer {
	t.Helper()
	a, err := p.send(method, path, token, body)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// key creates an API key with roles and returns its secret and principal.
func (p *policyHost) key(t *testing.T, name string, roles ...string) (secret, principal string) {
	t.Helper()
	r, _ := json.Marshal(roles)
	a := p.do(t, "POST", "/keys", testToken, `{"name":"`+name+`","roles":`+string(r)+`}`)
	if a.status != http.StatusCreated {
		t.Fatalf("creating key %s: %d %s", name, a.status, a.raw)
	}
	var k api.KeyCreated
	json.Unmarshal([]byte(a.raw), &k)
	return k.Secret, "key:" + k.Key.ID
}

// park calls a tool as token (in session, if not "") and returns the
// parked call's id.
func (p *policyHost) park(t *testing.T, token, toolName, input, session string) string {
	t.Helper()
	body := `{"input":` + input
	if session != "" {
		body += `,"sessionId":"` + session + `"`
	}
	a := p.do(t, "POST", "/tools/"+toolName, token, body+`}`)
	if a.status != http.StatusAccepted {
		t.Fatalf("calling %s %s: %d %s, want 202 (parked)", toolName, input, a.status, a.raw)
	}
	return a.body["callId"].(string)
}

// approval reads a call as the host token.
func (p *policyHost) approval(t *testing.T, callID string) api.Approval {
	t.Helper()
	a, err := p.h.Approvals().Get(context.Background(), callID)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// waitOutcome waits for a decided call's outcome.
func (p *policyHost) waitOutcome(t *testing.T, callID string) api.Approval {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := p.approval(t, callID)
		if a.Outcome != nil {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("call %s has no outcome after 10s: %+v", callID, a)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// decisions are a session's approval events, as "kind by n/q" lines, and
// the payloads of its action.approval_resolved events.
func decisions(t *testing.T, st store.Store, sessionID string) ([]string, []api.ApprovalResolved) {
	t.Helper()
	evs, err := st.Events(context.Background(), sessionID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return decisionLines(evs)
}

// decisionLines are the approval events among evs as "kind by n/q" lines
// (with their calls' results), and the payloads of the
// action.approval_resolved events.
func decisionLines(evs []api.Event) ([]string, []api.ApprovalResolved) {
	var lines []string
	var resolved []api.ApprovalResolved
	for _, e := range evs {
		switch e.Kind {
		case api.KindApprovalVoted:
			v, _ := api.Decode[api.ApprovalVoted](e)
			lines = append(lines, fmt.Sprintf("voted %s %d/%d", v.By, v.Approvals, v.Quorum))
		case api.KindApprovalResolved:
			r, _ := api.Decode[api.ApprovalResolved](e)
			lines = append(lines, fmt.Sprintf("resolved %s %s %d/%d", r.Status, r.By, r.Approvals, r.Quorum))
			resolved = append(resolved, r)
		case api.KindActionResult:
			r, _ := api.Decode[api.ActionResult](e)
			lines = append(lines, "result "+string(r.Result))
		}
	}
	return lines, resolved
}

// twoPolicyHosts starts two policy hosts on one PostgreSQL schema, the
// runs of their tools counted together.
func twoPolicyHosts(t *testing.T) ([]*policyHost, *policyRuns) {
	open := sharedPostgres(t)
	runs := &policyRuns{}
	return []*policyHost{startPolicyHost(t, open(), runs), startPolicyHost(t, open(), runs)}, runs
}

// sharedPostgres returns what opens a store on a PostgreSQL schema of the
// test's own: once for each host that shares it.
func sharedPostgres(t *testing.T) func() store.Store {
	url := pgtest.Schema(t)
	return func() store.Store {
		st, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
}

func sqliteStore(t testing.TB) store.Store {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Four-eyes and roles: the requester's approval, an operator's (approve,
// but not a deployer) and a key naming someone else are refused with their
// codes and leave the call parked; a deployer's first approval is one of
// two (a second by the same key is already_approved_by_you), and the call
// runs on the second, once.
func TestApprovalPolicyFourEyes(t *testing.T) {
	runs := &policyRuns{}
	p := startPolicyHost(t, sqliteStore(t), runs)
	requester, _ := p.key(t, "requester", "deployer")
	alice, alicePrincipal := p.key(t, "alice", "deployer")
	bob, bobPrincipal := p.key(t, "bob", "deployer")
	operator, _ := p.key(t, "operator", "operator")

	sess := p.do(t, "POST", "/session", requester, `{}`)
	if sess.status != http.StatusCreated {
		t.Fatalf("opening a session: %d %s", sess.status, sess.raw)
	}
	sid := sess.body["sessionId"].(string)
	call := p.park(t, requester, "deploy", `{"env":"production","version":"v2"}`, sid)

	for _, c := range []struct {
		name, token, body string
		status            int
		code              string
	}{
		{"the requester", requester, `{"approved":true}`, 403, "requester_cannot_approve"},
		{"the requester denying", requester, `{"approved":false,"reason":"mine"}`, 403, "requester_cannot_approve"},
		{"an operator", operator, `{"approved":true}`, 403, "not_an_approver"},
		{"a key naming another", alice, `{"approved":true,"onBehalfOf":"ceo"}`, 403, "on_behalf_not_allowed"},
		{"a key with by", alice, `{"approved":true,"by":"ceo"}`, 403, "on_behalf_not_allowed"},
	} {
		if got := p.do(t, "POST", "/approvals/"+call, c.token, c.body); got.status != c.status || got.code != c.code {
			t.Errorf("%s: %d %s (%s), want %d %s", c.name, got.status, got.code, got.msg, c.status, c.code)
		}
	}
	if a := p.approval(t, call); a.Status != api.ApprovalPending || len(a.Approvals) != 0 {
		t.Fatalf("after the refusals: %s with %d approvals, want pending with none", a.Status, len(a.Approvals))
	}

	got := p.do(t, "POST", "/approvals/"+call, alice, `{"approved":true}`)
	ap, _ := got.body["approval"].(map[string]any)
	if got.status != 200 || ap["status"] != "pending" || ap["quorum"] != float64(2) || len(ap["approvals"].([]any)) != 1 {
		t.Fatalf("alice's approval: %d %s, want 200 pending with 1 of 2 approvals", got.status, got.raw)
	}
	if got := p.do(t, "POST", "/approvals/"+call, alice, `{"approved":true}`); got.status != 409 || got.code != "already_approved_by_you" {
		t.Errorf("alice again: %d %s, want 409 already_approved_by_you", got.status, got.code)
	}
	if r := runs.list(); len(r) != 0 {
		t.Fatalf("ran after one approval of two: %v", r)
	}
	got = p.do(t, "POST", "/approvals/"+call, bob, `{"approved":true}`)
	if got.status != 200 || got.body["approval"].(map[string]any)["status"] != "approved" {
		t.Fatalf("bob's approval: %d %s, want approved", got.status, got.raw)
	}
	a := p.waitOutcome(t, call)
	if r := runs.list(); len(r) != 1 || r[0] != "deploy production v2" {
		t.Errorf("runs: %v, want the one deploy", r)
	}
	if a.DecidedBy != bobPrincipal || len(a.Approvals) != 2 || a.Approvals[0].By != alicePrincipal || a.Approvals[1].By != bobPrincipal {
		t.Errorf("the decided call: by %s, approvals %+v", a.DecidedBy, a.Approvals)
	}
	lines, _ := decisions(t, p.st, sid)
	want := []string{"voted " + alicePrincipal + " 1/2", "resolved approved " + bobPrincipal + " 2/2", `result "deployed v2 to production"`}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("the stream:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	// The audit log has each approval, as it came: a vote, then the
	// decision.
	entries, _, err := p.st.ListAudit(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var audited []string
	for _, e := range entries {
		if e.Subject == call {
			audited = append(audited, string(e.Kind)+" "+e.Principal)
		}
	}
	if want := []string{"approval.voted " + alicePrincipal, "approval.decided " + bobPrincipal}; !slices.Equal(audited, want) {
		t.Errorf("the audit log of the call: %v, want %v", audited, want)
	}

	// A deny among the approvals denies: the call never runs, and
	// approvals after it are already_resolved.
	call = p.park(t, requester, "deploy", `{"env":"production","version":"v3"}`, "")
	if got := p.do(t, "POST", "/approvals/"+call, alice, `{"approved":true}`); got.status != 200 {
		t.Fatalf("alice approving v3: %d %s", got.status, got.raw)
	}
	if got := p.do(t, "POST", "/approvals/"+call, bob, `{"approved":false,"reason":"not today"}`); got.status != 200 || got.body["approval"].(map[string]any)["status"] != "denied" {
		t.Fatalf("bob denying v3: %d %s", got.status, got.raw)
	}
	if got := p.do(t, "POST", "/approvals/"+call, operator, `{"approved":true}`); got.status != 403 {
		t.Errorf("an operator after the deny: %d %s, want 403", got.status, got.code)
	}
	carol, _ := p.key(t, "carol", "deployer")
	if got := p.do(t, "POST", "/approvals/"+call, carol, `{"approved":true}`); got.status != 409 || got.code != "already_resolved" {
		t.Errorf("carol after the deny: %d %s, want 409 already_resolved", got.status, got.code)
	}
	if out := p.waitOutcome(t, call).Outcome; !out.IsError || !strings.Contains(string(out.Result), "not today") {
		t.Errorf("the denied call's outcome: %+v", out)
	}
	if r := runs.list(); len(r) != 1 {
		t.Errorf("runs after the deny: %v", r)
	}

	// The host token (admin) names whom it decides for with onBehalfOf,
	// recorded as bearer-token:<onBehalfOf>, and counts once whatever name
	// it gives.
	call = p.park(t, requester, "deploy", `{"env":"production","version":"v4"}`, "")
	got = p.do(t, "POST", "/approvals/"+call, testToken, `{"approved":true,"onBehalfOf":"ops"}`)
	if got.status != 200 || got.body["approval"].(map[string]any)["approvals"].([]any)[0].(map[string]any)["by"] != "bearer-token:ops" {
		t.Fatalf("the token's approval on behalf of ops: %d %s", got.status, got.raw)
	}
	if got := p.do(t, "POST", "/approvals/"+call, testToken, `{"approved":true,"onBehalfOf":"someone-else"}`); got.status != 409 || got.code != "already_approved_by_you" {
		t.Errorf("the token again under another name: %d %s, want 409 already_approved_by_you", got.status, got.code)
	}
}

// A by in a decision's body is refused: from a principal that is not an
// admin as on_behalf_not_allowed (as onBehalfOf is), from an admin (the
// host token or an admin key) as malformed_json telling it to say
// onBehalfOf; each refusal leaves the call parked and undecided. An
// admin's onBehalfOf is recorded as "<principal>:<name>".
func TestDecisionBodyBy(t *testing.T) {
	runs := &policyRuns{}
	p := startPolicyHost(t, sqliteStore(t), runs)
	approver, _ := p.key(t, "ann", "approver")
	admin, adminID := p.key(t, "root", "admin")
	call := p.park(t, testToken, "rotate", `{"name":"db"}`, "")

	for _, c := range []struct {
		name, token, body string
		status            int
		code, says        string
	}{
		{"an approver's by", approver, `{"approved":true,"by":"ceo"}`, 403, "on_behalf_not_allowed", "(by)"},
		{"an approver's onBehalfOf", approver, `{"approved":true,"onBehalfOf":"ceo"}`, 403, "on_behalf_not_allowed", "(onBehalfOf)"},
		{"an approver's deny by", approver, `{"approved":false,"reason":"no","by":"ceo"}`, 403, "on_behalf_not_allowed", "(by)"},
		{"the token's by", testToken, `{"approved":true,"by":"ops"}`, 400, "malformed_json", `send {"onBehalfOf": "ops"}`},
		{"an admin key's by", admin, `{"approved":false,"reason":"no","by":"ops"}`, 400, "malformed_json", "onBehalfOf"},
		{"the token's by and onBehalfOf", testToken, `{"approved":true,"by":"ops","onBehalfOf":"ops"}`, 400, "malformed_json", "onBehalfOf"},
	} {
		got := p.do(t, "POST", "/approvals/"+call, c.token, c.body)
		if got.status != c.status || got.code != c.code || !strings.Contains(got.msg, c.says) {
			t.Errorf("%s: %d %s %q, want %d %s saying %q", c.name, got.status, got.code, got.msg, c.status, c.code, c.says)
		}
	}
	if a := p.approval(t, call); a.Status != api.ApprovalPending || len(runs.list()) != 0 {
		t.Fatalf("after the refusals: %s, ran %v; want pending, not run", a.Status, runs.list())
	}

	got := p.do(t, "POST", "/approvals/"+call, admin, `{"approved":true,"onBehalfOf":"ops"}`)
	if ap, _ := got.body["approval"].(map[string]any); got.status != 200 || ap["decidedBy"] != adminID+":ops" {
		t.Fatalf("an admin key's onBehalfOf: %d %s, want approved by %s:ops", got.status, got.raw, adminID)
	}
	if r := p.waitOutcome(t, call); r.Outcome.IsError || len(runs.list()) != 1 {
		t.Errorf("the approved call: %+v, ran %v", r.Outcome, runs.list())
	}
}

// A quorum of 2 on two hosts sharing one PostgreSQL, approved by 20
// deployers at once, half through each host: one approval is the first of
// two, one decides, the other 18 are already_resolved, and the call runs
// once, with the second approval.
func TestApprovalQuorumTwoHosts(t *testing.T) {
	hosts, runs := twoPolicyHosts(t)
	requester, _ := hosts[0].key(t, "requester", "deployer")
	const approvers = 20
	secrets := make([]string, approvers)
	principals := map[string]bool{}
	for i := range secrets {
		var pr string
		secrets[i], pr = hosts[i%2].key(t, fmt.Sprintf("deployer-%d", i), "deployer")
		principals[pr] = true
	}
	sess := hosts[0].do(t, "POST", "/session", requester, `{}`)
	sid := sess.body["sessionId"].(string)
	call := hosts[1].park(t, requester, "deploy", `{"env":"production","version":"v7"}`, sid)

	answers := make([]apiAnswer, approvers)
	errs := make([]error, approvers)
	var wg sync.WaitGroup
	var start sync.WaitGroup
	start.Add(1)
	for i := range approvers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			answers[i], errs[i] = hosts[i%2].send("POST", "/approvals/"+call, secrets[i], `{"approved":true}`)
		}()
	}
	start.Done()
	wg.Wait()
	count := map[string]int{}
	for i, a := range answers {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		key := fmt.Sprint(a.status, " ", a.code)
		if a.status == 200 {
			key += a.body["approval"].(map[string]any)["status"].(string)
		}
		count[key]++
	}
	if count["200 pending"] != 1 || count["200 approved"] != 1 || count["409 already_resolved"] != approvers-2 {
		t.Errorf("answers: %v, want 1 pending (the first approval), 1 approved (the second), %d already_resolved", count, approvers-2)
	}
	a := hosts[0].waitOutcome(t, call)
	var ran atomic.Int32
	for _, r := range runs.list() {
		if r == "deploy production v7" {
			ran.Add(1)
		}
	}
	if ran.Load() != 1 || a.Status != api.ApprovalApproved || len(a.Approvals) != 2 || a.DecidedBy != a.Approvals[1].By {
		t.Errorf("ran %d times; the call: %s by %s, approvals %+v", ran.Load(), a.Status, a.DecidedBy, a.Approvals)
	}
	for _, v := range a.Approvals {
		if !principals[v.By] {
			t.Errorf("an approval by %s, not one of the deployers", v.By)
		}
	}
	lines, _ := decisions(t, hosts[1].st, sid)
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "voted key:") || !strings.HasSuffix(lines[0], " 1/2") ||
		lines[1] != "resolved approved "+a.DecidedBy+" 2/2" || lines[2] != `result "deployed v7 to production"` {
		t.Errorf("the stream:\n%s", strings.Join(lines, "\n"))
	}
}

// streamDecisions are a session's approval events as its stream shows
// them (GET …/events?follow=false, as the host token), as "kind by n/q"
// lines like decisions'.
func (p *policyHost) streamDecisions(t *testing.T, sessionID string) ([]string, []api.ApprovalResolved) {
	t.Helper()
	got := p.do(t, "GET", "/session/"+sessionID+"/events?follow=false", testToken, "")
	var list api.EventList
	if err := json.Unmarshal([]byte(got.raw), &list); err != nil || got.status != 200 {
		t.Fatalf("reading the stream: %d %s %v", got.status, got.raw, err)
	}
	return decisionLines(list.Events)
}

// answeredCall is the status of the call a decision's answer carries: the
// approval of a 200, the decided call of a 409 already_resolved.
func answeredCall(a apiAnswer) api.ApprovalStatus {
	var body struct {
		Approval *api.Approval `json:"approval"`
		Error    *api.Error    `json:"error"`
	}
	json.Unmarshal([]byte(a.raw), &body)
	switch {
	case body.Approval != nil:
		return body.Approval.Status
	case body.Error != nil && body.Error.Approval != nil:
		return body.Error.Approval.Status
	}
	return ""
}

// A quorum of 3, approved one after another: the stream shows each
// approval as it comes, "1 of 3" and "2 of 3", with the call still pending
// and not run, and the third decides it ("3 of 3") and runs it, once; an
// approval after that is 409 already_resolved and runs nothing. A deny
// after two approvals denies ("denied after 2 of 3"), and nothing runs.
func TestApprovalQuorumEachVote(t *testing.T) {
	runs := &policyRuns{}
	p := startPolicyHost(t, sqliteStore(t), runs)
	requester, _ := p.key(t, "requester", "deployer")
	sess := p.do(t, "POST", "/session", requester, `{}`)
	if sess.status != http.StatusCreated {
		t.Fatalf("opening a session: %d %s", sess.status, sess.raw)
	}
	sid := sess.body["sessionId"].(string)
	call := p.park(t, requester, "release", `{"version":"v9"}`, sid)

	var want []string
	for i, name := range []string{"ann", "ben", "cat"} {
		secret, pr := p.key(t, name, "deployer")
		got := p.do(t, "POST", "/approvals/"+call, secret, `{"approved":true}`)
		var ans api.ApprovalResponse
		json.Unmarshal([]byte(got.raw), &ans)
		a := ans.Approval
		if i < 2 {
			if got.status != 200 || a.Status != api.ApprovalPending || len(a.Approvals) != i+1 || a.Quorum != 3 || a.Approvals[i].By != pr {
				t.Fatalf("approval %d by %s: %d %s, want 200 pending with %d of 3", i+1, pr, got.status, got.raw, i+1)
			}
			want = append(want, fmt.Sprintf("voted %s %d/3", pr, i+1))
			if lines, _ := p.streamDecisions(t, sid); !slices.Equal(lines, want) {
				t.Errorf("the stream after approval %d:\n%s\nwant:\n%s", i+1, strings.Join(lines, "\n"), strings.Join(want, "\n"))
			}
			if r := runs.list(); len(r) != 0 {
				t.Fatalf("ran after %d of 3 approvals: %v", i+1, r)
			}
			continue
		}
		if got.status != 200 || a.Status != api.ApprovalApproved || a.DecidedBy != pr || len(a.Approvals) != 3 {
			t.Fatalf("the third approval by %s: %d %s, want 200 approved by it", pr, got.status, got.raw)
		}
		want = append(want, fmt.Sprintf("resolved approved %s 3/3", pr), `result "released v9"`)
	}
	p.waitOutcome(t, call)
	late, _ := p.key(t, "dan", "deployer")
	if got := p.do(t, "POST", "/approvals/"+call, late, `{"approved":true}`); got.status != 409 || got.code != "already_resolved" {
		t.Errorf("a fourth approval: %d %s, want 409 already_resolved", got.status, got.code)
	}
	if lines, _ := p.streamDecisions(t, sid); !slices.Equal(lines, want) {
		t.Errorf("the stream:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if r := runs.list(); !slices.Equal(r, []string{"release v9"}) {
		t.Errorf("ran %v, want release v9 once", r)
	}

	// Two approvals, then a deny: denied by the denier after 2 of 3, never
	// run; a third approval after it is late.
	sid = p.do(t, "POST", "/session", requester, `{}`).body["sessionId"].(string) // the first call's turn may still be ending
	call = p.park(t, requester, "release", `{"version":"v10"}`, sid)
	ann, annID := p.key(t, "ann2", "deployer")
	ben, benID := p.key(t, "ben2", "deployer")
	eve, eveID := p.key(t, "eve", "deployer")
	p.do(t, "POST", "/approvals/"+call, ann, `{"approved":true}`)
	p.do(t, "POST", "/approvals/"+call, ben, `{"approved":true}`)
	if got := p.do(t, "POST", "/approvals/"+call, eve, `{"approved":false,"reason":"not v10"}`); got.status != 200 || answeredCall(got) != api.ApprovalDenied {
		t.Fatalf("the deny after two approvals: %d %s", got.status, got.raw)
	}
	if got := p.do(t, "POST", "/approvals/"+call, late, `{"approved":true}`); got.status != 409 || answeredCall(got) != api.ApprovalDenied {
		t.Errorf("an approval after the deny: %d %s, want 409 already_resolved with the call denied", got.status, got.raw)
	}
	if a := p.waitOutcome(t, call); !a.Outcome.IsError {
		t.Errorf("the denied call's outcome: %+v", a.Outcome)
	}
	want = []string{"voted " + annID + " 1/3", "voted " + benID + " 2/3", "resolved denied " + eveID + " 2/3", `result "denied by ` + eveID + `: not v10"`}
	if lines, _ := p.streamDecisions(t, sid); !slices.Equal(lines, want) {
		t.Errorf("the stream:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if r := runs.list(); !slices.Equal(r, []string{"release v9"}) {
		t.Errorf("ran %v, want release v9 once and v10 never", r)
	}
}

// A quorum of 3 on two hosts sharing one PostgreSQL, decided by 20
// deployers at once, half through each host, some of whom deny (one, four
// or half of them, different ones each round). Whichever order the store records them in,
// the outcome is that order's: one answer decides; each approval recorded
// before it is 200 pending and on the stream as "n of 3", in order; every
// later one is 409 already_resolved with the decided call. If the deny
// came before the third approval, the call is denied by the denier (the
// stream's decision counting the approvals before it) and never runs; otherwise it is approved by the third approver, runs once,
// and the deny was late. No call runs twice.
func TestApprovalQuorumDenyAmongConcurrentApprovers(t *testing.T) {
	hosts, runs := twoPolicyHosts(t)
	requester, _ := hosts[0].key(t, "requester", "deployer")
	const approvers = 20
	secrets, principals := make([]string, approvers), make([]string, approvers)
	for i := range secrets {
		secrets[i], principals[i] = hosts[i%2].key(t, fmt.Sprintf("deployer-%d", i), "deployer")
	}
	outcomes := map[api.ApprovalStatus]int{}
	for round, deniers := range [][]int{{0}, {7}, {19}, {0, 5, 10, 15}, {1, 3, 5, 7, 9, 11, 13, 15, 17, 19}, {0, 2, 4, 6, 8, 10, 12, 14, 16, 18}} {
		denies := func(i int) bool { return slices.Contains(deniers, i) }
		version := fmt.Sprintf("r%d", round)
		sess := hosts[0].do(t, "POST", "/session", requester, `{}`)
		sid := sess.body["sessionId"].(string)
		call := hosts[1].park(t, requester, "release", `{"version":"`+version+`"}`, sid)

		answers := make([]apiAnswer, approvers)
		errs := make([]error, approvers)
		var wg, start sync.WaitGroup
		start.Add(1)
		for i := range approvers {
			body := `{"approved":true}`
			if denies(i) {
				body = `{"approved":false,"reason":"not this one"}`
			}
			wg.Go(func() {
				start.Wait()
				answers[i], errs[i] = hosts[i%2].send("POST", "/approvals/"+call, secrets[i], body)
			})
		}
		start.Done()
		wg.Wait()

		a := hosts[round%2].waitOutcome(t, call)
		outcomes[a.Status]++
		lines, resolved := hosts[(round+1)%2].streamDecisions(t, sid)
		if len(resolved) != 1 {
			t.Fatalf("round %d: %d decisions on the stream:\n%s", round, len(resolved), strings.Join(lines, "\n"))
		}
		r := resolved[0]
		// The recorded order: the approvals short of the quorum, then the
		// decision, then (approved) the result.
		var want []string
		pending := map[string]bool{}
		for n, line := range lines {
			if !strings.HasPrefix(line, "voted ") {
				break
			}
			by := strings.Fields(line)[1]
			pending[by] = true
			want = append(want, fmt.Sprintf("voted %s %d/3", by, n+1))
		}
		votes := len(want)
		switch a.Status {
		case api.ApprovalDenied:
			if !denies(slices.Index(principals, r.By)) || votes > 2 || a.Outcome == nil || !a.Outcome.IsError {
				t.Errorf("round %d: denied by %s after %d approvals, outcome %+v; want denied by a denier before the third approval, not run",
					round, r.By, votes, a.Outcome)
			}
			want = append(want, fmt.Sprintf("resolved denied %s %d/3", r.By, votes), `result "denied by `+r.By+`: not this one"`)
		case api.ApprovalApproved:
			if votes != 2 || r.Approvals != 3 || a.DecidedBy != r.By || len(a.Approvals) != 3 || a.Approvals[2].By != r.By {
				t.Errorf("round %d: approved by %s with %d approvals recorded before it (%+v); want the third approval to decide", round, r.By, votes, a.Approvals)
			}
			want = append(want, fmt.Sprintf("resolved approved %s 3/3", r.By), `result "released `+version+`"`)
		default:
			t.Fatalf("round %d: the call is %s", round, a.Status)
		}
		if !slices.Equal(lines, want) {
			t.Errorf("round %d: the stream:\n%s\nwant:\n%s", round, strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
		// Every answer agrees with the record: the approvals before the
		// decision were pending, the decider's decided, the rest were late.
		for i, ans := range answers {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			switch pr := principals[i]; {
			case pending[pr]:
				if ans.status != 200 || answeredCall(ans) != api.ApprovalPending {
					t.Errorf("round %d: %s, recorded as an approval short of the quorum, was answered %d %s", round, pr, ans.status, ans.raw)
				}
			case pr == r.By:
				if ans.status != 200 || answeredCall(ans) != a.Status {
					t.Errorf("round %d: %s, who decided, was answered %d %s", round, pr, ans.status, ans.raw)
				}
			default:
				if ans.status != 409 || ans.code != "already_resolved" || answeredCall(ans) != a.Status {
					t.Errorf("round %d: %s, late, was answered %d %s; want 409 already_resolved with the call %s", round, pr, ans.status, ans.raw, a.Status)
				}
			}
		}
		ran := 0
		for _, v := range runs.list() {
			if v == "release "+version {
				ran++
			}
		}
		if want := map[api.ApprovalStatus]int{api.ApprovalApproved: 1}[a.Status]; ran != want {
			t.Errorf("round %d: the %s call ran %d times, want %d", round, a.Status, ran, want)
		}
	}
	t.Logf("outcomes over the rounds: %v", outcomes)
}

// Edit before approve: an edit that breaks the schema is invalid_input and
// the call stays parked; a valid one runs the edited input, and the
// stream carries it with the changes; an edit that no longer needs
// approval runs at once, whatever the quorum; a tool with NoEdit refuses
// one.
func TestApprovalEdit(t *testing.T) {
	runs := &policyRuns{}
	p := startPolicyHost(t, sqliteStore(t), runs)
	requester, _ := p.key(t, "requester", "deployer")
	alice, _ := p.key(t, "alice", "deployer")
	sess := p.do(t, "POST", "/session", requester, `{}`)
	sid := sess.body["sessionId"].(string)

	call := p.park(t, requester, "scale", `{"replicas":8}`, sid)
	if got := p.do(t, "POST", "/approvals/"+call, alice, `{"approved":true,"input":{"replicas":"many"}}`); got.status != 400 || got.code != "invalid_input" {
		t.Errorf("an invalid edit: %d %s, want 400 invalid_input", got.status, got.code)
	}
	if got := p.do(t, "GET", "/calls/"+call, alice, ""); got.body["status"] != string(api.CallAwaitingApproval) {
		t.Errorf("after the invalid edit the call is %v, want approval_pending", got.body["status"])
	}
	got := p.do(t, "POST", "/approvals/"+call, alice, `{"approved":true,"input":{"replicas":5}}`)
	if got.status != 200 {
		t.Fatalf("a valid edit: %d %s", got.status, got.raw)
	}
	a := p.waitOutcome(t, call)
	if string(a.Outcome.Result) != `{"replicas":5}` || string(a.Input) != `{"replicas":5}` || string(a.OriginalInput) != `{"replicas":8}` {
		t.Errorf("the edited call: ran %s with input %s (asked %s)", a.Outcome.Result, a.Input, a.OriginalInput)
	}
	_, resolved := decisions(t, p.st, sid)
	if len(resolved) != 1 || string(resolved[0].Input) != `{"replicas":5}` || len(resolved[0].Changes) != 1 ||
		fmt.Sprintf("%s %s→%s", resolved[0].Changes[0].Path, resolved[0].Changes[0].From, resolved[0].Changes[0].To) != "input.replicas 8→5" {
		t.Errorf("the decision on the stream: %+v", resolved)
	}

	// An edit to staging no longer needs approval: the one approval runs
	// it, though production needs two.
	call = p.park(t, requester, "deploy", `{"env":"production","version":"v9"}`, "")
	got = p.do(t, "POST", "/approvals/"+call, alice, `{"approved":true,"input":{"env":"staging","version":"v9"}}`)
	if got.status != 200 || got.body["approval"].(map[string]any)["status"] != "approved" {
		t.Fatalf("an edit to staging: %d %s, want approved at once", got.status, got.raw)
	}
	if a := p.waitOutcome(t, call); string(a.Outcome.Result) != `"deployed v9 to staging"` {
		t.Errorf("the edit to staging ran %s", a.Outcome.Result)
	}

	// NoEdit: a changed input is refused, the same input approves.
	call = p.park(t, requester, "rotate", `{"name":"db"}`, "")
	if got := p.do(t, "POST", "/approvals/"+call, alice, `{"approved":true,"input":{"name":"all"}}`); got.status != 403 || got.code != "edit_not_allowed" {
		t.Errorf("editing a NoEdit tool's call: %d %s, want 403 edit_not_allowed", got.status, got.code)
	}
	if got := p.do(t, "POST", "/approvals/"+call, alice, `{"approved":true,"input":{"name":"db"}}`); got.status != 200 {
		t.Errorf("approving a NoEdit call with its own input: %d %s", got.status, got.raw)
	}
	p.waitOutcome(t, call)
	want := []string{"scale 5", "deploy staging v9", "rotate db"}
	if r := runs.list(); strings.Join(r, ",") != strings.Join(want, ",") {
		t.Errorf("runs: %v, want %v", r, want)
	}
}

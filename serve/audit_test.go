package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/tool"
)

// Decisions over HTTP are in the audit log with their principal and how
// they came (the CLI's User-Agent, the playground's cookie, any other
// client); playground sign-ins and sign-outs too; GET /audit pages it.
func TestAuditOverHTTP(t *testing.T) {
	gated, _ := tool.New("promote", tool.Config{Description: "Promote.", NeedsApproval: tool.Always},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "promoted", nil })
	set, _ := tool.NewSet(gated)
	h, err := host.New(set, &host.Options{StateRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(h, &serve.Options{Slug: "agent", Token: testToken, ApprovalWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Shutdown(); ts.Close(); h.Close() })
	c := ts.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	do := func(method, path, body string, headers ...string) (int, []byte) {
		t.Helper()
		r, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		for i := 0; i+1 < len(headers); i += 2 {
			r.Header.Set(headers[i], headers[i+1])
		}
		resp, err := c.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	bearer := []string{"Authorization", "Bearer " + testToken}
	park := func() string {
		t.Helper()
		code, b := do("POST", "/agent/v1/tools/promote", `{"input":{}}`, bearer...)
		var v struct {
			CallID string `json:"callId"`
		}
		if json.Unmarshal(b, &v); code != http.StatusAccepted || v.CallID == "" {
			t.Fatalf("parking: %d %s", code, b)
		}
		return v.CallID
	}

	code, _ := do("POST", "/agent/playground/signin", url.Values{"token": {testToken}}.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	if code != http.StatusSeeOther {
		t.Fatalf("signing in: %d", code)
	}
	// The sign-in's cookie, from a second sign-in's answer, read here.
	r, _ := http.NewRequest("POST", ts.URL+"/agent/playground/signin", strings.NewReader(url.Values{"token": {testToken}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie string
	for _, ck := range resp.Cookies() {
		if ck.Name == serve.PlaygroundCookie {
			cookie = ck.Value
		}
	}
	withCookie := []string{"Cookie", serve.PlaygroundCookie + "=" + cookie, serve.CSRFHeader, serve.PlaygroundCSRF(srv, cookie)}

	calls := []string{park(), park(), park()}
	for i, d := range []struct {
		body    string
		headers []string
	}{
		{`{"approved":true,"onBehalfOf":"alice"}`, append([]string{"User-Agent", api.CLIUserAgent + "/dev"}, bearer...)},
		{`{"approved":false,"reason":"no","onBehalfOf":"bob"}`, withCookie},
		{`{"approved":true}`, bearer},
	} {
		if code, b := do("POST", "/agent/v1/approvals/"+calls[i], d.body, d.headers...); code != http.StatusOK {
			t.Fatalf("deciding %s: %d %s", calls[i], code, b)
		}
	}
	if code, b := do("POST", "/agent/playground/signout", "", withCookie...); code != http.StatusOK {
		t.Fatalf("signing out: %d %s", code, b)
	}

	var all []api.AuditEntry
	var head api.AuditHead
	for after, pages := int64(0), 0; ; pages++ {
		code, b := do("GET", "/agent/v1/audit?limit=2&after="+strconv.FormatInt(after, 10), "", bearer...)
		var list api.AuditList
		if err := json.Unmarshal(b, &list); err != nil || code != http.StatusOK || !list.OK {
			t.Fatalf("GET /audit: %d %s", code, b)
		}
		all, head = append(all, list.Entries...), list.Head
		if list.Next == 0 {
			if pages != 2 || len(list.Entries) != 2 {
				t.Errorf("the last page (%d) has %d entries", pages, len(list.Entries))
			}
			break
		}
		after = list.Next
	}
	if _, err := api.VerifyAudit(all, &api.AuditVerifyOptions{Head: &head}); err != nil || head.Seq != 6 {
		t.Fatalf("the log over HTTP: %v (head %+v)", err, head)
	}
	type want struct {
		kind      api.AuditKind
		principal string
		via       string
	}
	for i, w := range []want{
		{api.AuditSignIn, "bearer-token", "playground"},
		{api.AuditSignIn, "bearer-token", "playground"},
		{api.AuditApprovalDecided, "bearer-token:alice", "cli"},
		{api.AuditApprovalDecided, "bearer-token:bob", "playground"},
		{api.AuditApprovalDecided, "bearer-token", "http"},
		{api.AuditSignOut, "bearer-token", "playground"},
	} {
		var d struct {
			Via string `json:"via"`
		}
		json.Unmarshal(all[i].Detail, &d)
		if all[i].Kind != w.kind || all[i].Principal != w.principal || d.Via != w.via {
			t.Errorf("entry %d: %+v %s, want %+v", i+1, all[i], all[i].Detail, w)
		}
		if w.kind == api.AuditApprovalDecided && all[i].Subject != calls[i-2] {
			t.Errorf("entry %d's subject %s, want %s", i+1, all[i].Subject, calls[i-2])
		}
	}
	if strings.Contains(all[0].Subject, cookie[:10]) {
		t.Error("the sign-in's entry shows the session id")
	}
	for _, q := range []string{"limit=0", "limit=1001", "after=-1", "after=x"} {
		if code, b := do("GET", "/agent/v1/audit?"+q, "", bearer...); code != http.StatusBadRequest || !strings.Contains(string(b), "bad_query") {
			t.Errorf("GET /audit?%s: %d %s", q, code, b)
		}
	}
	if code, _ := do("GET", "/agent/v1/audit", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /audit without a token: %d", code)
	}
}

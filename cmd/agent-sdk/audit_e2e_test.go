package main_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/pgtest"
	_ "github.com/agentsdk/agentsdk/store/sqlite" // the database/sql driver "sqlite", to tamper with the log
)

// parkCall calls a gated tool directly, asking for the answer at once,
// and returns the parked call's id.
func parkCall(t *testing.T, s *server, tool, input string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.base+"/tools/"+tool, strings.NewReader(`{"input":`+input+`}`))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Prefer", "respond-async")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		CallID string `json:"callId"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &body); err != nil || resp.StatusCode != http.StatusAccepted || body.CallID == "" {
		t.Fatalf("parking a %s call: %d %s", tool, resp.StatusCode, b)
	}
	return body.CallID
}

// readAudit reads an export file's entries.
func readAudit(t *testing.T, path string) []api.AuditEntry {
	t.Helper()
	var out []api.AuditEntry
	for _, line := range lines(path) {
		var e api.AuditEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%s: %v: %s", path, err, line)
		}
		out = append(out, e)
	}
	return out
}

// The audit log end to end, on the real binary and SQLite: decisions over
// HTTP and the CLI and a playground sign-in are exported with who made
// them and how; the export and the host's log verify; an export changed,
// cut or reordered, and the database changed behind the host's back,
// fail naming the entry.
func TestAuditEndToEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audited")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "agent", "tools", "promote.go"), []byte(gatedTools["promote.go"]), 0o644)
	s := startServer(t, dir)
	hostURL := strings.TrimSuffix(s.base, "/v1")
	prod := `{"service":"api","environment":"production"}`

	// An approval over HTTP, labelled by its client; one and a denial
	// with the CLI.
	byHTTP, byCLI, denied := parkCall(t, s, "promote", prod), parkCall(t, s, "promote", prod), parkCall(t, s, "promote", prod)
	if code, body, _ := s.request(t, http.MethodPost, "/approvals/"+byHTTP, s.token, `{"approved":true,"onBehalfOf":"alice"}`); code != http.StatusOK {
		t.Fatalf("approving over HTTP: %d %v", code, body)
	}
	if r := run(t, dir, "", "approve", byCLI, "--url", hostURL, "--by", "bob"); r.code != 0 {
		t.Fatalf("agent-sdk approve: %+v", r)
	}
	if r := run(t, dir, "", "deny", denied, "--url", hostURL, "--by", "carol", "--reason", "not today"); r.code != 0 {
		t.Fatalf("agent-sdk deny: %+v", r)
	}
	// A playground sign-in.
	form := url.Values{"token": {s.token}}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.PostForm(hostURL+"/playground/signin", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("signing in to the playground: %d", resp.StatusCode)
	}

	export := filepath.Join(t.TempDir(), "audit.jsonl")
	if r := run(t, dir, "", "audit", "export", "--url", hostURL, "-o", export); r.code != 0 || !strings.Contains(r.stderr, "exported 4 entries") {
		t.Fatalf("audit export: %+v", r)
	}
	entries := readAudit(t, export)
	if len(entries) != 4 {
		t.Fatalf("the export has %d entries, want 4:\n%v", len(entries), entries)
	}
	type want struct {
		kind               api.AuditKind
		principal, subject string
		status             api.ApprovalStatus
		via                string
	}
	for i, w := range []want{
		{api.AuditApprovalDecided, "bearer-token:alice", byHTTP, api.ApprovalApproved, "http"},
		{api.AuditApprovalDecided, "bearer-token:bob", byCLI, api.ApprovalApproved, "cli"},
		{api.AuditApprovalDecided, "bearer-token:carol", denied, api.ApprovalDenied, "cli"},
		{api.AuditSignIn, "bearer-token", "", "", "playground"},
	} {
		e := entries[i]
		var d api.AuditDecision
		json.Unmarshal(e.Detail, &d)
		if e.Seq != int64(i+1) || e.Kind != w.kind || e.Principal != w.principal || (w.subject != "" && e.Subject != w.subject) ||
			d.Status != w.status || d.Via != w.via || e.Sig == "" {
			t.Errorf("entry %d = %+v (%s), want %+v", i+1, e, e.Detail, w)
		}
	}
	if d := entries[2].Detail; !strings.Contains(string(d), `"reason":"not today"`) || !strings.Contains(string(d), `"tool":"promote"`) {
		t.Errorf("the denial's detail: %s", d)
	}

	pub := filepath.Join(dir, ".agent-sdk", "audit-key.pub")
	if r := run(t, dir, "", "audit", "verify", "--url", hostURL); r.code != 0 || !strings.Contains(r.stdout, "the chain holds: 4 entries") {
		t.Errorf("audit verify --url: %+v", r)
	}
	if r := run(t, dir, "", "audit", "verify", export, "--trust", pub); r.code != 0 || !strings.Contains(r.stdout, "4 of 4 entries signed") {
		t.Errorf("audit verify FILE --trust: %+v", r)
	}

	// The export, changed: a line's principal, a line removed, two lines
	// swapped, all the hashes rewritten without the key.
	lns := lines(export)
	edits := []struct {
		name  string
		lines []string
		args  []string
		want  string
	}{
		{"changed", []string{lns[0], strings.Replace(lns[1], "bearer-token:bob", "bearer-token:mallory", 1), lns[2], lns[3]}, nil, "entry 2 was changed: its hash is"},
		{"removed", []string{lns[0], lns[2], lns[3]}, nil, "entry 2 is missing (1 is followed by 3)"},
		{"reordered", []string{lns[0], lns[2], lns[1], lns[3]}, nil, "entry 2 was reordered"},
		{"resigned", rehashed(t, lns), []string{"--trust", pub}, "entry 1's signature does not verify"},
	}
	for _, e := range edits {
		path := filepath.Join(t.TempDir(), e.name+".jsonl")
		os.WriteFile(path, []byte(strings.Join(e.lines, "\n")+"\n"), 0o644)
		if r := run(t, dir, "", append([]string{"audit", "verify", path}, e.args...)...); r.code != 1 || !strings.Contains(r.stderr, e.want) {
			t.Errorf("audit verify of an export %s: exit %d, stderr %q, want %q", e.name, r.code, r.stderr, e.want)
		}
	}

	// The database, changed behind the host's back.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, ".agent-sdk", "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tamper := range []struct {
		sql, want string
	}{
		{`UPDATE audit SET principal = 'bearer-token:mallory' WHERE seq = 2`, "entry 2 was changed"},
		{`UPDATE audit SET principal = 'bearer-token:bob' WHERE seq = 2`, ""}, // undone: it holds again
		{`DELETE FROM audit WHERE seq = 3`, "entry 3 is missing (2 is followed by 4)"},
	} {
		if _, err := db.Exec(tamper.sql); err != nil {
			t.Fatalf("%s: %v", tamper.sql, err)
		}
		r := run(t, dir, "", "audit", "verify", "--url", hostURL)
		if tamper.want == "" {
			if r.code != 0 {
				t.Errorf("after %s: %+v", tamper.sql, r)
			}
			continue
		}
		if r.code != 1 || !strings.Contains(r.stderr, tamper.want) {
			t.Errorf("audit verify --url after %s: exit %d, stderr %q, want %q", tamper.sql, r.code, r.stderr, tamper.want)
		}
	}

	if r := run(t, dir, "", "audit", "verify"); r.code != 2 || !strings.Contains(r.stderr, "give an export FILE, or --url") {
		t.Errorf("audit verify with neither: %+v", r)
	}
	os.WriteFile(filepath.Join(dir, "junk.jsonl"), []byte("{\"seq\":1}\nnot json\n"), 0o644)
	if r := run(t, dir, "", "audit", "verify", "junk.jsonl"); r.code != 2 || !strings.Contains(r.stderr, "junk.jsonl:2: not an audit entry") {
		t.Errorf("audit verify of junk: %+v", r)
	}
}

// rehashed is an export rewritten by someone without the host's key: the
// first entry's principal changed and every hash after it recomputed, the
// old signatures kept.
func rehashed(t *testing.T, lns []string) []string {
	t.Helper()
	var out []string
	prev := ""
	for i, line := range lns {
		var e api.AuditEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			e.Principal = "bearer-token:mallory"
		}
		e.PrevHash = prev
		e.Hash = e.ComputeHash()
		prev = e.Hash
		b, _ := json.Marshal(e)
		out = append(out, string(b))
	}
	return out
}

// On PostgreSQL: decisions made at once keep one chain, and a row
// changed, removed or reordered with SQL fails audit verify naming it.
func TestAuditOnPostgres(t *testing.T) {
	dbURL := pgtest.Schema(t)
	dir := filepath.Join(t.TempDir(), "audited")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "agent", "tools", "promote.go"), []byte(gatedTools["promote.go"]), 0o644)
	s := startServer(t, dir, "--store", dbURL)
	hostURL := strings.TrimSuffix(s.base, "/v1")
	var calls []string
	for range 10 {
		calls = append(calls, parkCall(t, s, "promote", `{"service":"api","environment":"production"}`))
	}
	var wg sync.WaitGroup
	for i, id := range calls {
		wg.Go(func() {
			by := "person" + strconv.Itoa(i)
			if code, v, err := mhDo(s, http.MethodPost, "/approvals/"+id, `{"approved":true,"onBehalfOf":"`+by+`"}`); err != nil || code != http.StatusOK {
				t.Errorf("deciding %s: %d %v %v", id, code, v, err)
			}
		})
	}
	wg.Wait()
	if r := run(t, dir, "", "audit", "verify", "--url", hostURL); r.code != 0 || !strings.Contains(r.stdout, "the chain holds: 10 entries") {
		t.Fatalf("audit verify --url: %+v", r)
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, tamper := range []struct {
		sql  []string
		want string
	}{
		{[]string{`UPDATE audit SET detail = '{"via":"cli"}' WHERE seq = 4`}, "entry 4 was changed: its hash is"},
		{[]string{`UPDATE audit SET detail = (SELECT detail FROM audit WHERE seq = 5) WHERE seq = 4`}, ""}, // the same detail as before: it holds again
		{[]string{`DELETE FROM audit WHERE seq = 4`}, "entry 4 is missing (3 is followed by 5)"},
		{[]string{`UPDATE audit SET seq = 4 WHERE seq = 6`}, "entry 4 was reordered: it holds what was entry 6"},
		{[]string{`UPDATE audit SET seq = -1 WHERE seq = 4`, `UPDATE audit SET seq = 4 WHERE seq = 7`, `UPDATE audit SET seq = 7 WHERE seq = -1`}, "entry 4 was reordered: it holds what was entry 7"},
	} {
		for _, q := range tamper.sql {
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		r := run(t, dir, "", "audit", "verify", "--url", hostURL)
		if tamper.want == "" {
			if r.code != 0 {
				t.Errorf("after %v: %+v", tamper.sql, r)
			}
			continue
		}
		if r.code != 1 || !strings.Contains(r.stderr, tamper.want) {
			t.Errorf("audit verify --url after %v: exit %d, stderr %q, want %q", tamper.sql, r.code, r.stderr, tamper.want)
		}
	}
}

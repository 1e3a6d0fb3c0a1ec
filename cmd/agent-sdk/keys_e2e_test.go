package main_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

var keyLine = regexp.MustCompile(`^ask_([a-z2-7]{13})_[a-z2-7]{52}\n$`)

// keys create prints a key once, on stdout alone; the key acts with its
// roles (a reader reads and is 403 forbidden to open a session); keys lists
// it (and --json), keys revoke makes it 401 at once; an expired key is 401;
// an unknown role, a missing --roles, an unknown id and a non-admin caller
// are refused with exit status 2; the host token stays admin.
func TestKeysCLI(t *testing.T) {
	s := startServer(t, shared)
	url := strings.TrimSuffix(s.base, "/v1")
	keys := func(args ...string) result {
		t.Helper()
		return run(t, t.TempDir(), "", append(append([]string{"keys"}, args...), "--url", url, "--token", s.token)...)
	}
	r := keys("create", "ci reader", "--roles", "reader", "--expires", "90d")
	m := keyLine.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil || !strings.Contains(r.stderr, "shown this once") || !strings.Contains(r.stderr, "roles reader") {
		t.Fatalf("keys create: %d\nstdout: %q\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	key, id := strings.TrimSpace(r.stdout), m[1]
	if status, _, _ := s.request(t, "GET", "/sessions", key, ""); status != 200 {
		t.Errorf("the reader key listing sessions: %d", status)
	}
	status, v, _ := s.request(t, "POST", "/session", key, `{}`)
	if e, _ := v["error"].(map[string]any); status != 403 || e["code"] != "forbidden" || !strings.Contains(e["message"].(string), "permission message") {
		t.Errorf("the reader key opening a session: %d %v", status, v)
	}
	r = keys()
	if r.code != 0 || !strings.Contains(r.stdout, "ID") || !strings.Contains(r.stdout, "LAST USED") {
		t.Fatalf("keys: %d %s %s", r.code, r.stdout, r.stderr)
	}
	var line string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, id) {
			line = l
		}
	}
	if !strings.Contains(line, "ci reader") || !strings.Contains(line, "reader") || !strings.HasSuffix(line, "active") || strings.Contains(r.stdout, key[len(key)-52:]) {
		t.Errorf("keys lists %q in:\n%s", line, r.stdout)
	}
	r = keys("list", "--json") // keys list is keys
	var listing struct {
		Keys []struct {
			ID         string     `json:"id"`
			Roles      []string   `json:"roles"`
			LastUsedAt *time.Time `json:"lastUsedAt"`
			ExpiresAt  *time.Time `json:"expiresAt"`
		} `json:"keys"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &listing); err != nil || r.code != 0 {
		t.Fatalf("keys list --json: %d %v\n%s", r.code, err, r.stdout)
	}
	found := false
	for _, k := range listing.Keys {
		if k.ID == id {
			found = k.LastUsedAt != nil && k.ExpiresAt != nil && time.Until(*k.ExpiresAt) > 89*24*time.Hour
		}
	}
	if !found {
		t.Errorf("keys --json: the key, used and expiring in 90 days, is not in %s", r.stdout)
	}
	// Only admin manages keys: the reader key is forbidden.
	r = run(t, t.TempDir(), "", "keys", "create", "x", "--roles", "admin", "--url", url, "--token", key)
	if r.code != 2 || !strings.Contains(r.stderr, "admin") {
		t.Errorf("a reader creating a key: %d %s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"create", "x", "--roles", "superuser"}, {"create", "x"}, {"revoke", "nosuchkey"}, {"create", "x", "--roles", "reader", "--expires", "soon"}} {
		if r := keys(args...); r.code != 2 || r.stdout != "" {
			t.Errorf("keys %v: %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
		}
	}
	r = keys("revoke", id)
	if r.code != 0 || !strings.Contains(r.stdout, "revoked key "+id) {
		t.Fatalf("keys revoke: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if status, _, _ := s.request(t, "GET", "/sessions", key, ""); status != 401 {
		t.Errorf("the revoked key: %d, want 401", status)
	}
	if r := keys(); !strings.Contains(r.stdout, "revoked") {
		t.Errorf("keys after revoking:\n%s", r.stdout)
	}
	// A key that expires: 401 once its time is past.
	r = keys("create", "brief", "--roles", "operator", "--expires", "2s")
	brief := strings.TrimSpace(r.stdout)
	if status, _, _ := s.request(t, "GET", "/tools", brief, ""); r.code != 0 || status != 200 {
		t.Fatalf("the brief key: %d %d %s", r.code, status, r.stderr)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, _, _ := s.request(t, "GET", "/tools", brief, "")
		if status == 401 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the expired key is still %d", status)
		}
		time.Sleep(100 * time.Millisecond) // waiting on the clock, not on a condition another process signals
	}
	// The host token is still the bootstrap admin, as before.
	if status, v, _ := s.request(t, "POST", "/tools/hello", s.token, `{"input":{"name":"token"}}`); status != 200 || v["result"] != "Hello, token!" {
		t.Errorf("the token's call: %d %v", status, v)
	}
	if r := run(t, t.TempDir(), "", "keys", "--help"); r.code != 0 || !strings.Contains(r.stdout, "keys create") || !strings.Contains(r.stdout, "SHA-256") {
		t.Errorf("keys --help: %d %s", r.code, r.stdout)
	}
}

package serve_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// TestHealthSaysWhatFails: /healthz and /readyz are 200 {"ok":true} while
// the host can reach its store and make a file in its state directory;
// when either fails they are 503 unhealthy, saying which, and healthy
// again once it is mended. /readyz is 503 once the server shuts down.
func TestHealthSaysWhatFails(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	st, err := sqlite.Open(ctx, filepath.Join(dir, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	set, _ := tool.NewSet()
	h, err := host.New(set, &host.Options{StateRoot: state, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv, err := serve.New(h, &serve.Options{Slug: "agent", Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// until polls path until its answer matches (the check is cached for
	// a second).
	until := func(path string, status int, has string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, body := get(path)
			if got == status && strings.Contains(body, has) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s = %d %s; want %d with %q", path, got, body, status, has)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if status, body := get(path); status != 200 || body != `{"ok":true}`+"\n" && body != `{"ok":true}` {
			t.Fatalf("GET %s = %d %q; want 200 {\"ok\":true}", path, status, body)
		}
	}

	// The state directory takes no file: it is a file now.
	if err := os.Rename(state, state+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	until("/healthz", 503, `"code":"unhealthy"`)
	until("/readyz", 503, "state directory takes no new file")
	os.Remove(state)
	if err := os.Rename(state+".moved", state); err != nil {
		t.Fatal(err)
	}
	until("/healthz", 200, `"ok":true`)

	// The store does not answer.
	st.Close()
	until("/healthz", 503, "the store does not answer")

	srv.Shutdown()
	until("/readyz", 503, "shutting down")
}

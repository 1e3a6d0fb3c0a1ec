package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/evals"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// idemBundle is a server on a SQLite store whose "count" tool counts its
// runs and whose "slow" tool waits for release.
type idemBundle struct {
	url     string
	runs    *atomic.Int64
	release chan struct{}
	st      store.Store
	close   func()
}

func idemServer(t *testing.T, dbPath string, runs *atomic.Int64, release chan struct{}) *idemBundle {
	t.Helper()
	count, _ := tool.New("count", tool.Config{Description: "Count."},
		func(ctx context.Context, call *tool.Call, in struct {
			N int `json:"n"`
		}) (any, error) {
			return map[string]any{"run": runs.Add(1), "n": in.N}, nil
		})
	slow, _ := tool.New("slow", tool.Config{Description: "Wait for release."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			runs.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return "released", nil
		})
	set, err := tool.NewSet(count, slow)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(set, &host.Options{StateRoot: t.TempDir(), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := evals.New(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(h, &serve.Options{Slug: "agent", Token: testToken, Evals: ev})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	b := &idemBundle{url: ts.URL + "/agent/v1", runs: runs, release: release, st: st}
	b.close = func() { ts.Close(); h.Close(); st.Close() }
	return b
}

func (b *idemBundle) post(t *testing.T, path, key, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", b.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	if key != "" {
		req.Header.Set(serve.IdempotencyHeader, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(out)
}

func errorCode(body string) string {
	var v struct {
		Error struct{ Code string } `json:"error"`
	}
	json.Unmarshal([]byte(body), &v)
	return v.Error.Code
}

// A retry with the same Idempotency-Key and body gets the first answer
// again, running nothing, also after a restart; another body with the key
// is refused; a retry while the first runs waits for it; without a key
// every request runs.
func TestIdempotentRetries(t *testing.T) {
	db := filepath.Join(t.TempDir(), "agent.db")
	var runs atomic.Int64
	b := idemServer(t, db, &runs, make(chan struct{}))
	defer func() { b.close() }()

	status, h1, first := b.post(t, "/tools/count", "key-1", `{"input":{"n":1}}`)
	if status != 200 || runs.Load() != 1 {
		t.Fatalf("first call: %d %s, %d runs", status, first, runs.Load())
	}
	status, h2, again := b.post(t, "/tools/count", "key-1", `{"input":{"n":1}}`)
	if status != 200 || again != first || runs.Load() != 1 || h2.Get(serve.ReplayedHeader) != "true" ||
		h2.Get(serve.CallIDHeader) != h1.Get(serve.CallIDHeader) || h2.Get("Content-Type") != h1.Get("Content-Type") {
		t.Errorf("retry: %d %s (first %s), replayed %q, %d runs", status, again, first, h2.Get(serve.ReplayedHeader), runs.Load())
	}
	if status, _, body := b.post(t, "/tools/count", "key-1", `{"input":{"n":2}}`); status != 422 || errorCode(body) != "idempotency_key_reused" {
		t.Errorf("the key with another body: %d %s", status, body)
	}
	if status, _, body := b.post(t, "/session", "key-1", `{}`); status != 422 || errorCode(body) != "idempotency_key_reused" {
		t.Errorf("the key on another route: %d %s", status, body)
	}
	if status, _, body := b.post(t, "/tools/count", strings.Repeat("k", 256), `{}`); status != 400 || errorCode(body) != "bad_idempotency_key" {
		t.Errorf("a bad key: %d %s", status, body)
	}
	b.post(t, "/tools/count", "", `{"input":{"n":1}}`)
	b.post(t, "/tools/count", "", `{"input":{"n":1}}`)
	if runs.Load() != 3 {
		t.Errorf("calls without a key ran %d times in all, want 3", runs.Load())
	}

	// A session and a message: a retry makes no second session or turn.
	status, _, sess := b.post(t, "/session", "key-s", `{}`)
	status2, _, sess2 := b.post(t, "/session", "key-s", `{}`)
	if status != 201 || status2 != 201 || sess != sess2 {
		t.Errorf("session retry: %d %s / %d %s", status, sess, status2, sess2)
	}
	if list, _, _ := b.st.ListSessions(context.Background(), store.ListSessionsParams{}); len(list) != 1 {
		t.Errorf("%d sessions after a retried create", len(list))
	}

	// A retry while the first runs waits for it and gets its answer.
	var wg sync.WaitGroup
	var slowFirst, slowRetry string
	wg.Go(func() { _, _, slowFirst = b.post(t, "/tools/slow", "key-slow", `{}`) })
	for runs.Load() != 4 {
		time.Sleep(5 * time.Millisecond)
	}
	wg.Go(func() { _, _, slowRetry = b.post(t, "/tools/slow", "key-slow", `{}`) })
	time.Sleep(200 * time.Millisecond)
	close(b.release)
	wg.Wait()
	if slowFirst == "" || slowRetry != slowFirst || runs.Load() != 4 {
		t.Errorf("retry during the first: %s / %s, %d runs", slowFirst, slowRetry, runs.Load())
	}

	// Kept across a restart.
	b.close()
	b = idemServer(t, db, &runs, make(chan struct{}))
	if status, h, body := b.post(t, "/tools/count", "key-1", `{"input":{"n":1}}`); status != 200 || body != first || h.Get(serve.ReplayedHeader) != "true" || runs.Load() != 4 {
		t.Errorf("retry after a restart: %d %s, %d runs", status, body, runs.Load())
	}
}

// Idempotency follows api.Route.Idempotent: a key no route could take
// (too long) is refused on exactly the idempotent routes — the direct call
// through its shortcut past the mux and through the mux — and ignored
// everywhere else.
func TestIdempotencyFollowsTheRoute(t *testing.T) {
	set, _ := tool.NewSet()
	h, err := host.New(set, &host.Options{StateRoot: t.TempDir()})
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
	badKey := map[string]string{serve.IdempotencyHeader: strings.Repeat("k", api.MaxIdempotencyKey+1)}
	for _, direct := range []bool{true, false} {
		serve.SetDirectRoute(srv, direct)
		for _, r := range api.Routes {
			path := r.FullPath("agent")
			for strings.Contains(path, "{") {
				i, j := strings.Index(path, "{"), strings.Index(path, "}")
				path = path[:i] + "x" + path[j+1:]
			}
			if r.Name == "events" {
				path += "?follow=false"
			}
			status, out := sendWith(t, r.Method, ts.URL+path, "", badKey)
			if refused := errorCode(out) == string(api.CodeBadIdempotencyKey); refused != r.Idempotent {
				t.Errorf("direct route %v: %s %s with a bad key = %d %s; Idempotent is %v", direct, r.Method, path, status, out, r.Idempotent)
			}
		}
	}
}

// An eval run with an Idempotency-Key starts one batch: the retry gets the
// first answer, the same batch.
func TestRunEvalReplays(t *testing.T) {
	var runs atomic.Int64
	b := idemServer(t, filepath.Join(t.TempDir(), "agent.db"), &runs, nil)
	defer b.close()
	body := `{"name":"smoke","cases":[{"message":"hi","checks":[{"noError":true}]}]}`
	status, _, first := b.post(t, "/evals", "eval-1", body)
	if status != http.StatusAccepted {
		t.Fatalf("first: %d %s", status, first)
	}
	status, header, again := b.post(t, "/evals", "eval-1", body)
	if status != http.StatusAccepted || again != first || header.Get(serve.ReplayedHeader) != "true" {
		t.Errorf("retry: %d %s (replayed %q); want the first answer %s", status, again, header.Get(serve.ReplayedHeader), first)
	}
	if status, _, other := b.post(t, "/evals", "eval-1", strings.Replace(body, "smoke", "other", 1)); errorCode(other) != string(api.CodeIdempotencyKeyReused) {
		t.Errorf("another body with the key: %d %s", status, other)
	}
}

// A key's answer is replayed only to a request that asks for the same
// representation: an SSE answer is never replayed to a JSON request, nor
// a JSON one to a request for a stream (422 idempotency_key_reused, the
// call not run again); Accept headers that choose the same representation
// replay as before.
func TestIdempotentReplayAccept(t *testing.T) {
	var runs atomic.Int64
	b := idemServer(t, filepath.Join(t.TempDir(), "agent.db"), &runs, make(chan struct{}))
	defer b.close()
	post := func(key, accept string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", b.url+"/tools/count", strings.NewReader(`{"input":{"n":1}}`))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set(serve.IdempotencyHeader, key)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(out)
	}
	for _, tc := range []struct{ name, first, retry string }{
		{"json, then sse", "application/json", "text/event-stream"},
		{"sse, then json", "text/event-stream", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "accept-" + tc.name
			status, h, _ := post(key, tc.first)
			if status != 200 {
				t.Fatalf("first: %d", status)
			}
			ran := runs.Load()
			status, h2, body := post(key, tc.retry)
			if status != 422 || errorCode(body) != "idempotency_key_reused" || h2.Get(serve.ReplayedHeader) != "" {
				t.Errorf("a retry with Accept %q after %q (%s): %d %s %s", tc.retry, tc.first, h.Get("Content-Type"), status, h2.Get("Content-Type"), body)
			}
			if runs.Load() != ran {
				t.Errorf("the retry ran the call again")
			}
		})
	}
	// The same representation, however asked for, replays.
	if status, _, _ := post("same", ""); status != 200 {
		t.Fatalf("first: %d", status)
	}
	for _, accept := range []string{"application/json", "*/*", "application/json, text/plain"} {
		if status, h, _ := post("same", accept); status != 200 || h.Get(serve.ReplayedHeader) != "true" {
			t.Errorf("a retry with Accept %q: %d replayed=%q", accept, status, h.Get(serve.ReplayedHeader))
		}
	}
	if status, _, _ := post("stream", "text/event-stream"); status != 200 {
		t.Fatalf("first: %d", status)
	}
	if status, h, _ := post("stream", "Text/Event-Stream; q=1, application/json"); status != 200 || h.Get(serve.ReplayedHeader) != "true" || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		t.Errorf("a stream's retry: %d replayed=%q %s", status, h.Get(serve.ReplayedHeader), h.Get("Content-Type"))
	}
}

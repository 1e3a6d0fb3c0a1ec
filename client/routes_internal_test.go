package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
)

// The client sends an Idempotency-Key with a request of exactly the routes
// that are api.Route.Idempotent, a fresh one each time, and leaves a key
// the caller gives as it is.
func TestKeyFollowsTheRoute(t *testing.T) {
	t.Parallel()
	sent := make(chan string, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent <- r.Header.Get(IdempotencyHeader)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer ts.Close()
	c, err := New(ts.URL+"/agent", "token", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, r := range api.Routes {
		args := make([]string, strings.Count(r.Path, "{"))
		for i := range args {
			args[i] = "x"
		}
		keys := map[string]bool{}
		for range 2 {
			resp, err := c.send(ctx, c.hc, r.Name, args, nil, nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", r.Name, err)
			}
			resp.Body.Close()
			got := <-sent
			if (got != "") != r.Idempotent {
				t.Errorf("%s (Idempotent %v) sent Idempotency-Key %q", r.Name, r.Idempotent, got)
			}
			keys[got] = true
		}
		if r.Idempotent && len(keys) != 2 {
			t.Errorf("%s sent one key twice: %v", r.Name, keys)
		}
		if !r.Idempotent {
			continue
		}
		resp, err := c.send(ctx, c.hc, r.Name, args, nil, nil, http.Header{IdempotencyHeader: {"mine"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := <-sent; got != "mine" {
			t.Errorf("%s sent %q, not the caller's key", r.Name, got)
		}
	}
}

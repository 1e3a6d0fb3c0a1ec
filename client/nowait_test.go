package client_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/client"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// With NoWait, a host that would hold a gated call for an hour waiting
// for a decision answers as soon as the call is parked, streamed or not;
// WaitCall then has its outcome once it is approved.
func TestCallNoWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	state := t.TempDir()
	set, err := tool.NewSet(testTools()...)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(state, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h, err := host.New(set, &host.Options{StateRoot: state, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	handler, err := serve.New(h, &serve.Options{Slug: testSlug, Token: testToken, ApprovalWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(func() { handler.Shutdown(); srv.Close() })
	c, err := client.New(srv.URL+"/"+testSlug, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts *client.CallOptions
	}{
		{"plain", &client.CallOptions{NoWait: true}},
		{"streamed", &client.CallOptions{NoWait: true, Progress: func(api.Payload) {}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Were the preference ignored, the call would wait the hour:
			// this deadline fails it instead.
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			_, err := c.CallTool(cctx, "promote", promoteInput{"api", "production"}, tc.opts)
			var pending *client.PendingError
			if !errors.As(err, &pending) || pending.Status != api.CallAwaitingApproval {
				t.Fatalf("gated call with NoWait: %v", err)
			}
			if _, err := c.Approve(ctx, pending.CallID, nil); err != nil {
				t.Fatal(err)
			}
			done, err := c.WaitCall(ctx, pending.CallID, 10*time.Millisecond)
			if err != nil || done.Status != api.CallState(api.ApprovalApproved) || string(done.Result) != `{"promoted":"api","to":"production"}` {
				t.Fatalf("outcome: %+v %v", done, err)
			}
		})
	}
}

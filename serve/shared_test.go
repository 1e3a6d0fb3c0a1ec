package serve_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/tool"
)

// setupSharedServers serves one agent from two hosts on one PostgreSQL
// schema, with one scripted model.
func setupSharedServers(t *testing.T, script ...fakemodel.Reply) (a, b *sessionServer) {
	t.Helper()
	fake := fakemodel.New(script...)
	t.Cleanup(fake.Close)
	open := sharedPostgres(t)
	slow, _ := tool.New("slow", tool.Config{Description: "Takes a moment."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
		time.Sleep(20 * time.Millisecond)
		return "slept", nil
	})
	set, _ := tool.NewSet(slow)
	start := func() *sessionServer {
		st := open()
		p, _ := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: fake.AnthropicURL(), MaxTokens: 10})
		h, err := host.New(set, &host.Options{StateRoot: t.TempDir(), Store: st, Model: p, ToolConcurrency: 1, MaxSteps: 50})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		srv, _ := serve.New(h, &serve.Options{Slug: "agent", Token: testToken})
		ts := httptest.NewServer(srv)
		t.Cleanup(func() { srv.Shutdown(); ts.Close(); h.Close(); st.Close() })
		return &sessionServer{url: ts.URL + "/agent/v1", fake: fake, srv: srv}
	}
	return start(), start()
}

// An SSE client of host B follows a turn that host A runs, resuming with
// Last-Event-ID, and sees every event once, in order.
func TestStreamFromAnotherHost(t *testing.T) {
	a, b := setupSharedServers(t, longTurn(8)...)
	_, v := a.call(t, "POST", "/session", `{}`)
	id := v["sessionId"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	started := false
	var seen []int64
	for reconnects := 0; ; reconnects++ {
		after := int64(0)
		if len(seen) > 0 {
			after = seen[len(seen)-1]
		}
		done := false
		err := b.stream(ctx, t, id, after, func(e sseEvent) bool {
			if !started {
				started = true
				go func() {
					req, _ := http.NewRequest("POST", a.url+"/session/"+id+"/messages", strings.NewReader(`{"message":"go"}`))
					req.Header.Set("Authorization", "Bearer "+testToken)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
				}()
			}
			seen = append(seen, e.id)
			done = e.kind == "turn.completed"
			return !done && len(seen)%9 != 0 // drop every few events
		})
		if err != nil {
			t.Fatal(err)
		}
		if done {
			break
		}
		if reconnects > 100 {
			t.Fatal("the turn never completed")
		}
	}
	for i, id := range seen {
		if id != int64(i+1) {
			t.Fatalf("event %d has id %d: lost or repeated events: %v", i, id, seen)
		}
	}
	if len(seen) < 40 {
		t.Errorf("only %d events", len(seen))
	}
}

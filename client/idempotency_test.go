package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agentsdk/agentsdk/client"
)

// The client sends an Idempotency-Key with every tool call, and sends the
// call again with the same key when the connection drops before an answer.
func TestCallToolRetriesWithItsKey(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get(client.IdempotencyHeader))
		n := len(keys)
		mu.Unlock()
		if n == 1 { // the connection drops: no answer at all
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true,"toolName":"greet","callId":"tool_greet_1","isError":false,"result":"hi","durationMs":0}`))
	}))
	defer ts.Close()
	c, err := client.New(ts.URL+"/agent", "token", nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.CallTool(context.Background(), "greet", nil, nil)
	if err != nil || out.Result == nil {
		t.Fatalf("CallTool = %+v, %v", out, err)
	}
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Errorf("keys sent: %q; want the same key twice", keys)
	}
	// A second call has a key of its own.
	c.CallTool(context.Background(), "greet", nil, nil)
	if len(keys) != 3 || keys[2] == keys[0] {
		t.Errorf("keys sent: %q", keys)
	}
}

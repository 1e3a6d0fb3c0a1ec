package serve_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/tool"
)

// A client that follows a stream and stops reading is cut off once a write
// has waited StreamWriteTimeout: it does not keep its place under
// MaxStreams (nor hold anything else) for ever.
func TestStalledStreamIsCut(t *testing.T) {
	big, _ := tool.New("big", tool.Config{Description: "A 1 MiB result."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			return strings.Repeat("x", 1<<20), nil
		})
	set, _ := tool.NewSet(big)
	h, err := host.New(set, &host.Options{StateRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(h, &serve.Options{Slug: "agent", Token: testToken, MaxStreams: 1, StreamWriteTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); h.Close() })
	ctx := context.Background()
	sess, _, err := h.Sessions().Create(ctx, host.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := "/agent/v1/session/" + sess.ID + "/events"
	streamStatus := func() int {
		reqCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(reqCtx, "GET", ts.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	// A follower that reads nothing, with a tiny receive buffer.
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", path, testToken)
	// Read the follower's response head (a wait, not a timing: under -race
	// on a busy machine the stream can take seconds to start) and nothing
	// after it. Probing for the place before the follower holds it would
	// race the follower for it.
	conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	head := bufio.NewReaderSize(conn, 512)
	status, err := head.ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("the follower's stream did not start: %q, %v", status, err)
	}
	for {
		line, err := head.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the follower's response head: %v", err)
		}
		if line == "\r\n" {
			break
		}
	}
	conn.SetReadDeadline(time.Time{})
	if got := streamStatus(); got != 503 {
		t.Fatalf("a second stream while the follower holds the one place: status %d, want 503", got)
	}
	// 40 MiB of events it will not read: the server's writes stall.
	for range 40 {
		if _, err := h.CallTool(ctx, "big", nil, &host.CallOptions{SessionID: sess.ID}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for streamStatus() != 200 {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the stalled stream still holds its place")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the stalled stream's place was free %v after the last event was written", time.Since(start).Round(time.Millisecond))
}

package serve_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/tool"
)

// A direct call's handler runs on the request's goroutine; one that
// ignores its context past its timeout is still answered on time, with
// the timeout, while it runs — and the host serves other calls meanwhile
// and after.
func TestDirectCallOverrunIsAnsweredOnTime(t *testing.T) {
	release := make(chan struct{})
	var returned atomic.Bool
	stuck, _ := tool.New("stuck", tool.Config{Description: "Ignores its context.", Timeout: 100 * time.Millisecond},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			<-release
			returned.Store(true)
			return "late", nil
		})
	echo, _ := tool.New("echo", tool.Config{Description: "Answers at once."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "hi", nil })
	base, _ := serveTools(t, stuck, echo)
	t.Cleanup(func() { close(release) }) // before the server closes, which waits for the stuck request
	call := func(name string) (*http.Response, api.Outcome) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/v1/tools/"+name, strings.NewReader(`{"input":{}}`))
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out api.Outcome
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("%s: decoding the answer: %v", name, err)
		}
		return resp, out
	}

	resp, out := call("stuck")
	if returned.Load() {
		t.Fatal("the handler returned before the answer came: it was not stuck")
	}
	if resp.StatusCode != 200 || !out.IsError || !strings.Contains(string(out.Result), "timed out after 100ms") {
		t.Fatalf("status %d, outcome %+v: want 200 and the timeout", resp.StatusCode, out)
	}
	if out.CallID == "" || resp.Header.Get(serve.CallIDHeader) != out.CallID {
		t.Errorf("call id %q, header %q", out.CallID, resp.Header.Get(serve.CallIDHeader))
	}
	if !resp.Close {
		t.Error("the answer does not close its connection, which stays busy until the handler returns")
	}
	if _, out := call("echo"); out.IsError || string(out.Result) != `"hi"` {
		t.Errorf("another call while the first handler is stuck: %+v", out)
	}
}

// Issue 26, item 2: direct calls of a tool that ignores its context, more
// than the connection cap, each answered on time by the watchdog while its
// handler runs on. The host still answers /healthz and other tools; the
// hung tool's handlers are counted on their own, and at MaxOverrun its
// calls are refused 503 tool_overrun, logged with its name and counted in
// the host's metrics. Once its handlers return, it is served again.
func TestHungToolDoesNotWedgeTheHost(t *testing.T) {
	const maxConns, maxOverrun = 8, 4
	release := make(chan struct{})
	hang, _ := tool.New("hang", tool.Config{Description: "Ignores its context.", Timeout: 50 * time.Millisecond},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			<-release
			return "late", nil
		})
	var log syncBuffer
	reader := sdkmetric.NewManualReader()
	hd := serveHardenedWith(t, serve.Options{MaxOverrun: maxOverrun, Logger: slog.New(slog.NewTextHandler(&log, nil))},
		serve.ListenOptions{MaxConns: maxConns},
		hardenedExtras{tools: []*tool.Tool{hang}, meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	released := sync.OnceFunc(func() { close(release) })
	t.Cleanup(released) // before the server drains
	c := newClient(t)
	auth := "Bearer " + testToken
	statuses := map[string]int{}
	for range 2 * maxConns {
		a := send(t, c, "POST", hd.base+"/agent/v1/tools/hang", auth, `{"input":{}}`)
		switch {
		case a.status == 200 && strings.Contains(a.body, "timed out after 50ms") && a.close:
			statuses["200 timed out"]++
		case a.status == 503 && a.code == "tool_overrun" && a.header.Get("Retry-After") != "":
			statuses["503 tool_overrun"]++
		default:
			t.Errorf("a call of hang: %d %s (close %v)", a.status, a.body, a.close)
		}
	}
	if statuses["200 timed out"] != maxOverrun || statuses["503 tool_overrun"] != 2*maxConns-maxOverrun {
		t.Errorf("calls of hang: %v; want %d answered with the timeout, the rest refused", statuses, maxOverrun)
	}
	if a := send(t, c, "GET", hd.base+"/healthz", "", ""); a.status != 200 {
		t.Errorf("/healthz while hang's handlers run on: %d %s", a.status, a.body)
	}
	for range maxConns {
		if a := send(t, c, "POST", hd.base+"/agent/v1/tools/quick", auth, `{"input":{}}`); a.status != 200 {
			t.Fatalf("another tool while hang's handlers run on: %d %s", a.status, a.body)
		}
	}
	if !strings.Contains(log.String(), "tool=hang") {
		t.Errorf("the log does not name the hung tool:\n%s", log.String())
	}
	if got := metricSum(t, reader, "agent.tool.overrunning", "hang"); got != maxOverrun {
		t.Errorf("agent.tool.overrunning{tool.name=hang} = %d, want %d", got, maxOverrun)
	}
	if got := metricSum(t, reader, "agent.tool.overrun_refused", "hang"); got != 2*maxConns-maxOverrun {
		t.Errorf("agent.tool.overrun_refused{tool.name=hang} = %d, want %d", got, 2*maxConns-maxOverrun)
	}

	// Its handlers return: it is served again.
	released()
	awaitServedAgain(t, c, hd.base, auth)
	// Served again means one handler returned; the others return at once
	// too, each counting itself out as it does.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got := metricSum(t, reader, "agent.tool.overrunning", "hang")
		if got == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent.tool.overrunning{tool.name=hang} = %d 10 s after the handlers were released", got)
		}
	}
}

// metricSum is the value of an Int64 sum metric for a tool.
func metricSum(t *testing.T, reader *sdkmetric.ManualReader, name, toolName string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if m.Name != name || !ok {
				continue
			}
			for _, p := range sum.DataPoints {
				if v, _ := p.Attributes.Value("tool.name"); v.AsString() == toolName {
					return p.Value
				}
			}
		}
	}
	return 0
}

// The watchdog's answer frees its connection's place under MaxConns: with
// no MaxOverrun, twice as many hung calls as the cap are each answered, and
// /healthz still is.
func TestOverrunFreesItsConnection(t *testing.T) {
	const maxConns = 4
	release := make(chan struct{})
	hang, _ := tool.New("hang", tool.Config{Description: "Ignores its context.", Timeout: 50 * time.Millisecond},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			<-release
			return "late", nil
		})
	hd := serveHardenedWith(t, serve.Options{MaxOverrun: -1}, serve.ListenOptions{MaxConns: maxConns}, hardenedExtras{tools: []*tool.Tool{hang}})
	t.Cleanup(func() { close(release) })
	c := newClient(t)
	for i := range 2 * maxConns {
		if a := send(t, c, "POST", hd.base+"/agent/v1/tools/hang", "Bearer "+testToken, `{"input":{}}`); a.status != 200 || !a.close {
			t.Fatalf("hung call %d: %d %s (close %v)", i, a.status, a.body, a.close)
		}
	}
	if a := send(t, c, "GET", hd.base+"/healthz", "", ""); a.status != 200 {
		t.Errorf("/healthz after %d hung calls: %d %s", 2*maxConns, a.status, a.body)
	}
}

// TestHungToolInSessionsIsCapped: handlers that run on past their
// timeout in calls the host runs on a goroutine of their own (here calls
// in a session) count toward --max-overrun too: at the cap the tool's
// direct calls are refused, and served again once the handlers return.
func TestHungToolInSessionsIsCapped(t *testing.T) {
	const maxOverrun = 3
	release := make(chan struct{})
	hang, _ := tool.New("hang", tool.Config{Description: "Ignores its context.", Timeout: 50 * time.Millisecond},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			<-release
			return "late", nil
		})
	hd := serveHardenedWith(t, serve.Options{MaxOverrun: maxOverrun}, serve.ListenOptions{}, hardenedExtras{tools: []*tool.Tool{hang}})
	released := sync.OnceFunc(func() { close(release) })
	t.Cleanup(released)
	c := newClient(t)
	auth := "Bearer " + testToken
	for i := range maxOverrun {
		s := send(t, c, "POST", hd.base+"/agent/v1/session", auth, `{}`)
		var sess struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal([]byte(s.body), &sess); err != nil || sess.SessionID == "" {
			t.Fatalf("creating a session: %d %s", s.status, s.body)
		}
		a := send(t, c, "POST", hd.base+"/agent/v1/tools/hang", auth, `{"input":{},"sessionId":"`+sess.SessionID+`"}`)
		if a.status != 200 || !strings.Contains(a.body, "timed out after 50ms") {
			t.Fatalf("call %d of hang in a session: %d %s", i, a.status, a.body)
		}
	}
	if a := send(t, c, "POST", hd.base+"/agent/v1/tools/hang", auth, `{"input":{}}`); a.status != 503 || a.code != "tool_overrun" {
		t.Fatalf("a direct call of hang with %d of its handlers running on in sessions: %d %s; want 503 tool_overrun", maxOverrun, a.status, a.body)
	}
	if a := send(t, c, "POST", hd.base+"/agent/v1/tools/quick", auth, `{"input":{}}`); a.status != 200 {
		t.Fatalf("another tool: %d %s", a.status, a.body)
	}
	released()
	awaitServedAgain(t, c, hd.base, auth)
}

// awaitServedAgain waits until a direct call of hang, whose handlers
// were released, is served: its answer, not tool_overrun.
func awaitServedAgain(t *testing.T, c *http.Client, base, auth string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		a := send(t, c, "POST", base+"/agent/v1/tools/hang", auth, `{"input":{}}`)
		if a.status == 200 && strings.Contains(a.body, `"late"`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("hang after its handlers returned: %d %s", a.status, a.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

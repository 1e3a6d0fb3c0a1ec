package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/tool"
)

type buildInput struct {
	Steps   int `json:"steps" jsonschema:"minimum=1,maximum=100000"`
	PauseUs int `json:"pauseUs,omitempty"`
	// OutputBytes is how much live output to write, in 1 KiB lines.
	OutputBytes int `json:"outputBytes,omitempty"`
}

type buildOutput struct {
	Steps int `json:"steps"`
}

// setupProgress serves a tool that reports progress (and output) as it
// goes, and one that reports a timestamped update every 300 ms.
func setupProgress(t *testing.T) (base string, h *host.Host) {
	t.Helper()
	build, err := tool.New("build", tool.Config{Description: "Build, reporting each step."},
		func(ctx context.Context, call *tool.Call, in buildInput) (buildOutput, error) {
			line := strings.Repeat("x", 1023) + "\n"
			for written := 0; written < in.OutputBytes; written += len(line) {
				call.Output(ctx, line)
			}
			for i := 1; i <= in.Steps; i++ {
				call.Progress(ctx, float64(i), float64(in.Steps), fmt.Sprintf("step %d", i))
				if in.PauseUs > 0 {
					time.Sleep(time.Duration(in.PauseUs) * time.Microsecond)
				}
			}
			return buildOutput{Steps: in.Steps}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	ticks, _ := tool.New("ticks", tool.Config{Description: "Reports the time every 300 ms, ten times."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			for i := range 10 {
				call.Progress(ctx, float64(i+1), 10, strconv.FormatInt(time.Now().UnixNano(), 10))
				time.Sleep(300 * time.Millisecond)
			}
			return "done", nil
		})
	return serveTools(t, build, ticks)
}

// serveTools serves a host of tools, with the slug "agent" and testToken, on
// a loopback test server closed at the end of the test; it returns the
// server's URL with the slug, and the host.
func serveTools(t *testing.T, tools ...*tool.Tool) (base string, h *host.Host) {
	t.Helper()
	set, err := tool.NewSet(tools...)
	if err != nil {
		t.Fatal(err)
	}
	h, err = host.New(set, &host.Options{StateRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(h, &serve.Options{Slug: "agent", Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); h.Close() })
	return ts.URL + "/agent", h
}

// sseEvent is one event of a stream, with when it arrived.
type sseFrame struct {
	kind string
	data string
	at   time.Time
}

// readSSE reads a stream's events until it ends.
func readSSE(t *testing.T, resp *http.Response, each func(sseFrame) bool) {
	t.Helper()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var f sseFrame
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			f.kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			f.data = strings.TrimPrefix(line, "data: ")
		case line == "" && f.kind != "":
			f.at = time.Now()
			if !each(f) {
				return
			}
			f = sseFrame{}
		}
	}
}

// A direct call with Accept: text/event-stream streams its progress live,
// coalesced and in order, then its outcome as the last event; the result
// is exact. Without the header nothing changes.
func TestCallStreamsProgress(t *testing.T) {
	base, _ := setupProgress(t)
	req, _ := http.NewRequest("POST", base+"/v1/tools/build", strings.NewReader(`{"input":{"steps":1000,"pauseUs":1000}}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", "text/event-stream")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, ct)
	}
	var frames []sseFrame
	readSSE(t, resp, func(f sseFrame) bool { frames = append(frames, f); return f.kind != "outcome" })
	took := time.Since(start)
	if len(frames) < 3 {
		t.Fatalf("%d events", len(frames))
	}
	last := frames[len(frames)-1]
	var outcome api.CallResponse
	if err := json.Unmarshal([]byte(last.data), &outcome); err != nil || last.kind != "outcome" || !outcome.OK || outcome.IsError || string(outcome.Result) != `{"steps":1000}` {
		t.Fatalf("last event %s %s", last.kind, last.data)
	}
	progress := frames[:len(frames)-1]
	var dones []float64
	for _, f := range progress {
		var p api.ActionProgress
		if f.kind != "action.progress" || json.Unmarshal([]byte(f.data), &p) != nil || p.CallID != outcome.CallID || p.Total != 1000 {
			t.Fatalf("event %s %s", f.kind, f.data)
		}
		dones = append(dones, p.Done)
	}
	if !slices.IsSorted(dones) || dones[len(dones)-1] != 1000 {
		t.Errorf("progress out of order or missing the last: %v", dones)
	}
	// 1,000 updates in about a second, recorded at most ten a second.
	if n := len(progress); n > int(took/(100*time.Millisecond))+2 {
		t.Errorf("%d progress events in %v: not coalesced", n, took)
	}
	if first := progress[0].at.Sub(start); first > took/2 {
		t.Errorf("the first update came %v into a %v call: not live", first, took)
	}
	t.Logf("1,000 updates over %v arrived as %d events; the first after %v", took.Round(time.Millisecond), len(progress), progress[0].at.Sub(start).Round(time.Millisecond))

	// Without the header: the plain JSON answer.
	c := newCallClient(t, base)
	if out, err := c(`{"input":{"steps":3}}`); err != nil || !strings.Contains(out, `"result":{"steps":3}`) {
		t.Errorf("without the header: %s %v", out, err)
	}
	// Refused before it ran: the plain error, with its status.
	req, _ = http.NewRequest("POST", base+"/v1/tools/build", strings.NewReader(`{"input":{"steps":0}}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", "text/event-stream")
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != 400 || resp2.Header.Get("Content-Type") != "application/json" {
		t.Errorf("invalid input with the header: %d %s", resp2.StatusCode, resp2.Header.Get("Content-Type"))
	}
}

func newCallClient(t *testing.T, base string) func(body string) (string, error) {
	return func(body string) (string, error) {
		req, _ := http.NewRequest("POST", base+"/v1/tools/build", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			b.WriteString(sc.Text())
		}
		return b.String(), nil
	}
}

// A session-bound call's progress and output land on the session's stream,
// coalesced and bounded, ahead of its result; an SSE subscriber sees each
// update within milliseconds of call.Progress (the figure is logged).
func TestSessionStreamCarriesProgress(t *testing.T) {
	base, h := setupProgress(t)
	ctx := context.Background()
	sess, _, err := h.Sessions().Create(ctx, host.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 100 KiB of output and 5,000 updates: the stream keeps 64 KiB of the
	// output, says it was cut, and a bounded number of progress events.
	out, err := h.CallTool(ctx, "build", map[string]any{"steps": 5000, "outputBytes": 100 << 10}, &host.CallOptions{SessionID: sess.ID})
	if err != nil || out.IsError {
		t.Fatalf("%+v %v", out, err)
	}
	evs, _ := h.Sessions().Events(ctx, sess.ID, 0, 0)
	var kinds []string
	text, progress, truncated := 0, 0, false
	for _, e := range evs {
		kinds = append(kinds, string(e.Kind))
		switch e.Kind {
		case api.KindActionOutput:
			o, _ := api.Decode[api.ActionOutput](e)
			text += len(o.Text)
			truncated = truncated || o.Truncated
		case api.KindActionProgress:
			progress++
		}
	}
	if text != host.OutputLimit || !truncated {
		t.Errorf("recorded %d bytes of output (truncated %v); want the %d-byte cap, marked", text, truncated, host.OutputLimit)
	}
	if progress < 1 || progress > 10 {
		t.Errorf("%d progress events for 5,000 fast updates", progress)
	}
	if i, j := slices.Index(kinds, "action.progress"), slices.Index(kinds, "action.result"); i < 0 || i > j {
		t.Errorf("stream: %v", kinds)
	}

	// Latency: an update after a quiet spell goes out at once.
	resp := followSession(t, base, sess.ID, evs[len(evs)-1].Seq)
	defer resp.Body.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.CallTool(ctx, "ticks", nil, &host.CallOptions{SessionID: sess.ID})
	}()
	var lat []time.Duration
	readSSE(t, resp, func(f sseFrame) bool {
		if f.kind == "action.progress" {
			var e api.Event
			json.Unmarshal([]byte(f.data), &e)
			p, _ := api.Decode[api.ActionProgress](e)
			if ns, err := strconv.ParseInt(p.Message, 10, 64); err == nil {
				lat = append(lat, f.at.Sub(time.Unix(0, ns)))
			}
		}
		return f.kind != "turn.completed"
	})
	<-done
	if len(lat) != 10 {
		t.Fatalf("%d timed updates seen", len(lat))
	}
	slices.Sort(lat)
	t.Logf("from call.Progress to an SSE subscriber: p50 %v, max %v (10 updates, 300 ms apart)", lat[5], lat[9])
	if lat[5] > 100*time.Millisecond {
		t.Errorf("p50 %v from call.Progress to the subscriber", lat[5])
	}
}

func followSession(t *testing.T, base, sessionID string, after int64) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/v1/session/%s/events?after=%d", base, sessionID, after), nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("following: %v %v", resp, err)
	}
	return resp
}

// An MCP client that sends a progress token gets notifications/progress
// ahead of the result.
func TestMCPProgress(t *testing.T) {
	base, _ := setupProgress(t)
	var mu sync.Mutex
	var got []float64
	c := mcp.NewClient(&mcp.Implementation{Name: "progress-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params.Progress)
			mu.Unlock()
		},
	})
	for _, version := range mcpVersions {
		got = nil
		s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{token: testToken}}, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		p := &mcp.CallToolParams{Name: "build", Arguments: map[string]any{"steps": 300, "pauseUs": 1000}}
		p.SetProgressToken("tok-1")
		res, err := s.CallTool(context.Background(), p)
		s.Close()
		sc, _ := json.Marshal(res.StructuredContent)
		if err != nil || res.IsError || string(sc) != `{"steps":300}` {
			t.Fatalf("%s: %+v %v", version, res, err)
		}
		mu.Lock()
		if len(got) == 0 || !slices.IsSorted(got) || got[len(got)-1] != 300 {
			t.Errorf("%s: progress notifications %v", version, got)
		}
		mu.Unlock()
	}
}

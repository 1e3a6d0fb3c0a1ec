package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

type empty struct{}

// returning defines a tool whose handler returns v, err.
func returning(t *testing.T, v any, err error) *tool.Tool {
	return mustNew(t, "ret", tool.Config{}, func(ctx context.Context, call *tool.Call, in empty) (any, error) { return v, err })
}

// run validates {} for tl and runs it with a call that logs to logs.
func run(t *testing.T, ctx context.Context, tl *tool.Tool, logs *syncBuffer) tool.Output {
	t.Helper()
	in, err := tl.Validate(nil)
	if err != nil {
		t.Fatal(err)
	}
	var logger *slog.Logger
	if logs != nil {
		logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	out, err := tl.Run(ctx, tool.NewCall(tool.CallInfo{ID: tool.NewCallID(tl.Name()), Tool: tl.Name(), Logger: logger}), in)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type stringer struct{ A int }

func TestResultNormalisation(t *testing.T) {
	tests := []struct {
		name    string
		value   any
		err     error
		want    string
		isError bool
	}{
		{"string verbatim", "hello\n\"world\"", nil, `"hello\n\"world\""`, false},
		{"map encoded", map[string]any{"ready": true, "checks": []string{"unit"}}, nil, `{"checks":["unit"],"ready":true}`, false},
		{"struct encoded", stringer{A: 1}, nil, `{"A":1}`, false},
		{"number", 42, nil, `42`, false},
		{"nil", nil, nil, `null`, false},
		{"raw JSON as is", json.RawMessage(`{"a":[1,2]}`), nil, `{"a":[1,2]}`, false},
		{"invalid raw JSON", json.RawMessage(`{"a":`), nil, `"the tool returned a json.RawMessage that is not valid JSON"`, true},
		{"result envelope", tool.Result{Content: []tool.Content{tool.Text("hi"), tool.Image([]byte{1, 2, 3}, "image/png")}}, nil,
			`{"content":[{"type":"text","text":"hi"},{"type":"image","data":"AQID","mimeType":"image/png"}]}`, false},
		{"result pointer", &tool.Result{Content: []tool.Content{tool.EmbeddedResource(tool.Resource{URI: "file:///a.txt", Text: "a"})}}, nil,
			`{"content":[{"type":"resource","resource":{"uri":"file:///a.txt","text":"a"}}]}`, false},
		{"result isError", tool.Result{Content: []tool.Content{tool.Text("no such PR")}, IsError: true}, nil,
			`{"content":[{"type":"text","text":"no such PR"}],"isError":true}`, true},
		{"result without content", tool.Result{}, nil, `{"content":[]}`, false},
		{"result with structured content", tool.Result{Content: []tool.Content{tool.Text("2")}, StructuredContent: map[string]int{"n": 2}}, nil,
			`{"content":[{"type":"text","text":"2"}],"structuredContent":{"n":2}}`, false},
		{"image without mime type", tool.Result{Content: []tool.Content{{Type: "image", Data: "AQID"}}}, nil,
			`"the tool returned an invalid Result: content[0]: image content needs a mimeType"`, true},
		{"unknown content type", tool.Result{Content: []tool.Content{{Type: "video"}}}, nil,
			`"the tool returned an invalid Result: content[0]: unknown content type \"video\" (want text, image, audio or resource)"`, true},
		{"channel", make(chan int), nil, `"the tool's result cannot be encoded as JSON: json: unsupported type: chan int"`, true},
		{"func", func() {}, nil, `"the tool's result cannot be encoded as JSON: json: unsupported type: func()"`, true},
		{"NaN", math.NaN(), nil, `"the tool's result cannot be encoded as JSON: json: unsupported value: NaN"`, true},
		{"NaN inside a map", map[string]float64{"x": math.Inf(1)}, nil, `"the tool's result cannot be encoded as JSON: json: unsupported value: +Inf"`, true},
		{"error", nil, errors.New("PR not found"), `"PR not found"`, true},
		{"error wins over value", "partial", errors.New("failed half way"), `"failed half way"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := run(t, context.Background(), returning(t, tt.value, tt.err), nil)
			if string(out.Result) != tt.want || out.IsError != tt.isError {
				t.Errorf("Output = %s (isError %v), want %s (isError %v)", out.Result, out.IsError, tt.want, tt.isError)
			}
		})
	}
}

func TestPanicBecomesErrorResult(t *testing.T) {
	tl := mustNew(t, "explode", tool.Config{}, func(ctx context.Context, call *tool.Call, in empty) (any, error) {
		var m map[string]int
		//lint:ignore SA5000 the test needs a real runtime panic
		m["x"] = 1
		return nil, nil
	})
	var logs syncBuffer
	out := run(t, context.Background(), tl, &logs)
	if !out.IsError || string(out.Result) != `"the tool panicked: assignment to entry in nil map"` {
		t.Errorf("Output = %s (isError %v)", out.Result, out.IsError)
	}
	if strings.Contains(string(out.Result), "goroutine") || strings.Contains(string(out.Result), ".go:") {
		t.Errorf("the stack leaked into the result: %s", out.Result)
	}
	if l := logs.String(); !strings.Contains(l, "tool handler panicked") || !strings.Contains(l, "run_test.go") || !strings.Contains(l, "call_id=tool_explode_") {
		t.Errorf("the log should carry the panic's stack and the call id:\n%s", l)
	}
}

func TestTimeoutCancelsHandler(t *testing.T) {
	cancelled := make(chan error, 1)
	tl := mustNew(t, "slow", tool.Config{Timeout: 20 * time.Millisecond}, func(ctx context.Context, call *tool.Call, in empty) (any, error) {
		<-ctx.Done()
		cancelled <- ctx.Err()
		return "finished anyway", nil
	})
	out := run(t, context.Background(), tl, nil)
	if !out.IsError || string(out.Result) != `"timed out after 20ms"` {
		t.Errorf("Output = %s (isError %v), want a timeout error", out.Result, out.IsError)
	}
	if err := <-cancelled; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("handler ctx error = %v, want DeadlineExceeded", err)
	}
}

func TestTimeoutDoesNotWaitForAHandlerThatIgnoresCtx(t *testing.T) {
	release := make(chan struct{})
	tl := mustNew(t, "stubborn", tool.Config{Timeout: 10 * time.Millisecond}, func(ctx context.Context, call *tool.Call, in empty) (any, error) {
		<-release // ignores ctx
		return nil, nil
	})
	out := run(t, context.Background(), tl, nil)
	if !out.IsError || !strings.HasPrefix(string(out.Result), `"timed out after`) {
		t.Errorf("Output = %s (isError %v), want a timeout error", out.Result, out.IsError)
	}
	run(t, context.Background(), tl, nil)
	if n := tl.Overrunning(); n != 2 {
		t.Errorf("Overrunning = %d with two handlers running on, want 2", n)
	}
	close(release)
	for deadline := time.Now().Add(5 * time.Second); tl.Overrunning() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Overrunning = %d after the handlers returned, want 0", tl.Overrunning())
		}
	}
	quick := mustNew(t, "quick", tool.Config{Timeout: time.Second}, func(ctx context.Context, call *tool.Call, in empty) (any, error) { return "ok", nil })
	run(t, context.Background(), quick, nil)
	if n := quick.Overrunning(); n != 0 {
		t.Errorf("Overrunning of a tool that returned = %d", n)
	}
}

func TestCallerCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tl := mustNew(t, "wait", tool.Config{}, func(ctx context.Context, call *tool.Call, in empty) (any, error) {
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	out := run(t, ctx, tl, nil)
	if !out.IsError || !strings.Contains(string(out.Result), "context canceled") {
		t.Errorf("Output = %s (isError %v), want a cancellation error", out.Result, out.IsError)
	}
}

func TestRunRefusals(t *testing.T) {
	script, err := tool.NewScript("echo", tool.Config{Description: "d"}, "#!/bin/sh\ncat\n")
	if err != nil {
		t.Fatal(err)
	}
	in, err := script.Validate(json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var ae *tool.AgentToolError
	if _, err := script.Run(context.Background(), tool.NewCall(tool.CallInfo{}), in); !errors.As(err, &ae) || ae.Name != "echo" {
		t.Errorf("running an agent tool in-process: error = %v, want *AgentToolError", err)
	}
	a := mustNew(t, "a", tool.Config{}, noop[empty])
	b := mustNew(t, "b", tool.Config{}, noop[empty])
	inA, _ := a.Validate(nil)
	if _, err := b.Run(context.Background(), tool.NewCall(tool.CallInfo{}), inA); err == nil {
		t.Error("running b with input validated for a should be refused")
	}
}

func TestHandlerSeesCall(t *testing.T) {
	var got *tool.Call
	tl := mustNew(t, "see", tool.Config{}, func(ctx context.Context, call *tool.Call, in empty) (any, error) {
		got = call
		_, err := call.WorkspaceDir()
		return nil, err
	})
	in, _ := tl.Validate(nil)
	call := tool.NewCall(tool.CallInfo{ID: "tool_see_x", Tool: "see", StateRoot: "/state"})
	out, err := tl.Run(context.Background(), call, in)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "tool_see_x" || got.StateRoot != "/state" || !got.Session.IsZero() || got.Logger() == nil {
		t.Errorf("handler saw %+v", got)
	}
	if !out.IsError || !strings.Contains(string(out.Result), "no workspace") {
		t.Errorf("a call without a workspace should say so: %s", out.Result)
	}
}

func TestCallID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := tool.NewCallID("inspect_pr")
		if !strings.HasPrefix(id, "tool_inspect_pr_") || len(id) != len("tool_inspect_pr_")+16 || seen[id] {
			t.Fatalf("bad or repeated call id %q", id)
		}
		seen[id] = true
	}
}

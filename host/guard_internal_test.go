package host

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/agentsdk/agentsdk/tool"
)

// logBuffer is a log destination safe for concurrent writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A panic in a goroutine a handler started with call.Go leaves the host
// running: the call's outcome is an error naming the panic, the log has its
// stack and call id, and the panic is counted.
func TestCallGoPanicIsAnErrorOutcome(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	var logs logBuffer
	fanout, err := tool.New("fanout", tool.Config{Description: "Fan out."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
		call.Go(func(ctx context.Context) { panic("boom") })
		<-ctx.Done()
		return "not this", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := tool.NewSet(fanout)
	h, err := New(set, &Options{StateRoot: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, nil)), MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	out, err := h.CallTool(ctx, "fanout", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !out.IsError || string(out.Result) != `"a goroutine of the tool panicked: boom"` {
		t.Errorf("outcome = %s (isError %v)", out.Result, out.IsError)
	}
	if l := logs.String(); !strings.Contains(l, "call_id="+out.CallID) || !strings.Contains(l, "guard_internal_test.go") {
		t.Errorf("the log should have the panic's stack and call id:\n%s", l)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	var counted int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == tool.GoroutinePanicsMetric {
				for _, dp := range sum.DataPoints {
					if v, _ := dp.Attributes.Value("tool.name"); v.AsString() == "fanout" {
						counted += dp.Value
					}
				}
			}
		}
	}
	if counted != 1 {
		t.Errorf("%s counted %d panics, want 1", tool.GoroutinePanicsMetric, counted)
	}
}

// guard, deferred in a goroutine, recovers and logs its panic.
func TestGuard(t *testing.T) {
	var logs logBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer guard(logger, "testing the guard", "session", "s1")
		panic("boom")
	}()
	<-done
	l := logs.String()
	for _, want := range []string{`msg="testing the guard panicked"`, "session=s1", "panic=boom", "guard_internal_test.go"} {
		if !strings.Contains(l, want) {
			t.Errorf("log lacks %s:\n%s", want, l)
		}
	}
}

// A panic on the way to a tool or back, outside the handler (here the
// script runner, given no input), fails the call, not the host.
func TestRunRecoversPanics(t *testing.T) {
	script, err := tool.NewScript("script", tool.Config{Description: "A script."}, "#!/bin/sh\ncat\n")
	if err != nil {
		t.Fatal(err)
	}
	set, _ := tool.NewSet(script)
	var logs logBuffer
	h, err := New(set, &Options{StateRoot: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	out := h.run(context.Background(), callSpec{id: "tool_script_x", tool: script})
	if !out.IsError || !strings.HasPrefix(string(out.Result), `"the call failed: runtime error`) {
		t.Errorf("Output = %s (isError %v)", out.Result, out.IsError)
	}
	if l := logs.String(); !strings.Contains(l, "running a tool call panicked") || !strings.Contains(l, "call_id=tool_script_x") {
		t.Errorf("log:\n%s", l)
	}
}

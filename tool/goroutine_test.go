package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// countingOtel records the counters a call adds.
type countingOtel struct {
	mu     sync.Mutex
	counts []string // name{attrs}=n
}

func (o *countingOtel) Count(_ context.Context, name string, n int64, attrs map[string]string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.counts = append(o.counts, fmt.Sprintf("%s%v=%d", name, attrs, n))
}

func (o *countingOtel) Record(context.Context, string, float64, map[string]string) {}

func (o *countingOtel) TagSession(context.Context, string, string) error { return nil }

func (o *countingOtel) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.counts, " ")
}

// goCall is a call of tl that logs to logs and counts into otel.
func goCall(tl *tool.Tool, logs *syncBuffer, otel *countingOtel) *tool.Call {
	return tool.NewCall(tool.CallInfo{
		ID: tool.NewCallID(tl.Name()), Tool: tl.Name(),
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Host:   tool.Services{Otel: otel},
	})
}

func runCall(t *testing.T, ctx context.Context, tl *tool.Tool, call *tool.Call) tool.Output {
	t.Helper()
	in, err := tl.Validate(nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tl.Run(ctx, call, in)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out
}

// eventually waits up to 5 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A panic in a goroutine started with call.Go does not end the process: it
// cancels the call's context, makes the result an error naming it, and is
// logged with its stack and the call id, and counted.
func TestGoPanicBecomesErrorResult(t *testing.T) {
	var handlerCause error
	tl := mustNew(t, "fanout", tool.Config{}, func(ctx context.Context, call *tool.Call, in empty) (any, error) {
		call.Go(func(ctx context.Context) {
			var m map[string]int
			//lint:ignore SA5000 the test needs a real runtime panic
			m["x"] = 1
		})
		<-ctx.Done() // the panic cancels the call
		handlerCause = context.Cause(ctx)
		return "finished anyway", nil
	})
	var logs syncBuffer
	otel := &countingOtel{}
	out := runCall(t, context.Background(), tl, goCall(tl, &logs, otel))
	if !out.IsError || string(out.Result) != `"a goroutine of the tool panicked: assignment to entry in nil map"` {
		t.Errorf("Output = %s (isError %v)", out.Result, out.IsError)
	}
	if handlerCause == nil || !strings.Contains(handlerCause.Error(), "a goroutine of the tool panicked: assignment to entry in nil map") {
		t.Errorf("the handler's ctx cause = %v, want the panic", handlerCause)
	}
	if l := logs.String(); !strings.Contains(l, "a goroutine of the tool panicked") || !strings.Contains(l, "goroutine_test.go") ||
		!strings.Contains(l, "call_id=tool_fanout_") || !strings.Contains(l, "tool=fanout") || !strings.Contains(l, "reported=true") {
		t.Errorf("the log should carry the panic's stack, the tool and the call id:\n%s", l)
	}
	if got, want := otel.String(), tool.GoroutinePanicsMetric+"map[tool.name:fanout tool.reported:true]=1"; got != want {
		t.Errorf("counted %q, want %q", got, want)
	}
}

// The call waits for its goroutines: a handler that returns a result leaves
// them running, uncancelled, and Run returns once they have.
func TestGoCallWaitsForGoroutines(t *testing.T) {
	var finished atomic.Int32
	var cancelled atomic.Bool
	tl := mustNew(t, "wait", tool.Config{}, func(ctx context.Context, call *tool.Call, in empty) (any, error) {
		for range 3 {
			call.Go(func(ctx context.Context) {
				// A goroutine may start goroutines of its own.
				call.Go(func(ctx context.Context) {
					time.Sleep(30 * time.Millisecond)
					cancelled.Store(cancelled.Load() || ctx.Err() != nil)
					finished.Add(1)
				})
				time.Sleep(10 * time.Millisecond)
				finished.Add(1)
			})
		}
		return "started", nil
	})
	var logs syncBuffer
	out := runCall(t, context.Background(), tl, goCall(tl, &logs, &countingOtel{}))
	if out.IsError || string(out.Result) != `"started"` {
		t.Errorf("Output = %s (isError %v)", out.Result, out.IsError)
	}
	if n := finished.Load(); n != 6 {
		t.Errorf("Run returned with %d of 6 goroutines finished", n)
	}
	if cancelled.Load() {
		t.Error("the goroutines' context was cancelled although the handler succeeded")
	}
}

// A handler that fails cancels its goroutines, and the call still waits
// for them.
func TestGoHandlerErrorCancelsGoroutines(t *testing.T) {
	var cause atomic.Value
	tl := mustNew(t, "fail", tool.Config{}, func(ctx context.Context, call *tool.Call, in empty) (any, error) {
		call.Go(func(ctx context.Context) {
			<-ctx.Done()
			time.Sleep(10 * time.Millisecond)
			cause.Store(context.Cause(ctx))
		})
		return nil, errors.New("no such PR")
	})
	var logs syncBuffer
	out := runCall(t, context.Background(), tl, goCall(tl, &logs, &countingOtel{}))
	if !out.IsError || string(out.Result) != `"no such PR"` {
		t.Errorf("Output = %s (isError %v)", out.Result, out.IsError)
	}
	if c, _ := cause.Load().(error); c == nil || !strings.Contains(c.Error(), "handler returned") {
		t.Errorf("Run returned before the goroutine, or its cause is %v", c)
	}
}

// A handler that panics cancels its goroutines; its own panic is the result.
func TestGoHandlerPanicCancelsGoroutines(t *testing.T) {
	var stopped atomic.Bool
	tl := mustNew(t, "explode", tool.Config{}, func(ctx context.Context, call *tool.Call, in empty) (any, error) {
		call.Go(func(ctx context.Context) {
			<-ctx.Done()
			stopped.Store(true)
		})
		panic("boom")
	})
	var logs syncBuffer
	out := runCall(t, context.Background(), tl, goCall(tl, &logs, &countingOtel{}))
	if !out.IsError || string(out.Result) != `"the tool panicked: boom"` {
		t.Errorf("Output = %s (isError %v)", out.Result, out.IsError)
	}
	if !stopped.Load() {
		t.Error("Run returned before the cancelled goroutine did")
	}
}

// The first panic of a call is the one its result names.
func TestGoFirstPanicWins(t *testing.T) {
	tl := mustNew(t, "twice", tool.Config{}, func(ctx context.Context, call *tool.Call, in empty) (any, error) {
		call.Go(func(ctx context.Context) { panic("first") })
		<-ctx.Done()
		call.Go(func(ctx context.Context) { panic("second") })
		panic("third")
	})
	var logs syncBuffer
	otel := &countingOtel{}
	out := runCall(t, context.Background(), tl, goCall(tl, &logs, otel))
	if string(out.Result) != `"a goroutine of the tool panicked: first"` {
		t.Errorf("Output = %s, want the first panic", out.Result)
	}
	if n := strings.Count(logs.String(), "panicked"); n < 3 {
		t.Errorf("every panic should be logged; %d were:\n%s", n, logs.String())
	}
	if got := otel.String(); strings.Count(got, "tool.reported:true") != 2 {
		t.Errorf("both goroutine panics should be counted: %s", got)
	}
}

// The timeout bounds the wait for goroutines that ignore ctx; one that
// panics after the call returned is logged and counted, and the process
// goes on.
func TestGoTimeoutAndLatePanic(t *testing.T) {
	release := make(chan struct{})
	exited := make(chan struct{})
	tl := mustNew(t, "stubborn", tool.Config{Timeout: 20 * time.Millisecond}, func(ctx context.Context, call *tool.Call, in empty) (any, error) {
		call.Go(func(ctx context.Context) {
			defer close(exited)
			<-release // ignores ctx
			panic("too late")
		})
		return "done", nil
	})
	var logs syncBuffer
	otel := &countingOtel{}
	start := time.Now()
	out := runCall(t, context.Background(), tl, goCall(tl, &logs, otel))
	if !out.IsError || string(out.Result) != `"timed out after 20ms"` {
		t.Errorf("Output = %s (isError %v), want a timeout", out.Result, out.IsError)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Run took %s", d)
	}
	close(release)
	<-exited
	eventually(t, "the late panic to be counted", func() bool { return strings.Contains(otel.String(), "tool.reported:false") })
	if l := logs.String(); !strings.Contains(l, "too late") || !strings.Contains(l, "reported=false") {
		t.Errorf("the late panic should be logged as not reported:\n%s", l)
	}
}

// The caller's cancellation reaches the goroutines, and Run returns at
// once, without waiting for them.
func TestGoCallerCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	seen := make(chan error, 1)
	release := make(chan struct{})
	tl := mustNew(t, "cancel", tool.Config{}, func(ctx context.Context, call *tool.Call, in empty) (any, error) {
		call.Go(func(ctx context.Context) {
			close(started)
			<-ctx.Done()
			seen <- ctx.Err()
			<-release // lingers after the cancellation
		})
		return "ok", nil
	})
	go func() {
		<-started
		cancel()
	}()
	var logs syncBuffer
	out := runCall(t, ctx, tl, goCall(tl, &logs, &countingOtel{}))
	close(release)
	if !out.IsError || !strings.Contains(string(out.Result), "cancelled") {
		t.Errorf("Output = %s (isError %v), want a cancellation", out.Result, out.IsError)
	}
	if err := <-seen; !errors.Is(err, context.Canceled) {
		t.Errorf("goroutine ctx error = %v", err)
	}
}

// On a Call that Run is not running (a handler's unit test), Go still
// recovers: the panic is logged and counted.
func TestGoOutsideRun(t *testing.T) {
	var logs syncBuffer
	otel := &countingOtel{}
	call := tool.NewCall(tool.CallInfo{ID: "tool_t_x", Tool: "t", Logger: slog.New(slog.NewTextHandler(&logs, nil)), Host: tool.Services{Otel: otel}})
	ran := make(chan error, 1)
	call.Go(func(ctx context.Context) {
		ran <- ctx.Err()
		panic("unsupervised")
	})
	if err := <-ran; err != nil {
		t.Errorf("ctx error = %v, want a live context", err)
	}
	eventually(t, "the panic to be counted", func() bool { return otel.String() != "" })
	if l := logs.String(); !strings.Contains(l, "unsupervised") || !strings.Contains(l, "call_id=tool_t_x") {
		t.Errorf("log:\n%s", l)
	}
}

// panicky's UnmarshalJSON panics.
type panicky struct{}

func (*panicky) UnmarshalJSON([]byte) error { panic("cannot decode") }

type panickyInput struct {
	P panicky `json:"p"`
}

// An input type whose UnmarshalJSON panics has its input refused: hosts
// validate on goroutines of their own (a model turn's tool calls), where a
// panic would end the process.
func TestValidateRecoversUnmarshalPanic(t *testing.T) {
	tl := mustNew(t, "decode", tool.Config{}, noop[panickyInput])
	for _, raw := range []string{`{"p":{}}`, `{"\u0070": {}}`} {
		_, err := tl.Validate(json.RawMessage(raw))
		var ie *tool.InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "could not be decoded: cannot decode") {
			t.Errorf("Validate(%s) = %v, want an InputError naming the panic", raw, err)
		}
	}
}

func ExampleCall_Go() {
	fetch := func(ctx context.Context, url string) string { return "fetched " + url }
	type In struct {
		URLs []string `json:"urls"`
	}
	fetchAll, _ := tool.New("fetch_all", tool.Config{Description: "Fetch every URL."},
		func(ctx context.Context, call *tool.Call, in In) (any, error) {
			results := make([]string, len(in.URLs))
			var wg sync.WaitGroup
			for i, url := range in.URLs {
				wg.Add(1)
				// call.Go, not go: a panic in a bare goroutine ends the host.
				call.Go(func(ctx context.Context) {
					defer wg.Done() // runs on a panic too
					results[i] = fetch(ctx, url)
				})
			}
			wg.Wait()
			return results, ctx.Err()
		})
	in, _ := fetchAll.Validate(json.RawMessage(`{"urls":["a","b"]}`))
	out, _ := fetchAll.Run(context.Background(), tool.NewCall(tool.CallInfo{Tool: "fetch_all"}), in)
	fmt.Println(string(out.Result))
	// Output: ["fetched a","fetched b"]
}

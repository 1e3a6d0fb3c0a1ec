package tool_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// runInline runs tl on the caller's goroutine (CallInfo.Overrun) and
// returns what Run returned and what Overrun got (nil if never called).
func runInline(t *testing.T, ctx context.Context, tl *tool.Tool, overrun func(tool.Output)) tool.Output {
	t.Helper()
	in, err := tl.Validate(nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tl.Run(ctx, tool.NewCall(tool.CallInfo{ID: tool.NewCallID(tl.Name()), Tool: tl.Name(), Overrun: overrun}), in)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out
}

// An inline call gives the same result as one on a goroutine of its own,
// and never calls Overrun when the handler returns in time.
func TestInlineRunResults(t *testing.T) {
	cases := []struct {
		name string
		tl   *tool.Tool
		want string
		err  bool
	}{
		{"value", returning(t, map[string]int{"n": 1}, nil), `{"n":1}`, false},
		{"error", returning(t, nil, errors.New("no such PR")), "no such PR", true},
		{"panic", mustNew(t, "boom", tool.Config{}, func(ctx context.Context, call *tool.Call, in empty) (any, error) { panic("kaboom") }), "the tool panicked: kaboom", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			called := false
			out := runInline(t, context.Background(), c.tl, func(tool.Output) { called = true })
			if called {
				t.Error("Overrun was called for a handler that returned in time")
			}
			if out.IsError != c.err || !strings.Contains(string(out.Result), c.want) {
				t.Errorf("result %s (isError %v), want %s (isError %v)", out.Result, out.IsError, c.want, c.err)
			}
			if same := run(t, context.Background(), c.tl, nil); string(same.Result) != string(out.Result) || same.IsError != out.IsError {
				t.Errorf("inline %s, on a goroutine %s", out.Result, same.Result)
			}
		})
	}
}

// A handler that ignores its context still times out on time: Overrun
// gets the timeout while the handler is still running, and Run returns the
// same result once the handler has returned.
func TestInlineRunOverrunsOnTime(t *testing.T) {
	release := make(chan struct{})
	stuck := mustNew(t, "stuck", tool.Config{Timeout: 50 * time.Millisecond}, func(ctx context.Context, call *tool.Call, in empty) (any, error) {
		<-release // ignores ctx
		return "late", nil
	})
	var (
		mu    sync.Mutex
		early *tool.Output
	)
	got := make(chan struct{})
	go func() {
		<-got
		close(release) // the handler returns only once Overrun has answered
	}()
	out := runInline(t, context.Background(), stuck, func(o tool.Output) {
		mu.Lock()
		early = &o
		mu.Unlock()
		close(got)
	})
	mu.Lock()
	defer mu.Unlock()
	if early == nil {
		t.Fatal("Overrun was never called")
	}
	if !early.IsError || !strings.Contains(string(early.Result), "timed out after 50ms") {
		t.Errorf("Overrun got %s, want the timeout", early.Result)
	}
	if string(out.Result) != string(early.Result) || !out.IsError {
		t.Errorf("Run returned %s, Overrun got %s: want the same", out.Result, early.Result)
	}
}

// The caller's cancellation settles an inline call like a timeout does,
// once the handler (or anything of the call) watches its context.
func TestInlineRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	release := make(chan struct{})
	stuck := mustNew(t, "stuck", tool.Config{}, func(ctx context.Context, call *tool.Call, in empty) (any, error) {
		done := ctx.Done()
		cancel(errors.New("the client went away"))
		<-done
		<-release // and runs on past it
		return "late", nil
	})
	out := runInline(t, ctx, stuck, func(o tool.Output) {
		if !strings.Contains(string(o.Result), "cancelled: the client went away") {
			t.Errorf("Overrun got %s, want the cancellation", o.Result)
		}
		close(release)
	})
	if !out.IsError || !strings.Contains(string(out.Result), "the client went away") {
		t.Errorf("Run returned %s, want the cancellation", out.Result)
	}
}

// A caller's cancellation that the call never watches changes nothing: the
// handler's result stands, and Overrun is not called.
func TestInlineRunCancelledUnwatched(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	blind := mustNew(t, "blind", tool.Config{}, func(_ context.Context, call *tool.Call, in empty) (any, error) {
		cancel(errors.New("the client went away"))
		time.Sleep(20 * time.Millisecond)
		return "done", nil
	})
	out := runInline(t, ctx, blind, func(o tool.Output) { t.Errorf("Overrun got %s", o.Result) })
	if out.IsError || string(out.Result) != `"done"` {
		t.Errorf("Run returned %s, want the handler's result", out.Result)
	}
}

// A caller's end that the handler notices through ctx.Err() is told to
// Overrun from another goroutine, not from inside ctx.Err(): the handler
// goes on while Overrun answers.
func TestInlineRunOverrunNotInsideErr(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	pastErr, release := make(chan struct{}), make(chan struct{})
	var errSeen error
	stuck := mustNew(t, "stuck", tool.Config{}, func(ctx context.Context, call *tool.Call, in empty) (any, error) {
		cancel(errors.New("the client went away"))
		errSeen = ctx.Err()
		close(pastErr)
		<-release
		return "late", nil
	})
	out := runInline(t, ctx, stuck, func(o tool.Output) {
		select {
		case <-pastErr:
		case <-time.After(5 * time.Second):
			t.Error("Overrun ran inside the handler's ctx.Err()")
		}
		close(release)
	})
	if errSeen != context.Canceled {
		t.Errorf("the handler's ctx.Err() = %v, want context.Canceled", errSeen)
	}
	if !out.IsError || !strings.Contains(string(out.Result), "the client went away") {
		t.Errorf("Run returned %s, want the cancellation", out.Result)
	}
}

// An inline call whose handler has failed still stops waiting for its
// goroutines (ones that ignore their context) when its caller ends, not
// only at its timeout.
func TestInlineRunGoroutinesStopWaitingForTheCaller(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	block := make(chan struct{})
	defer close(block)
	failing := mustNew(t, "failing", tool.Config{Timeout: time.Minute}, func(ctx context.Context, call *tool.Call, in empty) (any, error) {
		call.Go(func(context.Context) { <-block }) // ignores its context
		time.AfterFunc(50*time.Millisecond, cancel)
		return nil, errors.New("failed")
	})
	done := make(chan tool.Output, 1)
	go func() { done <- runInline(t, ctx, failing, func(tool.Output) {}) }()
	select {
	case out := <-done:
		if !out.IsError {
			t.Errorf("Run returned %s, want an error", out.Result)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run still waits for the call's goroutines after its caller ended")
	}
}

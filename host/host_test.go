package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/tool"
)

type prInput struct {
	PRURL string `json:"prUrl" jsonschema:"format=uri"`
}

type wsInput struct {
	Then string `json:"then" jsonschema:"enum=return,enum=error,enum=panic,enum=hang,enum=remove"`
}

// testBundle is a host over a small set of tools, and what they saw.
type testBundle struct {
	host  *host.Host
	state string
	seen  chan string // workspace directories handlers were given
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{state: t.TempDir(), seen: make(chan string, 16)}
	inspect, err := tool.New("inspect_pr", tool.Config{Description: "Inspect a PR."},
		func(ctx context.Context, call *tool.Call, in prInput) (any, error) {
			return map[string]any{"prUrl": in.PRURL, "ready": true}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := tool.New("workspace", tool.Config{Description: "Use the workspace.", Timeout: 5 * time.Second},
		func(ctx context.Context, call *tool.Call, in wsInput) (any, error) {
			dir, err := call.WorkspaceDir()
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(dir, "scratch.txt"), []byte("x"), 0o600); err != nil {
				return nil, err
			}
			b.seen <- dir
			switch in.Then {
			case "error":
				return nil, errors.New("failed on purpose")
			case "panic":
				panic("on purpose")
			case "hang":
				<-ctx.Done()
				return nil, ctx.Err()
			case "remove":
				// A handler that removes its workspace still finds it
				// there when it asks again.
				if err := os.RemoveAll(dir); err != nil {
					return nil, err
				}
				again, err := call.WorkspaceDir()
				if err != nil {
					return nil, err
				}
				if _, err := os.Stat(again); err != nil {
					return nil, err
				}
			}
			return "ok", nil
		})
	if err != nil {
		t.Fatal(err)
	}
	gated, err := tool.New("promote_build", tool.Config{Description: "Promote.", NeedsApproval: tool.When(func(in wsInput) bool { return in.Then == "panic" })},
		func(ctx context.Context, call *tool.Call, in wsInput) (any, error) { return "promoted", nil })
	if err != nil {
		t.Fatal(err)
	}
	script, err := tool.NewScript("echo", tool.Config{Description: "Echo."}, "#!/bin/sh\ncat\n")
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(inspect, ws, gated, script)
	if err != nil {
		t.Fatal(err)
	}
	b.host, err = host.New(set, &host.Options{StateRoot: b.state})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCallTool(t *testing.T) {
	b := setup(t)
	for name, input := range map[string]any{
		"map":         map[string]any{"prUrl": "https://github.com/acme/checkout/pull/42"},
		"struct":      prInput{PRURL: "https://github.com/acme/checkout/pull/42"},
		"raw message": json.RawMessage(`{"prUrl":"https://github.com/acme/checkout/pull/42"}`),
		"bytes":       []byte(`{"prUrl":"https://github.com/acme/checkout/pull/42"}`),
	} {
		t.Run(name, func(t *testing.T) {
			out, err := b.host.CallTool(context.Background(), "inspect_pr", input, nil)
			if err != nil {
				t.Fatal(err)
			}
			if out.ToolName != "inspect_pr" || !strings.HasPrefix(out.CallID, "tool_inspect_pr_") || out.IsError || out.DurationMs < 0 {
				t.Errorf("outcome %+v", out)
			}
			if string(out.Result) != `{"prUrl":"https://github.com/acme/checkout/pull/42","ready":true}` {
				t.Errorf("result %s", out.Result)
			}
			js, _ := json.Marshal(out)
			var shape map[string]any
			if err := json.Unmarshal(js, &shape); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"toolName", "callId", "isError", "result", "durationMs"} {
				if _, ok := shape[k]; !ok {
					t.Errorf("outcome JSON lacks %s: %s", k, js)
				}
			}
		})
	}
}

func TestCallToolErrors(t *testing.T) {
	b := setup(t)
	ctx := context.Background()

	_, err := b.host.CallTool(ctx, "inspect", nil, nil)
	var unknown *tool.UnknownToolError
	if !errors.As(err, &unknown) || strings.Join(unknown.Available, ",") != "echo,inspect_pr,promote_build,workspace" {
		t.Errorf("unknown tool: %v", err)
	}
	if err != nil && !strings.Contains(err.Error(), "available: echo, inspect_pr, promote_build, workspace") {
		t.Errorf("the message should list the tools: %v", err)
	}

	_, err = b.host.CallTool(ctx, "echo", map[string]any{"message": "hi"}, nil)
	var agent *tool.AgentToolError
	if !errors.As(err, &agent) {
		t.Errorf("agent tool: %v", err)
	}

	_, err = b.host.CallTool(ctx, "inspect_pr", map[string]any{"prUrl": "nope", "extra": 1}, nil)
	var invalid *tool.InputError
	if !errors.As(err, &invalid) || len(invalid.Violations) != 2 ||
		invalid.Violations[0].String() != "input.extra: unknown property (known: prUrl)" || invalid.Violations[1].String() != "input.prUrl: must be a uri" {
		t.Errorf("invalid input: %v", err)
	}

	_, err = b.host.CallTool(ctx, "inspect_pr", map[string]any{"prUrl": make(chan int)}, nil)
	if !errors.As(err, &invalid) || !strings.Contains(err.Error(), "cannot be encoded as JSON") {
		t.Errorf("unencodable input: %v", err)
	}

	_, err = b.host.CallTool(ctx, "inspect_pr", json.RawMessage(`{"prUrl":`), nil)
	if !errors.As(err, &invalid) || !strings.Contains(err.Error(), "input: is not valid JSON") {
		t.Errorf("malformed input: %v", err)
	}

	_, err = b.host.CallTool(ctx, "inspect_pr", map[string]any{"prUrl": "https://x.example"}, &host.CallOptions{SessionID: "s1"})
	if !errors.Is(err, api.ErrSessionNotFound) {
		t.Errorf("session-bound call in no session: %v", err)
	}

	// Every host has a store (in memory by default), so a gated call parks
	// rather than being refused or run unapproved.
	_, err = b.host.CallTool(ctx, "promote_build", map[string]any{"then": "panic"}, nil)
	var pending *host.ApprovalPendingError
	if !errors.As(err, &pending) || pending.Approval.Tool != "promote_build" || pending.Approval.Status != api.ApprovalPending {
		t.Errorf("gated call: %v", err)
	}
	out, err := b.host.CallTool(ctx, "promote_build", map[string]any{"then": "return"}, nil)
	if err != nil || string(out.Result) != `"promoted"` {
		t.Errorf("ungated call: %v, %+v", err, out)
	}
}

func TestScratchWorkspace(t *testing.T) {
	b := setup(t)
	for _, then := range []string{"return", "error", "panic", "hang", "remove"} {
		t.Run(then, func(t *testing.T) {
			ctx := context.Background()
			if then == "hang" { // ended by its caller's deadline; the tool's own timeout leaves a loaded machine room
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
				defer cancel()
			}
			out, err := b.host.CallTool(ctx, "workspace", map[string]any{"then": then}, nil)
			if err != nil {
				t.Fatal(err)
			}
			dir := <-b.seen
			if want := filepath.Join(b.state, "tool-calls", out.CallID); dir != want {
				t.Errorf("workspace %s, want %s", dir, want)
			}
			if wantErr := then != "return" && then != "remove"; out.IsError != wantErr {
				t.Errorf("isError = %v for %s: %s", out.IsError, then, out.Result)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("workspace still there after the call returned (%s): %v", then, err)
			}
		})
	}
	// No scratch directory is made for a call that never asks for one.
	if _, err := b.host.CallTool(context.Background(), "inspect_pr", map[string]any{"prUrl": "https://x.example"}, nil); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(b.state, "tool-calls"))
	if len(entries) != 0 {
		t.Errorf("tool-calls holds %d entries after every call returned", len(entries))
	}
}

func TestWorkspaceRefusedAfterReturn(t *testing.T) {
	state := t.TempDir()
	calls := make(chan *tool.Call, 1)
	keep, err := tool.New("keep", tool.Config{Description: "Keep the call."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
		calls <- call
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := tool.NewSet(keep)
	h, _ := host.New(set, &host.Options{StateRoot: state})
	if _, err := h.CallTool(context.Background(), "keep", nil, nil); err != nil {
		t.Fatal(err)
	}
	if dir, err := (<-calls).WorkspaceDir(); !errors.Is(err, tool.ErrNoWorkspace) {
		t.Errorf("WorkspaceDir after the call returned = %q, %v; want ErrNoWorkspace", dir, err)
	}
}

func TestConcurrentCalls(t *testing.T) {
	b := setup(t)
	var wg sync.WaitGroup
	ids := make(chan string, 64)
	for range 64 {
		wg.Go(func() {
			out, err := b.host.CallTool(context.Background(), "inspect_pr", map[string]any{"prUrl": "https://x.example/1"}, nil)
			if err != nil || out.IsError {
				t.Errorf("%v %+v", err, out)
				return
			}
			ids <- out.CallID
		})
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Errorf("call id %s given twice", id)
		}
		seen[id] = true
	}
}

func TestNewErrors(t *testing.T) {
	set, _ := tool.NewSet()
	if _, err := host.New(set, nil); err == nil || !strings.Contains(err.Error(), "StateRoot is required") {
		t.Errorf("New without a state root: %v", err)
	}
	if _, err := host.New(nil, &host.Options{StateRoot: t.TempDir()}); err == nil {
		t.Error("New with a nil set should fail")
	}
}

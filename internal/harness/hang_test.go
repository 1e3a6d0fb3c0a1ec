package harness_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/internal/harnesstest"
)

func startStuck(t *testing.T, ask bool, opts harness.Options) *harness.Process {
	t.Helper()
	opts.Spec, opts.Workspace, opts.Home = harnesstest.Stuck(0, ask), t.TempDir(), t.TempDir()
	p, err := harness.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if _, err := p.NewSession(context.Background()); err != nil {
		t.Fatal(err)
	}
	return p
}

// A harness that sends nothing for its hang timeout is killed, with
// nothing of it left, and its prompt fails saying so, with the tail of
// its stderr.
func TestHang(t *testing.T) {
	home := t.TempDir()
	p, err := harness.Start(context.Background(), harness.Options{Spec: harnesstest.Stuck(300*time.Millisecond, false), Workspace: t.TempDir(), Home: home})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.NewSession(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err = p.Prompt(context.Background(), "go")
	var hang *harness.HangError
	if !errors.As(err, &hang) || !strings.Contains(err.Error(), "harness stuck sent nothing for") || !strings.Contains(err.Error(), "stuck in a loop") {
		t.Fatalf("prompt: %v", err)
	}
	if hang.Quiet < 300*time.Millisecond {
		t.Errorf("taken for hung after %s", hang.Quiet)
	}
	if !p.Exited() {
		t.Error("the hung harness is still running")
	}
	if left := harnesstest.Procs(func(h string) bool { return h == home }); len(left) > 0 {
		t.Errorf("processes left: %v", left)
	}
}

// Time the harness waits on us — a permission request a person has not
// answered, a call of the agent's tools (Busy) — is not silence: the
// count starts when the wait ends.
func TestHangNotWhileWaitingOnUs(t *testing.T) {
	const timeout = 200 * time.Millisecond
	t.Run("permission", func(t *testing.T) {
		var answered atomic.Int64
		p := startStuck(t, true, harness.Options{HangTimeout: timeout, Handler: harness.Handler{
			Permission: func(ctx context.Context, r acp.RequestPermissionRequest) acp.RequestPermissionResponse {
				time.Sleep(5 * timeout) // a person deciding
				answered.Store(time.Now().UnixNano())
				return harness.AllowOnce(r)
			},
		}})
		_, err := p.Prompt(context.Background(), "go")
		var hang *harness.HangError
		if !errors.As(err, &hang) {
			t.Fatalf("prompt: %v", err)
		}
		if a := answered.Load(); a == 0 || time.Since(time.Unix(0, a)) < timeout {
			t.Errorf("taken for hung while a person decided (answered %v)", a != 0)
		}
	})
	t.Run("busy", func(t *testing.T) {
		var busyUntil atomic.Int64
		busyUntil.Store(time.Now().Add(5 * timeout).UnixNano())
		p := startStuck(t, false, harness.Options{HangTimeout: timeout, Busy: func() bool { return time.Now().UnixNano() < busyUntil.Load() }})
		_, err := p.Prompt(context.Background(), "go")
		var hang *harness.HangError
		if !errors.As(err, &hang) {
			t.Fatalf("prompt: %v", err)
		}
		// The watchdog sees a wait end at its next look (every tenth of
		// the timeout).
		if since := time.Since(time.Unix(0, busyUntil.Load())); since < timeout*8/10 {
			t.Errorf("taken for hung %s after the call of our tool ended", since)
		}
	})
}

package host_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/tool"
)

// gauge measures, from inside a tool, how many of its calls run at once.
type gauge struct {
	now, peak atomic.Int64
	byKey     sync.Map // key → *atomic.Int64 running now
	keyPeak   atomic.Int64
}

func (g *gauge) run(key string, d time.Duration) {
	n := g.now.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
	if key != "" {
		c, _ := g.byKey.LoadOrStore(key, new(atomic.Int64))
		k := c.(*atomic.Int64).Add(1)
		for p := g.keyPeak.Load(); k > p && !g.keyPeak.CompareAndSwap(p, k); p = g.keyPeak.Load() {
		}
		defer c.(*atomic.Int64).Add(-1)
	}
	time.Sleep(d)
	g.now.Add(-1)
}

type deployIn struct {
	Service string `json:"service"`
}

func limitsHost(t *testing.T, cfg tool.Config, g *gauge, script ...fakemodel.Reply) *host.Host {
	t.Helper()
	cfg.Description = "Limited."
	limited, err := tool.New("limited", cfg, func(ctx context.Context, call *tool.Call, in deployIn) (any, error) {
		g.run(in.Service, 20*time.Millisecond)
		return "ok", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := tool.NewSet(limited)
	h, _ := modelHost(t, set, host.Options{ToolConcurrency: 8}, script...)
	return h
}

// 50 concurrent direct calls of a MaxConcurrent: 2 tool never run more than
// two at once; with time enough to wait, all of them run.
func TestMaxConcurrentDirectCalls(t *testing.T) {
	g := &gauge{}
	h := limitsHost(t, tool.Config{MaxConcurrent: 2, BusyWait: time.Minute}, g)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range 50 {
		wg.Go(func() {
			if out, err := h.CallTool(context.Background(), "limited", map[string]any{"service": ""}, nil); err != nil || out.IsError {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if failed.Load() != 0 || g.peak.Load() != 2 {
		t.Errorf("%d calls failed; at most %d ran at once, want 2", failed.Load(), g.peak.Load())
	}
}

// Past BusyWait a direct call is refused: 429 tool_busy.
func TestBusyDirectCallIsRefused(t *testing.T) {
	g := &gauge{}
	h := limitsHost(t, tool.Config{MaxConcurrent: 1, BusyWait: 5 * time.Millisecond}, g)
	var wg sync.WaitGroup
	var busy, ran atomic.Int64
	for range 10 {
		wg.Go(func() {
			_, err := h.CallTool(context.Background(), "limited", map[string]any{"service": ""}, nil)
			switch {
			case err == nil:
				ran.Add(1)
			case errors.Is(err, &api.Error{Code: api.CodeToolBusy}) && strings.Contains(err.Error(), "at most 1 calls at once"):
				busy.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if busy.Load() == 0 || ran.Load() == 0 || g.peak.Load() != 1 {
		t.Errorf("%d ran, %d busy, peak %d", ran.Load(), busy.Load(), g.peak.Load())
	}
	if api.CodeToolBusy.Status() != 429 {
		t.Errorf("tool_busy is HTTP %d", api.CodeToolBusy.Status())
	}
}

// Exclusive by key: calls for one service never overlap; calls for
// different services do.
func TestExclusiveByKey(t *testing.T) {
	g := &gauge{}
	h := limitsHost(t, tool.Config{Exclusive: tool.ExclusiveBy(func(in deployIn) string { return in.Service }), BusyWait: time.Minute}, g)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			svc := []string{"api", "web"}[i%2]
			if _, err := h.CallTool(context.Background(), "limited", map[string]any{"service": svc}, nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if g.keyPeak.Load() != 1 || g.peak.Load() != 2 {
		t.Errorf("per service at most %d at once (want 1); in all %d (want 2)", g.keyPeak.Load(), g.peak.Load())
	}
}

// A model's parallel calls obey the limits too; one refused as busy is an
// isError result the model reads.
func TestLimitsInModelTurns(t *testing.T) {
	calls := func(n int) []fakemodel.Call {
		var cs []fakemodel.Call
		for i := range n {
			cs = append(cs, fakemodel.Call{ID: fmt.Sprint("c", i), Name: "limited", Input: `{"service":"api"}`})
		}
		return cs
	}
	for _, c := range []struct {
		name     string
		cfg      tool.Config
		wantBusy bool
	}{
		{"waits", tool.Config{MaxConcurrent: 1, BusyWait: time.Minute}, false},
		{"busy", tool.Config{MaxConcurrent: 1, BusyWait: 5 * time.Millisecond}, true},
		{"per session", tool.Config{Exclusive: tool.PerSession, BusyWait: time.Minute}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := &gauge{}
			h := limitsHost(t, c.cfg, g, fakemodel.Reply{Calls: calls(6)}, fakemodel.Reply{Text: []string{"done"}})
			ctx := context.Background()
			sess, turn, err := h.Sessions().Create(ctx, host.SessionOptions{Message: "go"})
			if err != nil {
				t.Fatal(err)
			}
			var evs []api.Event
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				evs, _ = h.Sessions().Events(ctx, sess.ID, 0, 0)
				if last := evs[len(evs)-1]; last.TurnID == turn && (last.Kind == api.KindTurnCompleted || last.Kind == api.KindTurnFailed) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the turn did not end")
				}
			}
			busy := 0
			for _, e := range evs {
				if e.Kind == api.KindActionResult && strings.Contains(string(e.Data), "is busy") {
					busy++
				}
			}
			if g.peak.Load() != 1 || (busy > 0) != c.wantBusy {
				t.Errorf("peak %d, %d busy results", g.peak.Load(), busy)
			}
		})
	}
}

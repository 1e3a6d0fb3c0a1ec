// Command approvals measures what parked calls cost: the memory each one
// holds in a running host (beyond the store's rows), and how long a host
// takes to start with that many approvals pending.
//
//	go run ./bench/approvals              # 10,000 parked calls
//	go run ./bench/approvals -n 50000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

type promoteInput struct {
	Service     string `json:"service"`
	Environment string `json:"environment"`
}

func main() {
	n := flag.Int("n", 10000, "parked calls")
	flag.Parse()
	if err := run(*n); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func tools() *tool.Set {
	promote, _ := tool.New("promote", tool.Config{Description: "Promote.", NeedsApproval: tool.Always},
		func(ctx context.Context, call *tool.Call, in promoteInput) (any, error) { return "promoted", nil })
	set, _ := tool.NewSet(promote)
	return set
}

func heap() (uint64, int) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, runtime.NumGoroutine()
}

func run(n int) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "bench-approvals")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dbPath := filepath.Join(dir, "agent.db")
	st, err := sqlite.Open(ctx, dbPath)
	if err != nil {
		return err
	}
	h, err := host.New(tools(), &host.Options{StateRoot: dir, Store: st})
	if err != nil {
		return err
	}
	if err := h.Start(ctx); err != nil {
		return err
	}
	// Warm up one call so that one-time allocations are not counted.
	h.CallTool(ctx, "promote", promoteInput{"warm", "production"}, nil)
	before, gBefore := heap()
	start := time.Now()
	for i := range n {
		_, err := h.CallTool(ctx, "promote", promoteInput{fmt.Sprintf("svc-%d", i), "production"}, nil)
		var pending *host.ApprovalPendingError
		if !errors.As(err, &pending) {
			return fmt.Errorf("call %d did not park: %v", i, err)
		}
	}
	took := time.Since(start)
	after, gAfter := heap()
	fmt.Printf("parked %d calls in %s (%.0f calls/s)\n", n, took.Round(time.Millisecond), float64(n)/took.Seconds())
	fmt.Printf("heap in use: %d KiB before, %d KiB after: %.2f KiB per parked call; goroutines %d -> %d\n",
		before/1024, after/1024, float64(int64(after)-int64(before))/1024/float64(n), gBefore, gAfter)
	h.Close()
	st.Close()
	if fi, err := os.Stat(dbPath); err == nil {
		fmt.Printf("database: %d KiB (%.2f KiB per parked call, WAL not counted)\n", fi.Size()/1024, float64(fi.Size())/1024/float64(n+1))
	}

	// A host starting with them all pending: open the store, recover, list.
	start = time.Now()
	st, err = sqlite.Open(ctx, dbPath)
	if err != nil {
		return err
	}
	h, err = host.New(tools(), &host.Options{StateRoot: dir, Store: st})
	if err != nil {
		return err
	}
	if err := h.Start(ctx); err != nil {
		return err
	}
	ready := time.Since(start)
	page, _, err := h.Approvals().List(ctx, api.ApprovalPending, store.Page{Limit: 100})
	if err != nil {
		return err
	}
	listed := time.Since(start)
	total := 0
	for cursor := ""; ; {
		p, next, err := h.Approvals().List(ctx, api.ApprovalPending, store.Page{Limit: 1000, Cursor: cursor})
		if err != nil {
			return err
		}
		total += len(p)
		if next == "" {
			break
		}
		cursor = next
	}
	fmt.Printf("start with %d pending: store open + recovery in %s; first page of %d listed at %s; all %d listed at %s\n",
		total, ready.Round(time.Microsecond), len(page), listed.Round(time.Microsecond), total, time.Since(start).Round(time.Millisecond))
	h.Close()
	return st.Close()
}

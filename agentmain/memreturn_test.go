package agentmain

import (
	"context"
	"log/slog"
	"runtime"
	"testing"
	"time"
)

// TestIdleMemoryIsReturned: after a spike of 1 GiB is dropped, the idle
// heap the runtime holds is returned within a round, not kept.
func TestIdleMemoryIsReturned(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 1 GiB")
	}
	spike := make([][]byte, 64)
	for i := range spike {
		spike[i] = make([]byte, 16<<20)
		for j := 0; j < len(spike[i]); j += 4096 {
			spike[i][j] = 1 // touch every page
		}
	}
	runtime.KeepAlive(spike)
	spike = nil
	runtime.GC()
	if idle := idleHeap(); idle <= returnOver {
		t.Skipf("the runtime returned the spike by itself (idle %d bytes): nothing to check", idle)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go returnIdleMemory(ctx, slog.New(slog.DiscardHandler))
	deadline := time.Now().Add(4 * returnEvery)
	for idleHeap() > returnOver {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes of idle heap still held %v after the spike", idleHeap(), 4*returnEvery)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

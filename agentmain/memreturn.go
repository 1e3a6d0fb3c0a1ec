package agentmain

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// How serve gives back the memory a spike took. The Go runtime keeps the
// heap memory it freed for reuse and returns it to the system slowly (4
// GiB a tool allocated were still held 30 s after), and a soft memory
// limit near the machine's size does not hurry it.
const (
	// returnEvery is how often the idle heap is looked at.
	returnEvery = 5 * time.Second
	// returnOver is how much free heap, held but unused, is returned at
	// once (debug.FreeOSMemory) rather than left to the runtime.
	returnOver = 256 << 20
)

// idleHeap is the runtime's free heap that it has not returned: held,
// unused.
func idleHeap() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// returnIdleMemory returns the idle heap to the system whenever it is
// over returnOver, looking every returnEvery, until ctx ends.
func returnIdleMemory(ctx context.Context, logger *slog.Logger) {
	t := time.NewTicker(returnEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if idle := idleHeap(); idle > returnOver {
			debug.FreeOSMemory()
			logger.Debug("returned idle heap memory to the system", "idle", formatBytes(int64(idle)), "left", formatBytes(int64(idleHeap())))
		}
	}
}

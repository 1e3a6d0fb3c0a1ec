package tools

import (
	"context"
	"runtime"

	"github.com/agentsdk/agentsdk/tool"
)

// procstats answers the serving process's goroutines and Go memory, for a
// soak test watching for leaks.
var _ = tool.Define(tool.Config{
	Description: "The host process's goroutine count and Go memory statistics.",
}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return map[string]uint64{
		"goroutines": uint64(runtime.NumGoroutine()),
		"heapAlloc":  m.HeapAlloc,
		"heapSys":    m.HeapSys,
		"sys":        m.Sys,
		"numGC":      uint64(m.NumGC),
	}, nil
})

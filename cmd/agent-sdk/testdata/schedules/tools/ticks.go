package tools

import (
	"context"
	"encoding/json"

	"github.com/agentsdk/agentsdk/tool"
)

// TicksInput is ticks' input: which records to list.
type TicksInput struct {
	Prefix string `json:"prefix" jsonschema:"description=tick/ or slow/ (the ticks), manual/ (the runs by hand), dup/ (a tick that ran twice)"`
}

// Tick is a record the schedules write in KV, keyed <schedule>/<tick>:
// which run wrote it, on which host, when it began.
type Tick struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// ticks lists the records the schedules in agent/schedules wrote in KV,
// in key order (for a tick, the tick's order).
var _ = tool.Define(tool.Config{Description: "List the schedules' records in KV under a prefix."}, func(ctx context.Context, call *tool.Call, in TicksInput) (any, error) {
	out := []Tick{}
	cursor := ""
	for {
		page, next, err := call.Host.KV.List(ctx, in.Prefix, &tool.KVListOptions{Limit: 1000, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			out = append(out, Tick{Key: e.Key, Value: e.Value})
		}
		if next == "" {
			return out, nil
		}
		cursor = next
	}
})

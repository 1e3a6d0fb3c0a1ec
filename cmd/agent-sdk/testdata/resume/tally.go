package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// TallyInput is tally's input: how long to sleep after counting, or only
// to read the count.
type TallyInput struct {
	Ms   int  `json:"ms,omitempty"`
	Read bool `json:"read,omitempty"`
}

// tally counts its runs in KV ("tally"), says it started (a file
// tally-started in the state directory), then sleeps; with read it
// answers the count instead.
var _ = tool.Define(tool.Config{
	Description: "Count this run in KV, then sleep.",
}, func(ctx context.Context, call *tool.Call, in TallyInput) (any, error) {
	var n int64
	e, err := call.Host.KV.Get(ctx, "tally")
	switch {
	case errors.Is(err, tool.ErrKeyNotFound):
	case err != nil:
		return nil, err
	default:
		if n, err = strconv.ParseInt(string(e.Value), 10, 64); err != nil {
			return nil, err
		}
	}
	if in.Read {
		return map[string]int64{"runs": n}, nil
	}
	if _, err := call.Host.KV.CompareAndSet(ctx, "tally", e.Version, []byte(strconv.FormatInt(n+1, 10)), nil); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(call.StateRoot, "tally-started"), []byte(call.ID), 0o644); err != nil {
		return nil, err
	}
	select {
	case <-time.After(time.Duration(in.Ms) * time.Millisecond):
		return map[string]any{"slept": in.Ms}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
})

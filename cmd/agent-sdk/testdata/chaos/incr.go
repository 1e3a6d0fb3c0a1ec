package tools

import (
	"context"
	"errors"
	"strconv"

	"github.com/agentsdk/agentsdk/tool"
)

// IncrInput is incr's input: the KV key of a counter, and whether only to
// read it.
type IncrInput struct {
	Key  string `json:"key"`
	Read bool   `json:"read,omitempty"`
}

// incr adds one to the counter at key with KV compare-and-set, reading
// again and retrying on a conflict, and answers the value it wrote (or,
// with read, the value there is: 0 for none).
var _ = tool.Define(tool.Config{
	Description: "Increment a KV counter with compare-and-set.",
}, func(ctx context.Context, call *tool.Call, in IncrInput) (any, error) {
	for retries := 0; ; retries++ {
		var n, version int64
		e, err := call.Host.KV.Get(ctx, in.Key)
		switch {
		case errors.Is(err, tool.ErrKeyNotFound):
		case err != nil:
			return nil, err
		default:
			if n, err = strconv.ParseInt(string(e.Value), 10, 64); err != nil {
				return nil, err
			}
			version = e.Version
		}
		if in.Read {
			return map[string]int64{"value": n, "version": version}, nil
		}
		_, err = call.Host.KV.CompareAndSet(ctx, in.Key, version, []byte(strconv.FormatInt(n+1, 10)), nil)
		if errors.Is(err, tool.ErrVersionConflict) && ctx.Err() == nil {
			continue
		}
		if err != nil {
			return nil, err
		}
		return map[string]int64{"value": n + 1, "retries": int64(retries)}, nil
	}
})

package sampletools

import (
	"context"
	"errors"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// CrashInput is crash's input.
type CrashInput struct {
	How string `json:"how" jsonschema:"enum=panic,enum=error,enum=hang,enum=bad-output"`
}

// crash fails in the ways Tool.Run turns into results.
var _ = tool.Define(tool.Config{Description: "Fail on purpose.", Timeout: 100 * time.Millisecond},
	func(ctx context.Context, call *tool.Call, in CrashInput) (any, error) {
		switch in.How {
		case "panic":
			panic("boom")
		case "hang":
			<-ctx.Done()
			return nil, ctx.Err()
		case "bad-output":
			return func() {}, nil
		}
		return nil, errors.New("it broke")
	})

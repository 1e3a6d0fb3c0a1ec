package tools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

// TickInput is tick's input.
type TickInput struct {
	N int `json:"n"`
}

// tick answers at once: the test calls it hundreds of times in one session
// to make a long trajectory.
var _ = tool.Define(tool.Config{
	Description: "Answer at once with the number given.",
}, func(ctx context.Context, call *tool.Call, in TickInput) (any, error) {
	return map[string]int{"tick": in.N}, nil
})

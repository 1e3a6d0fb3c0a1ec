package badtools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

type input struct {
	Text string `json:"text"`
}

func handle(ctx context.Context, call *tool.Call, in input) (any, error) { return in.Text, nil }

// First is the first tool defined in both.go; it is registered.
var First = tool.Define(tool.Config{Description: "the first tool in the file"}, handle)

// Second is the second tool defined in both.go; it is refused.
var Second = tool.Define(tool.Config{Description: "the second tool in the file"}, handle)

package badtools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

// Input is an input JSON cannot carry: a func in a nested struct.
type Input struct {
	Options struct {
		Callback func(string) `json:"callback"`
	} `json:"options"`
}

// Hook takes an input type that cannot be JSON.
var Hook = tool.Define(tool.Config{Description: "a tool whose input holds a func"},
	func(ctx context.Context, call *tool.Call, in Input) (any, error) { return nil, nil })

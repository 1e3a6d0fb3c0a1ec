package badtools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

// StreamReport is an output JSON cannot carry: a channel, two levels down.
type StreamReport struct {
	ID    string `json:"id"`
	Parts []struct {
		Updates chan string `json:"updates"`
	} `json:"parts"`
}

// Stream returns an output type that cannot be JSON.
var Stream = tool.Define(tool.Config{Description: "a tool whose output holds a channel"},
	func(ctx context.Context, call *tool.Call, in input) (StreamReport, error) { return StreamReport{}, nil })

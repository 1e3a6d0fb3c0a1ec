package tools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

// LookupInput is lookup's input.
type LookupInput struct {
	City  string `json:"city"`
	Units string `json:"units,omitempty"`
}

// lookup answers the weather of a city: always sunny.
var _ = tool.Define(tool.Config{Description: "The weather of a city."}, func(ctx context.Context, call *tool.Call, in LookupInput) (map[string]string, error) {
	return map[string]string{"city": in.City, "sky": "sunny"}, nil
})

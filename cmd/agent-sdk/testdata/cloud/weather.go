package tools

import (
	"context"
	"os"

	"github.com/agentsdk/agentsdk/tool"
)

// WeatherInput is weather's input.
type WeatherInput struct {
	City string `json:"city"`
}

// weather is a server tool: it says where it ran ($CLOUD_WHERE of the
// process) and in which session.
var _ = tool.Define(tool.Config{Description: "The weather in a city."},
	func(ctx context.Context, call *tool.Call, in WeatherInput) (any, error) {
		return map[string]string{"city": in.City, "sky": "clear", "ranOn": os.Getenv("CLOUD_WHERE"), "session": call.Session.ID}, nil
	})

package tools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

// StatusInput is status's input.
type StatusInput struct {
	Service string `json:"service"`
}

// status needs no approval: it runs at once.
var _ = tool.Define(tool.Config{
	Description: "Report a service's health.",
}, func(ctx context.Context, call *tool.Call, in StatusInput) (any, error) {
	return map[string]any{"service": in.Service, "healthy": true}, nil
})

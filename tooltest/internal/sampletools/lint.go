package sampletools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentsdk/agentsdk/tool"
)

// LintInput is lint's input.
type LintInput struct {
	Path string `json:"path"`
}

// lint calls deploy through call.CallTool, which a test runs or stubs.
var _ = tool.Define(tool.Config{Description: "Lint, then deploy to staging."},
	func(ctx context.Context, call *tool.Call, in LintInput) (any, error) {
		out, err := call.CallTool(ctx, "deploy", map[string]string{"env": "staging"}, nil)
		if err != nil {
			return nil, fmt.Errorf("deploying: %w", err)
		}
		if out.IsError {
			return nil, fmt.Errorf("deploying failed: %s", out.Result)
		}
		var r struct{ Deployed bool }
		if err := json.Unmarshal(out.Result, &r); err != nil {
			return nil, err
		}
		return map[string]any{"path": in.Path, "deployed": r.Deployed}, nil
	})

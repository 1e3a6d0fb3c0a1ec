package tools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

// deploy is a server tool that needs approval.
var _ = tool.Define(tool.Config{Description: "Deploy (needs approval).", NeedsApproval: tool.Always},
	func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
		return "deployed", nil
	})

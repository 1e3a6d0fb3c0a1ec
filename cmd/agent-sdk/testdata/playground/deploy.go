package tools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

// DeployInput is deploy's input.
type DeployInput struct {
	Service string `json:"service" jsonschema:"the service to deploy"`
}

// deploy always needs approval: the playground shows the request in the
// trajectory and on its approvals page, with Approve and Deny.
var _ = tool.Define(tool.Config{
	Description:   "Deploy a service to production (needs approval).",
	NeedsApproval: tool.Always,
}, func(ctx context.Context, call *tool.Call, in DeployInput) (any, error) {
	return map[string]string{"deployed": in.Service, "version": "v42"}, nil
})

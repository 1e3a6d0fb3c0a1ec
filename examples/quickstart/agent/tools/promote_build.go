package tools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

// PromoteBuildInput is promote_build's input.
type PromoteBuildInput struct {
	Service     string `json:"service" jsonschema:"the service to promote"`
	BuildID     string `json:"buildId" jsonschema:"the verified build"`
	Environment string `json:"environment" jsonschema:"description=where to promote it,enum=staging,enum=production"`
}

// PromoteBuild promotes a verified build to an environment. Promotions to
// production need a person's approval.
var PromoteBuild = tool.Define(tool.Config{
	Description: "Promote a verified build to an environment.",
	NeedsApproval: tool.When(func(in PromoteBuildInput) bool {
		return in.Environment == "production"
	}),
}, func(ctx context.Context, call *tool.Call, in PromoteBuildInput) (any, error) {
	return map[string]any{"promoted": true, "service": in.Service, "buildId": in.BuildID, "environment": in.Environment}, nil
})

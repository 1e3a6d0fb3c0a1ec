package sampletools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

// DeployInput is deploy's input.
type DeployInput struct {
	Env string `json:"env" jsonschema:"enum=staging,enum=prod"`
}

// DeployResult is deploy's typed output.
type DeployResult struct {
	Env      string `json:"env"`
	Deployed bool   `json:"deployed"`
}

var _ = tool.Define(tool.Config{
	Description:   "Deploy to an environment; prod needs a person's approval.",
	NeedsApproval: tool.When(func(in DeployInput) bool { return in.Env == "prod" }),
}, func(ctx context.Context, call *tool.Call, in DeployInput) (DeployResult, error) {
	if _, err := call.Host.KV.Set(ctx, "deployed/"+in.Env, []byte("yes"), nil); err != nil {
		return DeployResult{}, err
	}
	return DeployResult{Env: in.Env, Deployed: true}, nil
})

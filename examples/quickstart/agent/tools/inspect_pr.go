// Package tools is the quickstart agent's tools, one per file: the reference
// page's examples in Go.
//
//   - inspect_pr: a server tool with a uri input.
//   - echo: an agent tool, a bash script run where the agent runs.
//   - promote_build: a server tool that needs a person's approval when it
//     promotes to production.
//   - run_checks: a server tool with a typed output that reports progress
//     and live output as it runs.
package tools

import (
	"context"

	"github.com/agentsdk/agentsdk"
	"github.com/agentsdk/agentsdk/tool"
)

// InspectPRInput is inspect_pr's input.
type InspectPRInput struct {
	PRURL string `json:"prUrl" jsonschema:"description=the pull request URL,format=uri"`
}

// InspectPR inspects a pull request before approval.
var InspectPR = tool.Define(tool.Config{
	Description: agentsdk.Prompt(`
		Inspect a pull request before approval.
		Prefer this over guessing from the title alone.
	`),
}, inspectPR)

func inspectPR(ctx context.Context, call *tool.Call, in InspectPRInput) (any, error) {
	return map[string]any{"prUrl": in.PRURL, "checks": []string{"unit", "lint"}, "ready": true}, nil
}

package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// RunChecksInput is run_checks' input.
type RunChecksInput struct {
	PRURL string `json:"prUrl" jsonschema:"description=the pull request URL,format=uri"`
}

// RunChecksOutput is run_checks' typed output: its schema is inferred from
// this type and shown with the tool (GET /v1/tools, the OpenAPI document,
// MCP's outputSchema), and every result is checked against it.
type RunChecksOutput struct {
	PRURL  string   `json:"prUrl" jsonschema:"format=uri"`
	Passed []string `json:"passed" jsonschema:"the checks that passed"`
	Failed []string `json:"failed" jsonschema:"the checks that failed"`
}

// RunChecks runs a pull request's checks one by one, reporting progress
// and each check's log line as it goes: people following the session (or
// the call) see them live; the model gets the final result only.
var RunChecks = tool.Define(tool.Config{
	Description: "Run a pull request's CI checks and report which passed.",
	Timeout:     time.Minute,
}, runChecks)

func runChecks(ctx context.Context, call *tool.Call, in RunChecksInput) (RunChecksOutput, error) {
	checks := []string{"unit", "lint", "integration"}
	out := RunChecksOutput{PRURL: in.PRURL, Passed: []string{}, Failed: []string{}}
	for i, check := range checks {
		call.Progress(ctx, float64(i), float64(len(checks)), "running "+check)
		select {
		case <-time.After(300 * time.Millisecond): // the check's work
		case <-ctx.Done():
			return out, ctx.Err()
		}
		call.Output(ctx, fmt.Sprintf("%s: ok\n", check))
		out.Passed = append(out.Passed, check)
	}
	call.Progress(ctx, float64(len(checks)), float64(len(checks)), "done")
	return out, nil
}

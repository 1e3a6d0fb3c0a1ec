package client

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentsdk/agentsdk/api"
)

// Call calls a server tool and decodes its result into Out: the typed
// form of [Client.CallTool], for a tool whose handler returns Out (its
// output schema, shown with the tool, is Out's). A result the tool marks
// as an error is a [*ToolError] carrying the outcome; a refused or parked
// call is the error CallTool returns.
//
//	report, _, err := client.Call[PRReport](ctx, c, "inspect_pr", PRInput{URL: u}, nil)
func Call[Out any](ctx context.Context, c *Client, name string, input any, opts *CallOptions) (Out, *api.Outcome, error) {
	var out Out
	outcome, err := c.CallTool(ctx, name, input, opts)
	if err != nil {
		return out, nil, err
	}
	if outcome.IsError {
		return out, outcome, &ToolError{Outcome: *outcome}
	}
	if err := json.Unmarshal(outcome.Result, &out); err != nil {
		return out, outcome, fmt.Errorf("decoding the result of %s into %T: %w", name, out, err)
	}
	return out, outcome, nil
}

// ToolError is a call whose tool returned an error result.
type ToolError struct {
	Outcome api.Outcome
}

// Error returns the tool's error text.
func (e *ToolError) Error() string {
	var text string
	if json.Unmarshal(e.Outcome.Result, &text) != nil {
		text = string(e.Outcome.Result)
	}
	return fmt.Sprintf("tool %s failed: %s", e.Outcome.ToolName, text)
}

package tooltest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// Outcome is what a direct call of a tool reports. The embedded
// tool.Outcome is the envelope of POST /<slug>/v1/tools/<name> and of
// host.CallTool: ToolName, CallID, IsError, Result (JSON), DurationMs.
type Outcome struct {
	tool.Outcome
	// Err is set when the call did not run. For unknown_tool, agent_tool
	// and invalid_input it is the *api.Error a host returns, with its
	// Code and Message, wrapping the tool package's typed error
	// (*tool.UnknownToolError, *tool.AgentToolError, *tool.InputError)
	// for errors.As. For a call that needs approval it is an
	// *ApprovalPendingError (and Parked is set).
	Err error
	// Violations are invalid input's, each with its path
	// (input.items[2].name) and message, as a direct call's 400 lists
	// them.
	Violations []tool.Violation
	// Parked reports that the tool's approval predicate holds for this
	// input (or failed: approvals fail closed): a host parks the call for
	// a person's decision. Call does not run it; CallApproved does.
	Parked bool
	// ApprovalErr is why the approval predicate failed (it panicked), if
	// it did.
	ApprovalErr error
	// Progress are the updates the handler reported with call.Progress,
	// in order (a host coalesces them; the kit keeps every one).
	Progress []Progress
	// Output is the live output the handler reported with call.Output.
	Output string
}

// Progress is one call.Progress update.
type Progress struct {
	Done, Total float64
	Message     string
}

// Text returns the result as text: a string result's text, or any other
// result's JSON.
func (o *Outcome) Text() string {
	var s string
	if json.Unmarshal(o.Result, &s) == nil {
		return s
	}
	return string(o.Result)
}

// Decode decodes the result's JSON into v, failing the test (with the
// outcome) if the call did not run, failed, or its result does not
// decode; with a nil t it panics instead.
func (o *Outcome) Decode(t testing.TB, v any) {
	if t != nil {
		t.Helper()
	}
	switch {
	case o.Err != nil:
		fatalf(t, "%s: the call did not run: %v", o.ToolName, o.Err)
	case o.IsError:
		fatalf(t, "%s: the call failed: %s", o.ToolName, o.Text())
	}
	if err := json.Unmarshal(o.Result, v); err != nil {
		fatalf(t, "%s: decoding the result %s: %v", o.ToolName, o.Result, err)
	}
}

// String describes the outcome, for a test's failure message.
func (o *Outcome) String() string {
	switch {
	case o.Err != nil:
		return fmt.Sprintf("%s: not run: %v", o.ToolName, o.Err)
	case o.IsError:
		return fmt.Sprintf("%s: isError: %s", o.ToolName, o.Result)
	}
	return fmt.Sprintf("%s: %s", o.ToolName, o.Result)
}

// ApprovalPendingError is an Outcome's Err for a call a host would park
// for a person's approval: the kit does not run it (see Kit.CallApproved).
type ApprovalPendingError struct {
	CallID string
	Tool   string
}

func (e *ApprovalPendingError) Error() string {
	return fmt.Sprintf("call %s of %s would park for approval: a person approves it (agent-sdk approve %s) before it runs; run it as approved with Kit.CallApproved", e.CallID, e.Tool, e.CallID)
}

// validate finds a server tool and validates input, as host.CallTool
// does: the refusals are the tool package's typed errors.
func (k *Kit) validate(name string, input any) (*tool.Tool, *tool.Input, error) {
	t, ok := k.tools.Lookup(name)
	if !ok {
		return nil, nil, &tool.UnknownToolError{Name: name, Available: k.tools.Names()}
	}
	if t.Execution() != tool.Server {
		return nil, nil, &tool.AgentToolError{Name: name}
	}
	raw, err := inputJSON(input)
	if err != nil {
		return nil, nil, &tool.InputError{Tool: name, Violations: []tool.Violation{{Path: "input", Message: err.Error()}}}
	}
	in, err := t.Validate(raw)
	if err != nil {
		return nil, nil, err
	}
	return t, in, nil
}

// refusal is a call's refusal as a direct call reports it: the *api.Error
// and, for invalid input, its violations.
func refusal(err error) ([]tool.Violation, error) {
	var invalid *tool.InputError
	var violations []tool.Violation
	if errors.As(err, &invalid) {
		violations = invalid.Violations
	}
	return violations, api.AsError(err)
}

// inputJSON returns a call's input as JSON text: text as it is (a string
// is JSON text here, not a value to encode), anything else encoded.
func inputJSON(input any) (json.RawMessage, error) {
	switch v := input.(type) {
	case string:
		return json.RawMessage(v), nil
	case json.RawMessage:
		return v, nil
	case *json.RawMessage:
		if v != nil {
			return *v, nil
		}
		return nil, nil
	case []byte:
		return v, nil
	case nil:
		return nil, nil
	}
	b, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("cannot be encoded as JSON: %w", err)
	}
	return b, nil
}

package harnessturn

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/tool"
)

// permission answers a harness's session/request_permission: a call of
// the agent's own MCP server is allowed (its host gates it as any call of
// the tool); otherwise the harness's permissions policy allows or denies
// it by its kind and title, or it is parked as a call of harness_<kind>
// (Sink.Ask) — on the stream as action.approval_requested with the exact
// command or file and diff — and the harness waits, its process alive,
// until a person decides. An approval is answered allow once (allow
// always where the policy's always rules name the request) and the
// harness runs the call; a denial or an expiry is answered reject; a
// request withdrawn (the turn ended first) is answered cancelled.
func (r *stream) permission(ctx context.Context, q acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	r.mu.Lock()
	c := r.call(q.ToolCall.ToolCallId)
	kind := ""
	if q.ToolCall.Kind != nil {
		kind = string(*q.ToolCall.Kind)
	}
	c.describe(kind, q.ToolCall.Title, q.ToolCall.RawInput, q.ToolCall.Locations, q.ToolCall.Content, nil)
	if c.ours {
		r.mu.Unlock()
		return harness.AllowOnce(q)
	}
	verdict := r.spec.Permissions.Decide(c.kind, c.title)
	always := r.spec.Permissions.Remembers(c.kind, c.title)
	r.announce(c)
	switch verdict {
	case harness.Allow:
		resp, ok := harness.Grant(q, always)
		if !ok {
			r.result(c, tool.ErrorOutput(noGrant))
		}
		r.mu.Unlock()
		return resp
	case harness.Deny:
		r.result(c, tool.ErrorOutput(fmt.Sprintf("denied by the agent's permissions policy (deny: %s)", c.kind)))
		r.mu.Unlock()
		return harness.Reject(q)
	}
	req := Request{CallID: c.id, ModelCallID: string(c.toolID), Tool: ToolName(c.kind), Input: approvalInput(c, q)}
	r.mu.Unlock()
	d, err := r.sink.Ask(ctx, req)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err != nil:
		r.result(c, tool.ErrorOutput("parking the call for approval failed: "+err.Error()))
		return harness.Reject(q)
	case d.Verdict == Approved:
		resp, ok := harness.Grant(q, always)
		c.record = d.Record
		c.started = time.Now()
		if !ok {
			r.result(c, tool.ErrorOutput(noGrant))
		}
		return resp
	case d.Verdict == Withdrawn:
		c.done = true // the sink recorded its end
		return harness.Cancelled()
	default:
		c.done = true // denied or expired: the decision recorded its result
		return harness.Reject(q)
	}
}

// noGrant is the result of an allowed request the harness offered only
// "allow always" for, which the policy's always rules do not grant.
const noGrant = "not run: the harness offered only to allow this always, and the agent's permissions grant that only to what their always rules name"

// approvalInput is what an approver sees of a harness call: its title
// (the shell command, the file), kind, files and the harness's raw input,
// a diff where it shows one, and the options the harness offers.
func approvalInput(c *harnessCall, q acp.RequestPermissionRequest) json.RawMessage {
	v := map[string]any{"title": c.title, "kind": c.kind, "input": json.RawMessage(c.inputOrEmpty())}
	if len(c.locations) > 0 {
		v["locations"] = c.locations
	}
	for _, ct := range c.content {
		if ct.Diff != nil {
			v["diff"] = diffJSON(ct.Diff)
		}
	}
	var opts []string
	for _, o := range q.Options {
		opts = append(opts, string(o.Kind))
	}
	v["options"] = strings.Join(opts, ",")
	b, err := marshalPlain(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

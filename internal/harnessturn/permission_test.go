package harnessturn

import (
	"context"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/tool"
)

// approvingSink approves every parked request, keeping the results its
// decisions record.
type approvingSink struct {
	recordingSink
	asked    int
	recorded []tool.Output
}

func (s *approvingSink) Ask(context.Context, Request) (Decision, error) {
	s.asked++
	return Decision{Verdict: Approved, Record: func(out tool.Output, _ time.Duration) error {
		s.recorded = append(s.recorded, out)
		return nil
	}}, nil
}

// A request the policy allows, or a person approves, is answered "allow
// once", or "allow always" where the policy's always rules name it; a
// harness that offers only "always" for what they do not name is
// rejected, and the call's result says why.
func TestPermissionAnswers(t *testing.T) {
	once := acp.PermissionOption{OptionId: "once", Kind: acp.PermissionOptionKindAllowOnce, Name: "Allow"}
	always := acp.PermissionOption{OptionId: "always", Kind: acp.PermissionOptionKindAllowAlways, Name: "Always allow"}
	reject := acp.PermissionOption{OptionId: "no", Kind: acp.PermissionOptionKindRejectOnce, Name: "Reject"}
	perms := harness.Permissions{Allow: []string{"execute:go test*"}, Always: []string{"execute:go test*", "edit:*.md"}}
	for _, c := range []struct {
		name, kind, title string
		options           []acp.PermissionOption
		want              string
		asked             bool
		refused           bool
	}{
		{"allowed and always", "execute", "go test ./...", []acp.PermissionOption{once, always, reject}, "always", false, false},
		{"approved, once", "execute", "go build", []acp.PermissionOption{once, always, reject}, "once", true, false},
		{"approved and always", "edit", "NOTES.md", []acp.PermissionOption{once, always, reject}, "always", true, false},
		{"approved, only always offered", "execute", "make", []acp.PermissionOption{always, reject}, "no", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			sink := &approvingSink{}
			s := &stream{sink: sink, spec: harness.Spec{Name: "h", Permissions: perms}, ctx: context.Background(), calls: map[acp.ToolCallId]*harnessCall{}, live: true}
			kind := acp.ToolKind(c.kind)
			resp := s.permission(context.Background(), acp.RequestPermissionRequest{Options: c.options,
				ToolCall: acp.ToolCallUpdate{ToolCallId: "call_1", Kind: &kind, Title: &c.title}})
			if resp.Outcome.Selected == nil || string(resp.Outcome.Selected.OptionId) != c.want {
				t.Fatalf("answered %+v, want %s", resp.Outcome, c.want)
			}
			if (sink.asked == 1) != c.asked {
				t.Errorf("asked a person %d times", sink.asked)
			}
			refusal := len(sink.recorded) == 1 && sink.recorded[0].IsError && strings.Contains(string(sink.recorded[0].Result), "allow this always")
			if refusal != c.refused {
				t.Errorf("recorded %+v", sink.recorded)
			}
			for _, p := range sink.evs {
				if r, ok := p.(api.ActionResult); ok && !c.refused {
					t.Errorf("a result before the call ran: %+v", r)
				}
			}
		})
	}
}

// Codex asks, under its own id, to run a tool of the agent's MCP server
// (whose host gates the call itself): allowed once, no person asked,
// nothing recorded of the harness's.
func TestPermissionForTheAgentsOwnServer(t *testing.T) {
	sink := &approvingSink{}
	s := &stream{sink: sink, spec: harness.Spec{Name: "codex"}, ctx: context.Background(), calls: map[acp.ToolCallId]*harnessCall{}, live: true}
	kind, title := acp.ToolKindOther, "Approve MCP tool call"
	once := acp.PermissionOption{OptionId: "once", Kind: acp.PermissionOptionKindAllowOnce, Name: "Allow"}
	resp := s.permission(context.Background(), acp.RequestPermissionRequest{Options: []acp.PermissionOption{once},
		ToolCall: acp.ToolCallUpdate{ToolCallId: "mcp_tool_call_approval_call_1", Kind: &kind, Title: &title,
			RawInput: map[string]any{"server_name": ServerName, "request": map[string]any{"message": `Allow the agent MCP server to run tool "deploy"?`}}}})
	if resp.Outcome.Selected == nil || resp.Outcome.Selected.OptionId != "once" || sink.asked != 0 || len(sink.evs) != 0 {
		t.Errorf("answered %+v, asked %d, events %v", resp.Outcome, sink.asked, sink.evs)
	}
}

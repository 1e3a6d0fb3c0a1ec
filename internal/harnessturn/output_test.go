package harnessturn

import (
	"context"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentsdk/agentsdk/api"
)

// What a running harness call's content shows as it runs (a command's
// output, streamed) is action.output, each piece once; its description
// before it ran is not; past maxOutput the last record is truncated.
func TestRunningCallOutput(t *testing.T) {
	sink := &recordingSink{}
	s := &stream{sink: sink, ctx: context.Background(), calls: map[acp.ToolCallId]*harnessCall{}, live: true}
	ctx := context.Background()
	text := func(t string) []acp.ToolCallContent {
		return []acp.ToolCallContent{{Content: &acp.ToolCallContentContent{Content: acp.TextBlock(t)}}}
	}
	running, completed := acp.ToolCallStatusInProgress, acp.ToolCallStatusCompleted
	s.update(ctx, acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: "sh_1", Kind: acp.ToolKindExecute, Title: "go test ./...",
		Status: acp.ToolCallStatusPending, RawInput: map[string]any{"command": "go test ./..."}, Content: text("Run the tests")}})
	s.update(ctx, acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "sh_1", Status: &running}})
	s.update(ctx, acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "sh_1", Status: &running, Content: text("ok  a\n")}})
	s.update(ctx, acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "sh_1", Status: &running, Content: text("ok  a\nok  b\n")}})
	s.update(ctx, acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "sh_1", Status: &running, Content: text("ok  a\nok  b\n")}})
	s.update(ctx, acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "sh_1", Status: &completed, Content: text("ok  a\nok  b\nPASS\n")}})
	// Another call whose output goes over the cap: the content replaced
	// twice (shorter, then longer), then grown.
	big := strings.Repeat("x", maxOutput+10)
	s.update(ctx, acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: "sh_2", Kind: acp.ToolKindExecute, Title: "yes", Status: running}})
	half := strings.Repeat("y", maxOutput/2+10)
	s.update(ctx, acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "sh_2", Status: &running, Content: text(half)}})
	s.update(ctx, acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "sh_2", Status: &running, Content: text("zz")}})
	s.update(ctx, acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "sh_2", Status: &running, Content: text(big)}})
	s.update(ctx, acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "sh_2", Status: &running, Content: text(big + "more")}})
	if _, err := s.finish(nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	var capped []api.ActionOutput
	first := s.calls["sh_1"].id
	for _, p := range sink.evs {
		switch v := p.(type) {
		case api.ActionsRequested:
			got = append(got, "requested "+v.Actions[0].Title)
		case api.ActionOutput:
			if v.Tool != "harness_execute" || v.CallID == "" {
				t.Errorf("output %+v", v)
			}
			if v.CallID != first {
				capped = append(capped, v)
				continue
			}
			got = append(got, "output "+v.Text)
		case api.ActionResult:
			got = append(got, "result "+string(v.Result))
		}
	}
	want := []string{"requested go test ./...", "output ok  a\n", "output ok  b\n", `result "ok  a\nok  b\nPASS\n"`, "requested yes", `result "the harness ended its turn without saying how this call ended"`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events\n%q\nwant\n%q", got, want)
	}
	n := 0
	for _, o := range capped {
		n += len(o.Text)
	}
	if len(capped) != 3 || n != maxOutput || capped[1].Text != "zz" || capped[0].Truncated || !capped[2].Truncated {
		t.Errorf("%d records of the long output, %d bytes in all (want 3, %d, the last truncated)", len(capped), n, maxOutput)
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
)

// A call an eval's stub answered says so on its line; a call that ran
// does not.
func TestViewStubbed(t *testing.T) {
	s := newStream()
	s.turn = "turn_s"
	s.add(
		api.TurnStarted{Kind: api.TurnModel},
		api.ActionsRequested{Actions: []api.Action{{CallID: "tool_send_1", Tool: "send_email", Input: raw(`{}`)}, {CallID: "tool_lookup_1", Tool: "lookup", Input: raw(`{}`)}}},
		api.ActionResult{CallID: "tool_send_1", Tool: "send_email", Result: raw(`"queued"`), Stubbed: true},
		api.ActionResult{CallID: "tool_lookup_1", Tool: "lookup", Result: raw(`"sunny"`)},
		api.TurnCompleted{},
	)
	got := render(&view{}, s.events)
	if !strings.Contains(got, "✓ send_email 0ms (stubbed) queued") || strings.Count(got, "(stubbed)") != 1 {
		t.Errorf("the view:\n%s", got)
	}
}

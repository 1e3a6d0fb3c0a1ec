package evalexport_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/evalexport"
)

// stream builds a session's events, turn by turn.
type stream struct {
	evs  []api.Event
	turn string
}

func (s *stream) add(ps ...api.Payload) {
	for _, p := range ps {
		e := api.NewEvent(p)
		e.Seq, e.TurnID = int64(len(s.evs)+1), s.turn
		s.evs = append(s.evs, e)
	}
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// A session of two model turns with a direct call and a compaction
// between them: the conversation is its user messages, the replay the
// turns' answers (not the summary's), the checks its model's calls (not
// the direct one) with the results small enough, and no noError when a
// call failed.
func TestCase(t *testing.T) {
	var s stream
	s.turn = "t1"
	s.add(api.TurnStarted{Kind: api.TurnModel}, api.Message{Role: api.RoleUser, Text: "Mail Ana."},
		api.Message{Role: api.RoleAssistant, Text: "Sending."}, api.ModelUsage{Model: "m"},
		api.ActionsRequested{Actions: []api.Action{
			{CallID: "tool_send_1", Tool: "send", Input: raw(`{"to":"ana"}`)},
			{CallID: "tool_big_1", Tool: "big", Input: raw(`{}`)},
		}},
		api.ActionResult{CallID: "tool_send_1", Tool: "send", IsError: true, Result: raw(`"mailbox full"`)},
		api.ActionResult{CallID: "tool_big_1", Tool: "big", Result: raw(`"` + strings.Repeat("x", evalexport.MaxResult) + `"`)},
		api.Message{Role: api.RoleAssistant, Text: "It failed."}, api.ModelUsage{Model: "m"},
		api.TurnCompleted{})
	s.turn = "t2"
	s.add(api.TurnStarted{Kind: api.TurnCall, Tool: "lookup"}, api.ActionResult{CallID: "tool_lookup_1", Tool: "lookup", Result: raw(`{}`), Direct: true}, api.TurnCompleted{})
	s.turn = "t3"
	s.add(api.TurnStarted{Kind: api.TurnCompact}, api.ModelUsage{Model: "m", Purpose: "compaction"}, api.TurnCompleted{})
	s.turn = "t4"
	s.add(api.TurnStarted{Kind: api.TurnModel}, api.Message{Role: api.RoleUser, Text: "Again."},
		api.ModelUsage{Model: "m"}, api.ActionsRequested{Actions: []api.Action{{CallID: "tool_send_2", Tool: "send", Input: raw(`{"to":"ana"}`)}}},
		api.ActionResult{CallID: "tool_send_2", Tool: "send", Result: raw(`{"id":"m_1"}`)},
		api.Message{Role: api.RoleAssistant, Text: "Sent."}, api.ModelUsage{Model: "m"}, api.TurnCompleted{})
	c, err := evalexport.Case("sess_x", s.evs)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(c)
	want := `{"name":"sess_x","conversation":["Mail Ana.","Again."],"checks":[` +
		`{"called":"send","args":{"to":"ana"}},{"called":"big"},{"called":"send","args":{"to":"ana"},"result":{"id":"m_1"}}],` +
		`"replay":[{"text":"Sending.","calls":[{"tool":"send","input":{"to":"ana"}},{"tool":"big"}]},{"text":"It failed."},` +
		`{"calls":[{"tool":"send","input":{"to":"ana"}}]},{"text":"Sent."}]}`
	if string(got) != want {
		t.Errorf("case:\n%s\nwant:\n%s", got, want)
	}
}

// What cannot be replayed is refused, saying why.
func TestCaseRefused(t *testing.T) {
	var running stream
	running.turn = "t1"
	running.add(api.TurnStarted{Kind: api.TurnModel}, api.Message{Role: api.RoleUser, Text: "Hi."})
	var empty stream
	empty.turn = "t1"
	empty.add(api.TurnStarted{Kind: api.TurnCall, Tool: "x"}, api.TurnCompleted{})
	var badInput stream
	badInput.turn = "t1"
	badInput.add(api.TurnStarted{Kind: api.TurnModel}, api.Message{Role: api.RoleUser, Text: "Hi."}, api.ModelUsage{},
		api.ActionsRequested{Actions: []api.Action{{CallID: "tool_x_1", Tool: "x", InputText: "{nope"}}}, api.TurnCompleted{})
	for name, tc := range map[string]struct {
		evs  []api.Event
		want string
	}{
		"running":   {running.evs, "the session is running a turn; export it once the turn has ended"},
		"empty":     {empty.evs, "the session has no user message to replay"},
		"bad input": {badInput.evs, `event 4: the input of tool_x_1 is not JSON ("{nope"); a replay cannot send it`},
	} {
		if _, err := evalexport.Case("s", tc.evs); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %s", name, err, tc.want)
		}
	}
}

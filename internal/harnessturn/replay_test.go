package harnessturn

import (
	"context"
	"slices"
	"sync"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentsdk/agentsdk/api"
)

// recordingSink keeps what a stream emits.
type recordingSink struct {
	mu  sync.Mutex
	evs []api.Payload
}

func (s *recordingSink) Emit(_ context.Context, p ...api.Payload) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, p...)
	return nil
}

func (s *recordingSink) Ask(context.Context, Request) (Decision, error) {
	return Decision{Verdict: Rejected}, nil
}

// A harness that replays its history after session/load answered (Gemini
// CLI does) reports text and the calls of earlier turns again: none of it
// is the turn's — not before the prompt is sent, and not a call of an
// earlier turn after it.
func TestReplayedHistoryIsNotTheTurns(t *testing.T) {
	events := []api.Event{
		{Kind: api.KindMessage, TurnID: "turn_1", Data: []byte(`{"role":"user","text":"make a file"}`)},
		{Kind: api.KindActionsRequested, TurnID: "turn_1", Data: []byte(`{"actions":[{"callId":"tool_execute_a","modelCallId":"shell_1","tool":"harness_execute","input":{}}]}`)},
		{Kind: api.KindActionsRequested, TurnID: "turn_1", Data: []byte(`{"actions":[{"callId":"tool_word_count_b","modelCallId":"","tool":"word_count","input":{}}]}`)},
		{Kind: api.KindMessage, TurnID: "turn_2", Data: []byte(`{"role":"user","text":"another"}`)},
	}
	c := ReadContext("turn_2", slices.Values(events))
	if !c.EarlierCalls["shell_1"] || len(c.EarlierCalls) != 1 || c.Prompt != "another" {
		t.Fatalf("context %+v", c)
	}
	sink := &recordingSink{}
	s := &stream{sink: sink, ctx: context.Background(), calls: map[acp.ToolCallId]*harnessCall{}, earlier: c.EarlierCalls}
	text := func(t string) acp.SessionUpdate {
		return acp.SessionUpdate{AgentMessageChunk: &acp.SessionUpdateAgentMessageChunk{Content: acp.TextBlock(t)}}
	}
	completed := acp.ToolCallStatusCompleted
	old := acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: "shell_1", Kind: acp.ToolKindExecute, Title: "Shell", Status: completed}}
	s.update(context.Background(), text("made it"))
	s.update(context.Background(), old)
	s.prompted()
	s.update(context.Background(), old) // replayed after the prompt went out
	s.update(context.Background(), acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: "shell_2", Kind: acp.ToolKindExecute, Title: "ls", Status: completed}})
	s.update(context.Background(), text("done"))
	if _, err := s.finish(nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range sink.evs {
		switch v := p.(type) {
		case api.ActionsRequested:
			got = append(got, "requested "+v.Actions[0].ModelCallID)
		case api.ActionResult:
			got = append(got, "result "+v.ModelCallID)
		case api.Message:
			got = append(got, "message "+v.Text)
		}
	}
	if want := []string{"requested shell_2", "result shell_2", "message done"}; !slices.Equal(got, want) {
		t.Errorf("the turn's events %q, want %q", got, want)
	}
}

package turnloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/turnloop"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
)

// stream numbers payloads as a store would, from seq 1.
type stream struct{ evs []api.Event }

func (s *stream) add(ps ...api.Payload) {
	for _, p := range ps {
		e := api.NewEvent(p)
		e.Seq = int64(len(s.evs) + 1)
		s.evs = append(s.evs, e)
	}
}

// turn adds a turn of one tool round trip, its call numbered callID as
// servers that number calls per answer do, with a result of size bytes.
func (s *stream) turn(n int, callID string, size int) {
	s.add(api.TurnStarted{Kind: api.TurnModel}, api.Message{Role: api.RoleUser, Text: fmt.Sprintf("question %d", n)},
		api.ActionsRequested{Actions: []api.Action{{CallID: fmt.Sprintf("tool_f_%d", n), ModelCallID: callID, Tool: "f", Input: json.RawMessage(`{}`)}}})
	result, _ := json.Marshal(strings.Repeat("r", size))
	s.add(api.ActionResult{CallID: fmt.Sprintf("tool_f_%d", n), ModelCallID: callID, Tool: "f", Result: result},
		api.Message{Role: api.RoleAssistant, Text: fmt.Sprintf("answer %d", n)}, api.TurnCompleted{})
}

func historyOf(evs []api.Event) *turnloop.History {
	h := turnloop.NewHistory()
	h.ResultReader = "read_result"
	for _, e := range evs {
		h.Add(e)
	}
	return h
}

// TestHistoryPairsPerAnswer: servers that number calls per answer (call_0
// in every turn) get each result paired with its own answer's call.
func TestHistoryPairsPerAnswer(t *testing.T) {
	t.Parallel()
	var s stream
	for n := 1; n <= 3; n++ {
		s.turn(n, "call_0", 10)
	}
	// A fourth turn's call_0 is parked: no result yet.
	s.add(api.TurnStarted{Kind: api.TurnModel}, api.Message{Role: api.RoleUser, Text: "q4"},
		api.ActionsRequested{Actions: []api.Action{{CallID: "tool_f_4", ModelCallID: "call_0", Tool: "f"}}})
	msgs, _ := historyOf(s.evs).Messages()
	if len(msgs) != 15 {
		t.Fatalf("%d messages: %+v", len(msgs), msgs)
	}
	for i := 0; i < 3; i++ {
		res := msgs[4*i+2]
		if len(res.ToolResults) != 1 || res.ToolResults[0].IsError || res.ToolResults[0].Content != strings.Repeat("r", 10) {
			t.Errorf("turn %d's result: %+v", i+1, res)
		}
	}
	if last := msgs[14]; len(last.ToolResults) != 1 || !last.ToolResults[0].IsError {
		t.Errorf("the parked call's stand-in result: %+v", last)
	}
}

// TestCompactedHistoryReadsTheSame: a history read from a compaction's
// throughSeq on is the history read from the first event, and the
// summary comes first.
func TestCompactedHistoryReadsTheSame(t *testing.T) {
	t.Parallel()
	var s stream
	s.add(api.SessionCreated{}, api.SessionTagged{Key: "repo", Value: "x"})
	for n := 1; n <= 4; n++ {
		s.turn(n, fmt.Sprintf("c%d", n), 10)
	}
	through := int64(2 + 6*2) // before turn 3's turn.started
	if s.evs[through].Kind != api.KindTurnStarted {
		t.Fatalf("event %d is %s", through+1, s.evs[through].Kind)
	}
	s.add(api.ContextCompacted{Summary: "turns 1 and 2", ThroughSeq: through, Tags: map[string]string{"repo": "x"}, Trigger: "auto"})
	s.turn(5, "c5", 10)
	full, fullTags := historyOf(s.evs).Messages()
	part, partTags := historyOf(s.evs[through:]).Messages()
	if !reflect.DeepEqual(full, part) || !reflect.DeepEqual(fullTags, partTags) {
		t.Fatalf("read from event 1:\n%+v %v\nread from %d:\n%+v %v", full, fullTags, through+1, part, partTags)
	}
	if len(full) != 12 || !strings.Contains(full[0].Text, "turns 1 and 2") || !strings.HasSuffix(full[0].Text, "question 3") {
		t.Errorf("the compacted conversation: %+v", full)
	}
}

// TestClearedResults: context.cleared replaces results up to its seq
// larger than its size by a stand-in naming read_result and the call;
// later results stay whole.
func TestClearedResults(t *testing.T) {
	t.Parallel()
	var s stream
	for n := 1; n <= 3; n++ {
		s.turn(n, fmt.Sprintf("c%d", n), 100*n)
	}
	s.add(api.ContextCleared{MinBytes: 150, ThroughSeq: 12, Results: 1})
	msgs, _ := historyOf(s.evs).Messages()
	if got := msgs[2].ToolResults[0].Content; got != strings.Repeat("r", 100) {
		t.Errorf("a small result was cleared: %q", got)
	}
	want := `[The 200-byte result of f was cleared from the context to make room. Call read_result with {"call": "tool_f_2"} to read it again.]`
	if got := msgs[6].ToolResults[0].Content; got != want {
		t.Errorf("the cleared result: %q", got)
	}
	if got := msgs[10].ToolResults[0].Content; got != strings.Repeat("r", 300) {
		t.Errorf("a result after the clearing: %q", got[:20])
	}
}

// TestCountCalibrates: before any call a token is four bytes; then the
// last call's reported tokens plus what is new at its bytes per token.
func TestCountCalibrates(t *testing.T) {
	t.Parallel()
	h := turnloop.NewHistory()
	if got := h.Count(4000); got != 1000 {
		t.Errorf("uncalibrated: %d", got)
	}
	h.Add(api.NewEvent(api.ModelUsage{Reported: true, InputTokens: 100, CacheReadTokens: 900, RequestBytes: 3000}))
	if got := h.Count(6000); got != 2000 {
		t.Errorf("calibrated, longer: %d", got)
	}
	if got := h.Count(1500); got != 500 {
		t.Errorf("calibrated, shorter: %d", got)
	}
	h.Add(api.NewEvent(api.ModelUsage{Reported: true, InputTokens: 1, RequestBytes: 10, Purpose: "compaction"}))
	if got := h.Count(6000); got != 2000 {
		t.Errorf("a summary's call calibrated the count: %d", got)
	}
}

// TestRunCompacts: past the threshold the loop clears the old results,
// then summarises the older turns with a model call, and the model gets
// the summary; the stream records both, the summary's usage as
// compaction.
func TestRunCompacts(t *testing.T) {
	t.Parallel()
	var s stream
	for n := 1; n <= 4; n++ {
		s.turn(n, "call_0", 4000)
	}
	s.add(api.TurnStarted{Kind: api.TurnModel}, api.Message{Role: api.RoleUser, Text: "question 5"})
	fake := fakemodel.New(fakemodel.Reply{Text: []string{"SUMMARY: four questions asked"}}, fakemodel.Reply{Text: []string{"answer 5"}})
	t.Cleanup(fake.Close)
	p, err := anthropic.New(model.Config{Name: "claude-test", APIKey: "k", BaseURL: fake.AnthropicURL()})
	if err != nil {
		t.Fatal(err)
	}
	// 4 results of 4,000 bytes: about 4,000 tokens, over 0.8 of 3,000
	// even with answer room of 200.
	cfg := turnloop.Config{Model: p, MaxSteps: 2, MaxTokens: 200, ModelTimeout: 10 * time.Second,
		Context: turnloop.ContextConfig{Window: 6000, Threshold: 0.5, KeepTurns: 1, ClearBytes: 1 << 20}}
	env := &recorder{}
	if _, err := turnloop.Run(context.Background(), cfg, env, historyOf(s.evs)); err != nil {
		t.Fatal(err)
	}
	var compacted *api.ContextCompacted
	var kinds []string
	for _, pl := range env.payloads {
		kinds = append(kinds, string(pl.EventKind()))
		switch p := pl.(type) {
		case api.ContextCompacted:
			compacted = &p
		case api.ModelUsage:
			if compacted == nil && p.Purpose != "compaction" {
				t.Errorf("the summary's usage: %+v", p)
			}
		}
	}
	if compacted == nil || compacted.Summary != "SUMMARY: four questions asked" || compacted.ThroughSeq != 24 || compacted.Trigger != "auto" ||
		compacted.TokensAfter >= compacted.TokensBefore {
		t.Fatalf("recorded %v, compaction %+v", kinds, compacted)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[0]), "question 4") || strings.Contains(string(reqs[1]), "question 4") ||
		!strings.Contains(string(reqs[1]), "SUMMARY: four questions asked") || !strings.Contains(string(reqs[1]), "question 5") {
		t.Errorf("the requests: %d", len(reqs))
	}
}

// TestRunRefusesWhatCannotFit: a request that would not fit the window
// even compacted fails with context_length_exceeded before any call,
// naming its largest part.
func TestRunRefusesWhatCannotFit(t *testing.T) {
	t.Parallel()
	var s stream
	s.add(api.TurnStarted{Kind: api.TurnModel}, api.Message{Role: api.RoleUser, Text: strings.Repeat("x", 40_000)})
	fake := fakemodel.New(fakemodel.Reply{Text: []string{"never"}})
	t.Cleanup(fake.Close)
	p, err := anthropic.New(model.Config{Name: "claude-test", APIKey: "k", BaseURL: fake.AnthropicURL()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := turnloop.Config{Model: p, MaxSteps: 2, ModelTimeout: 10 * time.Second, Context: turnloop.ContextConfig{Window: 8000}}
	_, err = turnloop.Run(context.Background(), cfg, &recorder{}, historyOf(s.evs))
	e, ok := errors.AsType[*model.Error](err)
	if !ok || e.Reason != model.ReasonContextLength || !strings.Contains(e.Message, "message 1 (user text), 40000 bytes") {
		t.Errorf("Run: %v", err)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("the model was called %d times", n)
	}
}

// TestCompactTranscriptStopsAtTheCut: the summariser reads everything
// before the kept turns and nothing after, also when a call earlier on
// has no result (which Messages may answer with a message of its own).
func TestCompactTranscriptStopsAtTheCut(t *testing.T) {
	t.Parallel()
	var s stream
	s.add(api.TurnStarted{Kind: api.TurnModel}, api.Message{Role: api.RoleUser, Text: "question 1"},
		api.ActionsRequested{Actions: []api.Action{{CallID: "tool_f_1", ModelCallID: "c1", Tool: "f"}}}, api.TurnFailed{Reason: "x"})
	// A turn that begins with the model's answer (no user message: the
	// call above gets a message of its own from Messages).
	s.add(api.TurnStarted{Kind: api.TurnModel}, api.Message{Role: api.RoleAssistant, Text: "answer 2"}, api.TurnCompleted{})
	s.turn(3, "c3", 10)
	fake := fakemodel.New(fakemodel.Reply{Text: []string{"SUMMARY"}})
	t.Cleanup(fake.Close)
	p, err := anthropic.New(model.Config{Name: "claude-test", APIKey: "k", BaseURL: fake.AnthropicURL()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := turnloop.Config{Model: p, ModelTimeout: 10 * time.Second, Context: turnloop.ContextConfig{Window: 100_000, KeepTurns: 1}}
	if rec, _, err := turnloop.Compact(context.Background(), cfg, &recorder{}, historyOf(s.evs), "manual"); err != nil || rec == nil {
		t.Fatalf("Compact: %+v, %v", rec, err)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0]), "answer 2") || strings.Contains(string(reqs[0]), "question 3") {
		t.Errorf("the summariser read: %s", reqs)
	}
}

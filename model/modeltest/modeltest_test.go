package modeltest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/modeltest"
)

// stream collects p's answer to req: its chunks, as lines, and its error.
func stream(t *testing.T, p model.Provider, req *model.Request) ([]string, error) {
	t.Helper()
	var out []string
	for c, err := range p.Stream(context.Background(), req) {
		if err != nil {
			return out, err
		}
		out = append(out, chunkLine(c))
	}
	return out, nil
}

// chunkLine says what a chunk is.
func chunkLine(c model.Chunk) string {
	switch {
	case c.Text != "":
		return fmt.Sprintf("text %q", c.Text)
	case c.ReasoningText != "":
		return fmt.Sprintf("reasoning %q", c.ReasoningText)
	case c.Reasoning != nil:
		return fmt.Sprintf("block %q %s", c.Reasoning.Text, c.Reasoning.Signature)
	case c.ToolCall != nil:
		return fmt.Sprintf("call %s %s %s", c.ToolCall.ID, c.ToolCall.Name, c.ToolCall.Input)
	case c.End != nil:
		u := c.End.Usage
		return fmt.Sprintf("end %s %s in=%d out=%d", c.End.Model, c.End.StopReason, u.InputTokens, u.OutputTokens)
	}
	return "empty"
}

// user is a request of one user message.
func user(text string) *model.Request {
	return &model.Request{System: "Be brief.", Messages: []model.Message{{Role: model.User, Text: text}}}
}

// An answer streams as a provider's does: reasoning deltas then the
// block, text in deltas, each call whole with an ID, and an End with the
// usage, the model and the stop reason.
func TestAnswerStreams(t *testing.T) {
	tests := []struct {
		name   string
		answer modeltest.Answer
		want   []string
	}{
		{"text", modeltest.Text("Clear skies  in Paris."), []string{`text "Clear "`, `text "skies  "`, `text "in "`, `text "Paris."`, "end modeltest end_turn in=19 out=6"}},
		{"calls", modeltest.Text("Checking.").Call("weather", map[string]string{"city": "Paris"}).Call("clock", nil), []string{
			`text "Checking."`, `call call_1 weather {"city":"Paris"}`, "call call_2 clock {}", "end modeltest tool_use in=19 out=10"}},
		{"invalid input as is", modeltest.Call("weather", `{"city": `), []string{`call call_1 weather {"city": `, "end modeltest tool_use in=19 out=4"}},
		{"reasoning", modeltest.Answer{Reasoning: []model.Reasoning{{Text: "The user wants weather.", Signature: "sig"}}, Text: "Sunny.", Model: "claude-x", StopReason: "max_tokens",
			Usage: &model.Usage{InputTokens: 7, OutputTokens: 3}}, []string{
			`reasoning "The "`, `reasoning "user "`, `reasoning "wants "`, `reasoning "weather."`, `block "The user wants weather." sig`, `text "Sunny."`, "end claude-x max_tokens in=7 out=3"}},
		{"empty", modeltest.Answer{}, []string{"end modeltest end_turn in=19 out=0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := stream(t, modeltest.New(tt.answer), user("Weather?"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("streamed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// A failing answer streams what comes before its error, then fails with
// it, as a stream cut short does.
func TestAnswerFails(t *testing.T) {
	limited := &model.Error{Reason: model.ReasonRateLimited, Status: 429, RetryAfter: time.Second}
	got, err := stream(t, modeltest.New(modeltest.Answer{Text: "Half an", Err: limited}), user("Weather?"))
	if !errors.Is(err, limited) || strings.Join(got, " ") != `text "Half "`+` text "an"` {
		t.Errorf("streamed %q, %v; want the text, then the rate limit", got, err)
	}
	if _, err := stream(t, modeltest.New(modeltest.Fail(limited)), user("Weather?")); !errors.Is(err, limited) {
		t.Errorf("Fail: %v, want the rate limit at once", err)
	}
}

// Rules answer before the sequence, the first matching first, each its
// answers in turn and its last one again; what they match on.
func TestRules(t *testing.T) {
	m := modeltest.New(modeltest.Text("first"), modeltest.Text("second")).
		On(modeltest.LastUser("weather"), modeltest.Call("weather", `{"city":"Paris"}`), modeltest.Text("again")).
		On(modeltest.AfterTool("weather"), modeltest.Text("Sunny.")).
		On(modeltest.System("pirate"), modeltest.Text("Arr."))
	afterWeather := &model.Request{Messages: []model.Message{
		{Role: model.User, Text: "the weather?"},
		{Role: model.Assistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "weather", Input: json.RawMessage(`{}`)}}},
		{Role: model.User, ToolResults: []model.ToolResult{{CallID: "c1", Content: "sun"}}},
	}}
	tests := []struct {
		name string
		req  *model.Request
		want string
	}{
		{"the sequence", user("hello"), `text "first"`},
		{"a rule", user("the weather?"), `call call_1 weather {"city":"Paris"}`},
		{"the rule's next answer", user("the weather again"), `text "again"`},
		{"the rule's last answer again", user("weather, once more"), `text "again"`},
		// The last user message with text is still about the weather:
		// the rule before AfterTool's matches first.
		{"after a tool, the first matching rule", afterWeather, `text "again"`},
		{"the system prompt", &model.Request{System: "Talk like a pirate."}, `text "Arr."`},
		{"the sequence goes on", user("bye"), `text "second"`},
	}
	for _, tt := range tests {
		got, err := stream(t, m, tt.req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got[0] != tt.want {
			t.Errorf("%s: streamed %q, want %s first", tt.name, got, tt.want)
		}
	}
	if got := len(m.Requests()); got != len(tests) {
		t.Errorf("Requests() has %d, want %d", got, len(tests))
	}
	if m.Left() != 0 {
		t.Errorf("Left() = %d, want 0", m.Left())
	}
}

// A rule on a tool's result answers the model's step after that tool.
func TestAfterTool(t *testing.T) {
	m := modeltest.New().On(modeltest.AfterTool("weather"), modeltest.Text("Sunny."))
	req := &model.Request{Messages: []model.Message{
		{Role: model.User, Text: "Weather?"},
		{Role: model.Assistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "weather"}}},
		{Role: model.User, ToolResults: []model.ToolResult{{CallID: "c1", Content: "sun"}}},
	}}
	if got, err := stream(t, m, req); err != nil || got[0] != `text "Sunny."` {
		t.Errorf("streamed %q, %v", got, err)
	}
	if _, err := stream(t, m, user("Weather?")); err == nil {
		t.Error("a request before the tool ran matched AfterTool")
	}
}

// A request beyond the script fails the call with what was asked, and
// tells the reporter.
func TestBeyondScript(t *testing.T) {
	var rep reports
	m := modeltest.New(modeltest.Text("one")).ReportTo(&rep)
	if _, err := stream(t, m, user("first")); err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Messages: []model.Message{
		{Role: model.User, Text: "Weather?"},
		{Role: model.Assistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "weather"}}},
		{Role: model.User, ToolResults: []model.ToolResult{{CallID: "c1", Content: "no such city", IsError: true}}},
	}}
	_, err := stream(t, m, req)
	want := `modeltest: request 2 is beyond the script (1 answer, 0 rules, none matching): 3 messages, 0 tools; the last message carries the results of weather (error "no such city")`
	e, ok := errors.AsType[*model.Error](err)
	if !ok || e.Reason != model.ReasonInvalidRequest || e.Message != want {
		t.Errorf("err = %v, want an invalid_request saying %q", err, want)
	}
	if got := rep.all(); len(got) != 1 || got[0] != want {
		t.Errorf("reported %q, want %q", got, want)
	}
	if got := m.Requests(); len(got) != 2 || got[1].Messages[2].ToolResults[0].Content != "no such city" {
		t.Errorf("Requests() = %+v", got)
	}
}

// Requests are copies: a caller changing its request later does not
// change what the model was sent.
func TestRequestsAreCopies(t *testing.T) {
	m := modeltest.New(modeltest.Text("ok"))
	req := user("original")
	if _, err := stream(t, m, req); err != nil {
		t.Fatal(err)
	}
	req.Messages[0].Text = "changed"
	if got := m.Requests()[0].Messages[0].Text; got != "original" {
		t.Errorf("the request kept is %q, want original", got)
	}
}

// A held answer waits for its channel, or for the call's context.
func TestHold(t *testing.T) {
	hold := make(chan struct{})
	m := modeltest.New(modeltest.Answer{Text: "late", Hold: hold}, modeltest.Answer{Text: "never", Hold: hold})
	done := make(chan []string)
	go func() {
		got, _ := stream(t, m, user("a"))
		done <- got
	}()
	close(hold)
	if got := <-done; len(got) != 2 || got[0] != `text "late"` {
		t.Errorf("streamed %q after the hold", got)
	}
	m = modeltest.New(modeltest.Answer{Text: "never", Hold: make(chan struct{})})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range m.Stream(ctx, user("a")) {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("a held answer whose call was cancelled: %v", err)
		}
	}
}

// The host's turn loop treats a scripted failure as it does a
// provider's: a rate limit is retried, and the turn completes.
func TestHostRetriesScriptedRateLimit(t *testing.T) {
	m := modeltest.New(
		modeltest.Fail(&model.Error{Reason: model.ReasonRateLimited, Status: 429, RetryAfter: time.Millisecond}),
		modeltest.Text("Sunny."),
	).ReportTo(t)
	lines := converse(t, startHost(t, m, system), "Weather?")
	if last := lines[len(lines)-1]; last != string(api.KindTurnCompleted) || !contains(lines, "message {assistant Sunny.}") {
		t.Errorf("the turn:\n%s", strings.Join(lines, "\n"))
	}
	if n := len(m.Requests()); n != 2 {
		t.Errorf("the model was asked %d times, want 2 (a retry)", n)
	}
}

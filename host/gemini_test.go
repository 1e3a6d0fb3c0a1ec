package host_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// A model turn on Gemini, through the real genai client and the fake's
// Gemini wire: parallel calls, a failing tool, then the answer; the
// results reach the model as function responses named after their calls,
// and the next turn carries the history.
func TestGeminiModelTurn(t *testing.T) {
	b := setupSessions(t, "gemini", host.Options{},
		fakemodel.Reply{Text: []string{"Let me ", "check."}, Calls: []fakemodel.Call{
			{Name: "weather", Input: `{"city":"Oslo"}`},
			{Name: "weather", Input: `{"city":"Lima"}`},
		}},
		fakemodel.Reply{Calls: []fakemodel.Call{{Name: "broken", Input: `{}`}}},
		fakemodel.Reply{Text: []string{"Clear in ", "both."}},
	)
	ctx := context.Background()
	sess, turnID, err := b.host.Sessions().Create(ctx, host.SessionOptions{Message: "Weather in Oslo and Lima?", Principal: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	evs := b.waitTurn(t, sess.ID, turnID)
	want := "session.created turn.started message message.delta message.delta reasoning message model.usage actions.requested action.result action.result " +
		"reasoning model.usage actions.requested action.result message.delta message.delta message model.usage turn.completed"
	if got := kinds(evs); got != want {
		t.Fatalf("events:\n%s\nwant:\n%s", got, want)
	}
	var results []api.ActionResult
	for _, e := range find(evs, api.KindActionResult) {
		r, err := api.Decode[api.ActionResult](e)
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
	}
	// Gemini gave the calls no ids: each got one of its own.
	if results[0].ModelCallID == "" || results[0].ModelCallID == results[1].ModelCallID || results[1].ModelCallID == results[2].ModelCallID {
		t.Errorf("model call ids: %q, %q, %q", results[0].ModelCallID, results[1].ModelCallID, results[2].ModelCallID)
	}
	if results[0].IsError || results[1].IsError || !results[2].IsError {
		t.Errorf("results: %+v", results)
	}
	reqs := b.fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	var last struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text             string                 `json:"text"`
				FunctionCall     *struct{ Name string } `json:"functionCall"`
				FunctionResponse *struct {
					Name     string         `json:"name"`
					Response map[string]any `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(reqs[2], &last); err != nil {
		t.Fatal(err)
	}
	var shape []string
	for _, c := range last.Contents {
		var parts []string
		for _, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				parts = append(parts, "call "+p.FunctionCall.Name)
			case p.FunctionResponse != nil:
				out, _ := json.Marshal(p.FunctionResponse.Response)
				parts = append(parts, "response "+p.FunctionResponse.Name+" "+string(out))
			default:
				parts = append(parts, "text "+p.Text)
			}
		}
		shape = append(shape, c.Role+": "+strings.Join(parts, ", "))
	}
	wantShape := []string{
		"user: text Weather in Oslo and Lima?",
		"model: text Let me check., call weather, call weather",
		`user: response weather {"output":"{\"city\":\"Oslo\",\"sky\":\"clear\"}"}, response weather {"output":"{\"city\":\"Lima\",\"sky\":\"clear\"}"}`,
		"model: call broken",
		`user: response broken {"error":"the weather service is down"}`,
	}
	if strings.Join(shape, "\n") != strings.Join(wantShape, "\n") {
		t.Errorf("the last request's contents:\n%s\nwant:\n%s", strings.Join(shape, "\n"), strings.Join(wantShape, "\n"))
	}

	// A second message continues the conversation.
	b.fake.Push(fakemodel.Reply{Text: []string{"You're welcome."}})
	turn2, err := b.host.Sessions().Send(ctx, sess.ID, "Thanks!")
	if err != nil {
		t.Fatal(err)
	}
	if evs := b.waitTurn(t, sess.ID, turn2); !strings.HasSuffix(kinds(evs), "turn.started message message.delta message model.usage turn.completed") {
		t.Errorf("second turn: %s", kinds(evs))
	}
	if !b.fake.Contains(3, "Clear in both.") || !b.fake.Contains(3, "Thanks!") {
		t.Errorf("the second turn's request lacks the history:\n%s", b.fake.Requests()[3])
	}
}

// A Gemini failure fails the turn, classified, and the session goes on.
func TestGeminiTurnFailure(t *testing.T) {
	b := setupSessions(t, "gemini", host.Options{},
		fakemodel.Reply{Status: 503, GeminiError: &fakemodel.GeminiError{Message: "The model is overloaded. Please try again later."}})
	b.fake.SetDefault(fakemodel.Reply{Status: 503, GeminiError: &fakemodel.GeminiError{Message: "The model is overloaded. Please try again later."}})
	sess, turnID, err := b.host.Sessions().Create(context.Background(), host.SessionOptions{Message: "go"})
	if err != nil {
		t.Fatal(err)
	}
	failed := find(b.waitTurn(t, sess.ID, turnID), api.KindTurnFailed)
	if len(failed) != 1 {
		t.Fatalf("turn.failed events: %v", failed)
	}
	f, err := api.Decode[api.TurnFailed](failed[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.Reason, "503") || !strings.Contains(f.Reason, "The model is overloaded.") {
		t.Errorf("turn.failed: %+v", f)
	}
	b.fake.SetDefault(fakemodel.Reply{Text: []string{"ok"}})
	turn2, err := b.host.Sessions().Send(context.Background(), sess.ID, "again")
	if err != nil {
		t.Fatal(err)
	}
	if evs := b.waitTurn(t, sess.ID, turn2); len(find(evs, api.KindTurnCompleted)) != 1 {
		t.Errorf("the next turn: %s", kinds(evs))
	}
}

// Gemini 3 refuses a conversation whose function calls lost their thought
// signatures: a turn of two tool rounds, and a second turn after it, send
// them back from the stored history.
func TestGeminiSignaturesAcrossSteps(t *testing.T) {
	b := setupSessions(t, "gemini-3", host.Options{},
		fakemodel.Reply{Calls: []fakemodel.Call{{Name: "weather", Input: `{"city":"Oslo"}`}}},
		fakemodel.Reply{Calls: []fakemodel.Call{{Name: "weather", Input: `{"city":"Lima"}`}}},
		fakemodel.Reply{Text: []string{"Clear in both."}},
		fakemodel.Reply{Text: []string{"You're welcome."}},
	)
	ctx := context.Background()
	sess, turnID, err := b.host.Sessions().Create(ctx, host.SessionOptions{Message: "Weather in Oslo and Lima?"})
	if err != nil {
		t.Fatal(err)
	}
	evs := b.waitTurn(t, sess.ID, turnID)
	if evs[len(evs)-1].Kind != api.KindTurnCompleted {
		t.Fatalf("the turn: %s %s", kinds(evs), evs[len(evs)-1].Data)
	}
	turn2, err := b.host.Sessions().Send(ctx, sess.ID, "Thanks!")
	if err != nil {
		t.Fatal(err)
	}
	if evs := b.waitTurn(t, sess.ID, turn2); evs[len(evs)-1].Kind != api.KindTurnCompleted {
		t.Fatalf("the second turn: %s", evs[len(evs)-1].Data)
	}
}

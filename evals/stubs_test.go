package evals_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/tool"
)

type emailInput struct {
	To      string `json:"to"`
	Subject string `json:"subject,omitempty"`
}

// sideEffectTools are lookup (as evalTools') and two tools with side
// effects whose handlers fail the test if they ever run: send_email and
// charge (gated: every call needs approval).
func sideEffectTools(t *testing.T, ran *atomic.Int32) *tool.Set {
	lookup, _ := tool.New("lookup", tool.Config{Description: "The weather of a city."}, func(ctx context.Context, call *tool.Call, in lookupInput) (map[string]string, error) {
		return map[string]string{"city": in.City, "sky": "sunny"}, nil
	})
	send, _ := tool.New("send_email", tool.Config{Description: "Sends an email."}, func(ctx context.Context, call *tool.Call, in emailInput) (string, error) {
		ran.Add(1)
		t.Errorf("send_email's handler ran with %+v: a stubbed tool must never run", in)
		return "sent", nil
	})
	charge, _ := tool.New("charge", tool.Config{Description: "Charges a card.", NeedsApproval: tool.Always}, func(ctx context.Context, call *tool.Call, in struct {
		Cents int `json:"cents"`
	}) (string, error) {
		ran.Add(1)
		t.Errorf("charge's handler ran: a stubbed tool must never run")
		return "charged", nil
	})
	set, err := tool.NewSet(lookup, send, charge)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// Stubs answer a case's calls of the tools they stub, and those tools'
// handlers never run: a stub matched on the input, a sequence (the last
// answer repeats), an error, the eval's stubs under the case's, a gated
// tool's stubbed call not parked; a call no stub matches is a tool error
// the model reads and fails the case with a check naming the input and
// the stubs. The model reads the stubs' results; each stubbed call's
// action.result says stubbed, the real tool's does not.
func TestEvalStubs(t *testing.T) {
	var ran atomic.Int32
	m := newEvalModel(t)
	mail := m.Route("[mail]",
		fakemodel.Reply{Calls: []fakemodel.Call{
			{ID: "c1", Name: "send_email", Input: `{"to":"bob@example.com","subject":"hi"}`},
			{ID: "c2", Name: "lookup", Input: `{"city":"Paris"}`},
		}},
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "c3", Name: "send_email", Input: `{"to":"bob@example.com"}`}}},
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "c4", Name: "send_email", Input: `{"to":"bob@example.com"}`}}},
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "c5", Name: "send_email", Input: `{"to":"eve@example.com"}`}}},
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "c6", Name: "charge", Input: `{"cents":500}`}}},
		fakemodel.Reply{Text: []string{"Done."}})
	m.Route("[missed]",
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "m1", Name: "send_email", Input: `{"to":"carol@example.com"}`}}},
		fakemodel.Reply{Text: []string{"Could not send."}})
	h := evalHost(t, openStore(t, "sqlite"), sideEffectTools(t, &ran), m, host.Options{})
	ctx := context.Background()
	req := api.EvalRunRequest{Name: "stubs",
		// Every case's: charge, and a send_email the mail case replaces.
		Stubs: map[string][]api.EvalStub{
			"charge":     {{Result: map[string]any{"id": "ch_1"}}},
			"send_email": {{Match: map[string]any{"to": "carol@example.com"}, Result: "queued"}},
		},
		Cases: []api.EvalCase{
			{Name: "mail", Message: "[mail] Mail Bob.", Checks: []api.EvalCheck{
				{Called: "send_email", Args: map[string]any{"to": "bob@example.com"}, Result: map[string]any{"id": "m_1"}},
				{Called: "charge", Result: map[string]any{"id": "ch_1"}},
				{Contains: "Done"},
			}, Stubs: map[string][]api.EvalStub{"send_email": {
				{Match: map[string]any{"to": "bob@example.com"}, Sequence: []api.EvalStubAnswer{{Result: map[string]any{"id": "m_1"}}, {Error: "mailbox full"}}},
				{Match: map[string]any{"to": "eve@example.com"}, Error: "eve is blocked"},
			}}},
			{Name: "missed", Message: "[missed] Mail Carol.", Checks: []api.EvalCheck{{Contains: "send"}}, Stubs: map[string][]api.EvalStub{"send_email": {
				{Match: map[string]any{"to": "bob@example.com"}, Result: "sent"},
			}}},
		}}
	started, err := h.RunEval(ctx, req, "tester")
	if err != nil {
		t.Fatal(err)
	}
	if s := started.Cases[1].Case.Stubs; len(s["charge"]) != 1 || len(s["send_email"]) != 1 || s["send_email"][0].Result != "sent" {
		t.Errorf("the missed case's stubs (its own send_email, the eval's charge): %+v", s)
	}
	b := waitEval(t, h, started.ID)
	mailCase, missed := b.Cases[0], b.Cases[1]
	if !mailCase.Pass || mailCase.Status != api.EvalCompleted || len(mailCase.Checks) != 3 {
		t.Errorf("mail: %+v\n%s", mailCase, checkDetails(mailCase))
	}
	if ran.Load() != 0 {
		t.Fatalf("a stubbed tool's handler ran %d times", ran.Load())
	}

	evs, _ := h.Sessions().Events(ctx, mailCase.SessionID, 0, 1000)
	if n := len(find(evs, api.KindApprovalRequested)); n != 0 {
		t.Errorf("a stubbed gated call was parked: %s", kinds(evs))
	}
	results := map[string]api.ActionResult{}
	for _, e := range find(evs, api.KindActionResult) {
		r, _ := api.Decode[api.ActionResult](e)
		results[r.ModelCallID] = r
	}
	for id, want := range map[string]struct {
		result  string
		isError bool
		stubbed bool
	}{
		"c1": {`{"id":"m_1"}`, false, true},
		"c2": {`{"city":"Paris","sky":"sunny"}`, false, false}, // lookup has no stubs: it ran
		"c3": {`"mailbox full"`, true, true},
		"c4": {`"mailbox full"`, true, true}, // past the sequence's end: its last answer again
		"c5": {`"eve is blocked"`, true, true},
		"c6": {`{"id":"ch_1"}`, false, true},
	} {
		r, ok := results[id]
		if !ok || string(r.Result) != want.result || r.IsError != want.isError || r.Stubbed != want.stubbed {
			t.Errorf("%s's result: %+v (%s), want %+v", id, r, r.Result, want)
		}
	}
	// The wire says stubbed on the stubbed calls only.
	for _, e := range find(evs, api.KindActionResult) {
		r, _ := api.Decode[api.ActionResult](e)
		if got := strings.Contains(string(e.Data), `"stubbed":true`); got != r.Stubbed {
			t.Errorf("%s: stubbed %v in %s", r.ModelCallID, r.Stubbed, e.Data)
		}
	}
	// The model read the stubs' answers.
	reqs := mail.Requests()
	if len(reqs) != 6 || !strings.Contains(string(reqs[1]), `m_1`) || !strings.Contains(string(reqs[2]), "mailbox full") ||
		!strings.Contains(string(reqs[4]), "eve is blocked") || !strings.Contains(string(reqs[5]), "ch_1") {
		t.Errorf("the model's requests (%d) do not hold the stubs' answers", len(reqs))
	}

	// The call no stub matched: an error the model read, and a failed check.
	if missed.Pass || missed.Status != api.EvalCompleted || len(missed.Checks) != 2 || !missed.Checks[0].Pass {
		t.Fatalf("missed: %+v\n%s", missed, checkDetails(missed))
	}
	stubCheck := missed.Checks[1]
	if stubCheck.Pass || stubCheck.Check.Stub != "send_email" || missed.Score != 0.5 ||
		!strings.Contains(stubCheck.Detail, `no stub matches its input {"to":"carol@example.com"}`) ||
		!strings.Contains(stubCheck.Detail, `the stubs match {"to":"bob@example.com"}`) {
		t.Errorf("the stub check: %+v", stubCheck)
	}
	evs, _ = h.Sessions().Events(ctx, missed.SessionID, 0, 1000)
	r, _ := api.Decode[api.ActionResult](find(evs, api.KindActionResult)[0])
	if !r.IsError || !r.Stubbed || !strings.Contains(string(r.Result), "no stub of send_email matches this call's input") {
		t.Errorf("the unmatched call's result: %+v %s", r, r.Result)
	}
}

// Stubs are checked when the eval is run: an unknown tool, a stub with no
// answer or two, a sequence's answer with neither, a value JSON cannot
// encode — invalid_eval, naming the stub.
func TestEvalStubsInvalid(t *testing.T) {
	var ran atomic.Int32
	m := newEvalModel(t)
	h := evalHost(t, openStore(t, "sqlite"), sideEffectTools(t, &ran), m, host.Options{})
	_, err := h.RunEval(context.Background(), api.EvalRunRequest{
		Stubs: map[string][]api.EvalStub{"nope": {{Result: 1}}},
		Cases: []api.EvalCase{{Message: "x", Stubs: map[string][]api.EvalStub{
			"send_email": {
				{},
				{Result: "a", Error: "b"},
				{Sequence: []api.EvalStubAnswer{{Result: "a"}, {}}},
				{Match: map[string]any{"to": make(chan int)}, Result: "a"},
				{Result: func() {}},
			},
			"charge": {},
		}, Replay: []api.EvalAnswer{{}, {Calls: []api.EvalToolCall{{}}}}, Checks: []api.EvalCheck{{Result: "x"}}}},
	}, "tester")
	var e *api.Error
	if !errors.As(err, &e) || e.Code != api.CodeInvalidEval || e.Status() != http.StatusBadRequest {
		t.Fatalf("%v (%T), want invalid_eval", err, err)
	}
	var got []string
	for _, v := range e.Violations {
		got = append(got, v.Path+": "+v.Message)
	}
	want := []string{
		`stubs.nope: the agent has no tool "nope" to stub`,
		"cases[0].checks[0]: result without called: a result narrows a called check",
		"cases[0].stubs.charge: has no stubs; give at least one (result, error or sequence), or remove it",
		"cases[0].stubs.send_email[0]: gives no answer; give one of result, error, sequence",
		"cases[0].stubs.send_email[1]: gives more than one of result, error, sequence; give one",
		"cases[0].stubs.send_email[2].sequence[1]: give one of result, error",
		"cases[0].stubs.send_email[3].match: cannot be encoded as JSON: json: unsupported type: chan int",
		"cases[0].stubs.send_email[4].result: cannot be encoded as JSON: json: unsupported type: func()",
		"cases[0].replay[1].calls[0].tool: is missing",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// What a client sends decodes as what the eval file says.
	var req api.EvalRunRequest
	if err := json.Unmarshal([]byte(`{"name":"n","stubs":{"charge":[{"match":{"cents":5},"sequence":[{"result":{"id":"a"}},{"error":"no"}]}]},"cases":[{"message":"x"}]}`), &req); err != nil ||
		len(req.Stubs["charge"]) != 1 || len(req.Stubs["charge"][0].Sequence) != 2 || req.Stubs["charge"][0].Sequence[1].Error != "no" {
		t.Errorf("decoded: %+v %v", req, err)
	}
}

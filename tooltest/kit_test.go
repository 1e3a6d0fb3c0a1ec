package tooltest_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
	"github.com/agentsdk/agentsdk/tooltest"
	_ "github.com/agentsdk/agentsdk/tooltest/internal/sampletools"
)

func TestCallRunsTheTool(t *testing.T) {
	out := tooltest.Call(t, "greet", `{"name":"Ada"}`)
	if out.Err != nil || out.IsError {
		t.Fatalf("greet: %v", out)
	}
	if out.Text() != "Hello, Ada!" || string(out.Result) != `"Hello, Ada!"` {
		t.Errorf("result %s, text %q", out.Result, out.Text())
	}
	if out.ToolName != "greet" || !strings.HasPrefix(out.CallID, "tool_greet_") {
		t.Errorf("tool %q, call id %q", out.ToolName, out.CallID)
	}
	if out.Parked {
		t.Error("an ungated call reported parked")
	}
	want := []tooltest.Progress{{Done: 1, Total: 2, Message: "thinking of a greeting"}, {Done: 2, Total: 2}}
	if len(out.Progress) != 2 || out.Progress[0] != want[0] || out.Progress[1] != want[1] {
		t.Errorf("progress %+v, want %+v", out.Progress, want)
	}
	if out.Output != "greeting Ada\n" {
		t.Errorf("output %q", out.Output)
	}
}

func TestInputForms(t *testing.T) {
	kit := tooltest.New(t, nil)
	for _, input := range []any{
		`{"name":"Ada"}`,
		[]byte(`{"name":"Ada"}`),
		json.RawMessage(`{"name":"Ada"}`),
		map[string]any{"name": "Ada"},
		struct {
			Name string `json:"name"`
		}{"Ada"},
	} {
		if out := kit.Call("greet", input); out.Text() != "Hello, Ada!" {
			t.Errorf("input %#v: %v", input, out)
		}
	}
}

func TestInvalidInputIsRefusedAsADirectCall(t *testing.T) {
	out := tooltest.Call(t, "greet", `{"name":"","times":9,"nmae":"x"}`)
	var ae *api.Error
	if !errors.As(out.Err, &ae) || ae.Code != api.CodeInvalidInput {
		t.Fatalf("err %v, want an *api.Error invalid_input", out.Err)
	}
	var ie *tool.InputError
	if !errors.As(out.Err, &ie) || ie.Tool != "greet" {
		t.Fatalf("err %v does not wrap a *tool.InputError", out.Err)
	}
	got := map[string]string{}
	for _, v := range out.Violations {
		got[v.Path] = v.Message
	}
	want := map[string]string{
		"input.name":  "must be at least 1 characters long",
		"input.times": "must be <= 3",
		"input.nmae":  "unknown property, did you mean name?",
	}
	for path, msg := range want {
		if got[path] != msg {
			t.Errorf("violation at %s: %q, want %q (all: %v)", path, got[path], msg, out.Violations)
		}
	}
	if len(ae.Violations) != len(out.Violations) {
		t.Errorf("the error has %d violations, the outcome %d", len(ae.Violations), len(out.Violations))
	}
	if out.CallID != "" || out.Result != nil {
		t.Errorf("a refused call has a call id %q or result %s", out.CallID, out.Result)
	}
	if out := tooltest.Call(t, "greet", `{"name":`); out.Err == nil || !strings.Contains(out.Err.Error(), "is not valid JSON") {
		t.Errorf("truncated JSON: %v", out.Err)
	}
}

func TestUnknownAndAgentTools(t *testing.T) {
	out := tooltest.Call(t, "gret", `{}`)
	var ae *api.Error
	if !errors.As(out.Err, &ae) || ae.Code != api.CodeUnknownTool || !strings.Contains(ae.Message, `unknown tool "gret" (available: crash, deploy, greet, lint, notify)`) {
		t.Fatalf("unknown tool: %v", out.Err)
	}
	script, err := tool.NewScript("check", tool.Config{Description: "A script."}, "#!/bin/sh\necho ok\n")
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(script)
	if err != nil {
		t.Fatal(err)
	}
	out = tooltest.New(t, &tooltest.Options{Tools: set}).Call("check", `{}`)
	if !errors.As(out.Err, &ae) || ae.Code != api.CodeAgentTool {
		t.Fatalf("agent tool: %v", out.Err)
	}
}

func TestApprovalParksAndCallApprovedRuns(t *testing.T) {
	kit := tooltest.New(t, nil)
	out := kit.Call("deploy", `{"env":"prod"}`)
	var pending *tooltest.ApprovalPendingError
	if !out.Parked || !errors.As(out.Err, &pending) || pending.CallID != out.CallID || out.Result != nil {
		t.Fatalf("deploy prod: parked %v, err %v, result %s", out.Parked, out.Err, out.Result)
	}
	if !strings.Contains(out.Err.Error(), "would park for approval") {
		t.Errorf("err %q", out.Err)
	}
	if keys := kit.KV.Keys(); len(keys) != 0 {
		t.Fatalf("a parked call ran: KV has %v", keys)
	}
	out = kit.CallApproved("deploy", `{"env":"prod"}`)
	if !out.Parked || out.Err != nil || out.IsError {
		t.Fatalf("deploy prod approved: %v (parked %v)", out, out.Parked)
	}
	var r struct {
		Env      string
		Deployed bool
	}
	out.Decode(t, &r)
	if r.Env != "prod" || !r.Deployed {
		t.Errorf("result %s", out.Result)
	}
	if e, err := kit.KV.Get(t.Context(), "deployed/prod"); err != nil || string(e.Value) != "yes" {
		t.Errorf("KV after the approved call: %v %v", e, err)
	}
	if out := kit.Call("deploy", `{"env":"staging"}`); out.Parked || out.Err != nil || out.IsError {
		t.Errorf("deploy staging: %v (parked %v)", out, out.Parked)
	}
}

func TestApprovalPredicateThatPanicsFailsClosed(t *testing.T) {
	gated, err := tool.New("gated", tool.Config{
		Description:   "Gated by a broken predicate.",
		NeedsApproval: tool.When(func(in struct{ N int }) bool { return 1/in.N > 0 }),
	}, func(ctx context.Context, call *tool.Call, in struct{ N int }) (any, error) { return "ran", nil })
	if err != nil {
		t.Fatal(err)
	}
	set, _ := tool.NewSet(gated)
	out := tooltest.New(t, &tooltest.Options{Tools: set}).Call("gated", `{"N":0}`)
	if !out.Parked || out.ApprovalErr == nil || !strings.Contains(out.ApprovalErr.Error(), "panicked") {
		t.Errorf("parked %v, approval error %v", out.Parked, out.ApprovalErr)
	}
}

func TestHandlerFailuresAreResults(t *testing.T) {
	kit := tooltest.New(t, nil)
	for how, want := range map[string]string{
		"error":      "it broke",
		"panic":      "the tool panicked",
		"hang":       "timed out after 100ms",
		"bad-output": "cannot be encoded as JSON",
	} {
		out := kit.Call("crash", map[string]string{"how": how})
		if out.Err != nil || !out.IsError || !strings.Contains(out.Text(), want) {
			t.Errorf("crash %s: %v; want an isError result saying %q", how, out, want)
		}
	}
}

func TestTypedOutputIsChecked(t *testing.T) {
	out := tooltest.Call(t, "deploy", `{"env":"staging"}`)
	if out.IsError || string(out.Result) != `{"env":"staging","deployed":true}` {
		t.Errorf("deploy: %v", out)
	}
}

func TestServicesOutsideASession(t *testing.T) {
	kit := tooltest.New(t, nil)
	out := kit.Call("notify", `{"pr":"42"}`)
	var r map[string]any
	out.Decode(t, &r)
	for _, key := range []string{"artifact", "reminder", "tag"} {
		if s, _ := r[key].(string); !strings.Contains(s, "not in a session") {
			t.Errorf("%s outside a session: %q, want it to say the call is not in a session", key, s)
		}
	}
	if _, err := os.Stat(r["workspace"].(string)); !os.IsNotExist(err) {
		t.Errorf("the scratch workspace %s is still there: %v", r["workspace"], err)
	}
	if got := kit.KV.Keys(); len(got) != 1 || got[0] != "seen/42" {
		t.Errorf("KV keys %v", got)
	}
	if b, err := kit.Files.Content("notes/42.txt"); err != nil || string(b) != "PR 42" {
		t.Errorf("file: %q %v", b, err)
	}
	if info, err := kit.Files.Stat(t.Context(), "notes/42.txt"); err != nil || info.ContentType != "text/plain" || info.Size != 5 {
		t.Errorf("file info %+v %v", info, err)
	}
	sent := kit.Sent()
	if len(sent) != 1 || sent[0].Channel != "review" || sent[0].Text != "Review PR 42" || sent[0].Options.Key != "pr-42" || sent[0].SessionID == "" || sent[0].TurnID == "" {
		t.Fatalf("sent %+v", sent)
	}
	if r["session"] != sent[0].SessionID {
		t.Errorf("GetSession answered %v, Send %s", r["session"], sent[0].SessionID)
	}
	if n := kit.Otel.Counter("notify.sent"); n != 1 {
		t.Errorf("counter %d", n)
	}
	// The same key on the channel is the same session; the KV entry is
	// the kit's, across calls.
	out = kit.Call("notify", `{"pr":"42"}`)
	out.Decode(t, &r)
	if sent := kit.Sent(); len(sent) != 2 || sent[1].SessionID != sent[0].SessionID {
		t.Errorf("a second Send with the same key: %+v", sent)
	}
	if r["before"] != float64(1) {
		t.Errorf("the second call saw %v earlier writes, want 1", r["before"])
	}
}

func TestServicesInASession(t *testing.T) {
	kit := tooltest.New(t, &tooltest.Options{Session: &tool.Session{ID: "s1", Channel: "http", Mode: "local", Principal: "ana"}})
	out := kit.Call("notify", `{"pr":"7"}`)
	var r map[string]any
	out.Decode(t, &r)
	for _, key := range []string{"artifact", "reminder", "tag"} {
		if r[key] != "ok" {
			t.Errorf("%s in a session: %v", key, r[key])
		}
	}
	if names := kit.Artifacts.Names(); len(names) != 1 || names[0] != "summary.md" {
		t.Errorf("artifacts %v", names)
	}
	rems, _ := kit.Reminders.List(t.Context())
	if len(rems) != 1 || rems[0].Key != "follow-up" || rems[0].Message != "Check on PR 7" {
		t.Errorf("reminders %+v", rems)
	}
	if tags := kit.Otel.Tags(); tags["pr"] != "7" {
		t.Errorf("tags %v", tags)
	}
	if b, err := os.ReadFile(r["workspace"].(string) + "/scratch.txt"); err != nil || string(b) != "7" {
		t.Errorf("the session's workspace keeps its files: %q %v", b, err)
	}
	if sent := kit.Sent(); len(sent) != 1 || sent[0].Options.Principal != "ana" {
		t.Errorf("call.Send did not fill in the session's principal: %+v", sent)
	}
}

func TestSendStub(t *testing.T) {
	kit := tooltest.New(t, &tooltest.Options{
		Send: func(ctx context.Context, channel, message string, opts *tool.SendOptions) (string, string, error) {
			return "", "", api.Errorf(api.CodeSessionBusy, "busy")
		},
	})
	out := kit.Call("notify", `{"pr":"1"}`)
	if !out.IsError || !strings.Contains(out.Text(), "busy") {
		t.Errorf("notify with a refusing Send: %v", out)
	}
	if sent := kit.Sent(); len(sent) != 1 || sent[0].Err == nil {
		t.Errorf("the refused Send is not recorded: %+v", sent)
	}
}

func TestNestedCallToolRunsThroughTheKit(t *testing.T) {
	kit := tooltest.New(t, nil)
	out := kit.Call("lint", `{"path":"main.go"}`)
	if out.IsError || string(out.Result) != `{"deployed":true,"path":"main.go"}` {
		t.Fatalf("lint: %v", out)
	}
	calls := kit.ToolCalls()
	if len(calls) != 1 || calls[0].Tool != "deploy" || string(calls[0].Input) != `{"env":"staging"}` || calls[0].Stubbed || calls[0].Outcome == nil {
		t.Fatalf("tool calls %+v", calls)
	}
	if _, err := kit.KV.Get(t.Context(), "deployed/staging"); err != nil {
		t.Errorf("the nested deploy did not run: %v", err)
	}
}

func TestStubbedCallTool(t *testing.T) {
	kit := tooltest.New(t, &tooltest.Options{Stubs: map[string]tooltest.Stub{
		"deploy": func(ctx context.Context, input json.RawMessage) (any, error) {
			return map[string]any{"env": "staging", "deployed": false}, nil
		},
	}})
	out := kit.Call("lint", `{"path":"a.go"}`)
	if out.IsError || string(out.Result) != `{"deployed":false,"path":"a.go"}` {
		t.Fatalf("lint with deploy stubbed: %v", out)
	}
	if calls := kit.ToolCalls(); len(calls) != 1 || !calls[0].Stubbed {
		t.Errorf("tool calls %+v", calls)
	}
	if keys := kit.KV.Keys(); len(keys) != 0 {
		t.Errorf("the stubbed tool ran: KV %v", keys)
	}

	failing := tooltest.New(t, &tooltest.Options{Stubs: map[string]tooltest.Stub{
		"deploy": func(ctx context.Context, input json.RawMessage) (any, error) { return nil, errors.New("cluster down") },
	}})
	if out := failing.Call("lint", `{"path":"a.go"}`); !out.IsError || !strings.Contains(out.Text(), "cluster down") {
		t.Errorf("lint with deploy failing: %v", out)
	}
}

func TestNestedCallOfAGatedToolParks(t *testing.T) {
	caller, err := tool.New("ship", tool.Config{Description: "Ship to prod."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			_, err := call.CallTool(ctx, "deploy", `{"env":"prod"}`, nil)
			return nil, err
		})
	if err != nil {
		t.Fatal(err)
	}
	registered, _ := tool.Registered()
	set, err := tool.NewSet(append(registered.Tools(), caller)...)
	if err != nil {
		t.Fatal(err)
	}
	kit := tooltest.New(t, &tooltest.Options{Tools: set})
	out := kit.Call("ship", `{}`)
	if !out.IsError || !strings.Contains(out.Text(), "would park for approval") {
		t.Errorf("ship: %v", out)
	}
	var pending *tooltest.ApprovalPendingError
	if calls := kit.ToolCalls(); len(calls) != 1 || !errors.As(calls[0].Err, &pending) {
		t.Errorf("tool calls %+v", calls)
	}
}

func TestOutsideATestFailuresPanic(t *testing.T) {
	// A kit outside a test panics where a test would fail.
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "decoding the result") {
			t.Errorf("recovered %v", p)
		}
	}()
	out := tooltest.Call(nil, "greet", `{"name":"Ada"}`)
	var n int
	out.Decode(nil, &n)
}

func TestSessionNeedsAnID(t *testing.T) {
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "Options.Session.ID") {
			t.Errorf("recovered %v", p)
		}
	}()
	tooltest.New(nil, &tooltest.Options{Session: &tool.Session{Channel: "http"}})
}

// A nested call bound to a session a Send opened runs in it; one bound to
// a session nobody opened is refused as a host refuses it.
func TestNestedCallInASession(t *testing.T) {
	hand, err := tool.New("hand_off", tool.Config{Description: "Open a session and notify in it."},
		func(ctx context.Context, call *tool.Call, in struct {
			Session string `json:",omitempty"`
		}) (any, error) {
			id := in.Session
			if id == "" {
				var err error
				if id, _, err = call.Send(ctx, "review", "take it", nil); err != nil {
					return nil, err
				}
			}
			out, err := call.CallTool(ctx, "notify", `{"pr":"9"}`, &tool.CallToolOptions{SessionID: id})
			if err != nil {
				return nil, err
			}
			return out.Result, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	registered, _ := tool.Registered()
	set, err := tool.NewSet(append(registered.Tools(), hand)...)
	if err != nil {
		t.Fatal(err)
	}
	kit := tooltest.New(t, &tooltest.Options{Tools: set})
	var r map[string]any
	kit.Call("hand_off", `{}`).Decode(t, &r)
	if r["reminder"] != "ok" || r["artifact"] != "ok" || r["tag"] != "ok" {
		t.Errorf("notify in the session a Send opened: %v", r)
	}
	out := kit.Call("hand_off", `{"Session":"sess_nobody"}`)
	var ae *api.Error
	if calls := kit.ToolCalls(); !out.IsError || !strings.Contains(out.Text(), "session not found") || !errors.As(calls[len(calls)-1].Err, &ae) || ae.Code != api.CodeSessionNotFound {
		t.Errorf("a nested call in an unknown session: %v", out)
	}
}

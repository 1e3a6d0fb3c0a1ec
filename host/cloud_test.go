package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// setupCloud starts a host on SQLite whose sessions may be cloud ones.
func setupCloud(t testing.TB, cloud host.CloudOptions) *host.Host {
	return setupCloudTTL(t, cloud, 5*time.Second)
}

// setupCloudTTL is setupCloud with the host's lease TTL: short only for a
// test of a runner that dies (a short one would close a live runner's turn
// on a loaded machine between two of the test's reports).
func setupCloudTTL(t testing.TB, cloud host.CloudOptions, ttl time.Duration) *host.Host {
	t.Helper()
	return setupCloudWith(t, host.Options{LeaseTTL: ttl, Cloud: cloud})
}

// setupCloudWith is setupCloud with opts (their state, store, system
// prompt and tools are the test's).
func setupCloudWith(t testing.TB, opts host.Options) *host.Host {
	t.Helper()
	weather, _ := tool.New("weather", tool.Config{Description: "Weather in a city."},
		func(ctx context.Context, call *tool.Call, in weatherInput) (any, error) {
			return map[string]any{"city": in.City, "sky": "clear", "session": call.Session.ID}, nil
		})
	deploy, _ := tool.New("deploy", tool.Config{Description: "Deploy.", NeedsApproval: tool.Always},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "deployed", nil })
	echo, _ := tool.NewScript("echo", tool.Config{Description: "Echo stdin."}, "#!/bin/sh\ncat\n")
	set, err := tool.NewSet(weather, deploy, echo)
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(state, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	opts.StateRoot, opts.Store, opts.System = state, st, "Be brief."
	h, err := host.New(set, &opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(); st.Close() })
	return h
}

func payloadEvent(p api.Payload) api.Event { return api.NewEvent(p) }

func mustClaim(t *testing.T, h *host.Host, wait time.Duration) *api.RunnerClaim {
	t.Helper()
	c, err := h.Runners().Claim(context.Background(), "r1", wait)
	if err != nil || c == nil {
		t.Fatalf("claim: %+v, %v", c, err)
	}
	return c
}

// A cloud session's turn is not run by the host: a runner claims it with
// what it needs (history, agent tools with their scripts, the server tools
// when the host advertises an MCP URL, the model without its key), calls a
// server tool in the turn, reports the turn's events, and ends it; the
// stream holds them all, in order.
func TestCloudTurn(t *testing.T) {
	h := setupCloud(t, host.CloudOptions{ToolsURL: "http://127.0.0.1:1/agent/mcp", Model: model.Config{Provider: "anthropic", Name: "m", APIKey: "secret"}})
	ctx := context.Background()
	if _, _, err := h.Sessions().Create(ctx, host.SessionOptions{Mode: "hybrid"}); !errors.Is(err, &api.Error{Code: api.CodeInvalidMode}) {
		t.Errorf("mode hybrid: %v", err)
	}
	sess, turnID, err := h.Sessions().Create(ctx, host.SessionOptions{Mode: api.ModeCloud, Message: "weather in Oslo?"})
	if err != nil || sess.Mode != api.ModeCloud {
		t.Fatalf("create: %+v %v", sess, err)
	}
	c := mustClaim(t, h, time.Second)
	if c.SessionID != sess.ID || c.TurnID != turnID || c.Model.APIKey != "" || c.Model.Name != "m" || c.MCPURL == "" || c.System != "Be brief." ||
		c.ModelRetries != host.ModelRetriesDefault {
		t.Errorf("claim %+v", c)
	}
	tools := map[string]api.RunnerTool{}
	for _, rt := range c.Tools {
		tools[rt.Name] = rt
	}
	if len(tools) != 3 || tools["echo"].Script == "" || tools["echo"].Execution != "agent" || tools["weather"].Execution != "server" || tools["weather"].Script != "" {
		t.Errorf("claimed tools %+v", c.Tools)
	}
	if n := len(c.Events); n < 3 || c.Events[n-1].Kind != api.KindMessage || !strings.Contains(string(c.Events[n-1].Data), "Oslo") {
		t.Errorf("claimed history %s", kinds(c.Events))
	}
	if again, _ := h.Runners().Claim(ctx, "r2", 0); again != nil {
		t.Errorf("a claimed turn was claimed twice: %+v", again)
	}

	callID := tool.NewCallID("weather")
	report := func(rep api.RunnerReport) error { return h.Runners().Report(ctx, sess.ID, turnID, rep) }
	if err := report(api.RunnerReport{Token: c.Token, Events: []api.Event{
		payloadEvent(api.MessageDelta{Text: "Let me check."}),
		payloadEvent(api.Message{Role: api.RoleAssistant, Text: "Let me check."}),
		payloadEvent(api.ActionsRequested{Actions: []api.Action{{CallID: callID, ModelCallID: "m1", Tool: "weather", Input: json.RawMessage(`{"city":"Oslo"}`)}}}),
	}}); err != nil {
		t.Fatal(err)
	}
	out, err := h.CallInTurn(ctx, "weather", json.RawMessage(`{"city":"Oslo"}`), host.InTurn{SessionID: sess.ID, TurnID: turnID, CallID: callID, ModelCallID: "m1"})
	if err != nil || out.IsError || !strings.Contains(string(out.Result), sess.ID) {
		t.Fatalf("a server tool called in the turn: %+v %v", out, err)
	}
	// A runner may not write what is not its own, nor hold on to a lost turn.
	for _, bad := range []api.Event{payloadEvent(api.Message{Role: api.RoleUser, Text: "hi"}), payloadEvent(api.TurnCompleted{}),
		{Kind: api.KindActionResult, Data: json.RawMessage(`{"callId":5}`)}} {
		if err := report(api.RunnerReport{Token: c.Token, Events: []api.Event{bad}}); !errors.Is(err, &api.Error{Code: api.CodeInvalidReport}) {
			t.Errorf("reporting %s: %v", bad.Data, err)
		}
	}
	if err := report(api.RunnerReport{Token: c.Token + 1}); !errors.Is(err, &api.Error{Code: api.CodeLeaseLost}) {
		t.Errorf("another token: %v", err)
	}
	if err := report(api.RunnerReport{End: api.RunnerEndCompleted}); !errors.Is(err, &api.Error{Code: api.CodeInvalidReport}) {
		t.Errorf("no token (which the store would read as no fence): %v", err)
	}
	if err := report(api.RunnerReport{Token: c.Token, Running: make([]string, 257)}); !errors.Is(err, &api.Error{Code: api.CodeInvalidReport}) {
		t.Errorf("257 running calls: %v", err)
	}
	steps := 2
	if err := report(api.RunnerReport{Token: c.Token, End: api.RunnerEndCompleted, Steps: &steps, Events: []api.Event{
		payloadEvent(api.ActionResult{CallID: callID, ModelCallID: "m1", Tool: "weather", Result: out.Result}),
		payloadEvent(api.Message{Role: api.RoleAssistant, Text: "Clear."}),
	}}); err != nil {
		t.Fatal(err)
	}
	evs, _ := h.Sessions().Events(ctx, sess.ID, 0, 0)
	want := "session.created turn.started message message.delta message actions.requested action.result message turn.completed"
	if got := kinds(evs); got != want {
		t.Errorf("stream: %s\nwant:   %s", got, want)
	}
	if _, err := h.CallInTurn(ctx, "weather", json.RawMessage(`{"city":"Oslo"}`), host.InTurn{SessionID: sess.ID, TurnID: turnID}); !errors.Is(err, api.ErrNoRunningTurn) {
		t.Errorf("a call in an ended turn: %v", err)
	}
	if err := report(api.RunnerReport{Token: c.Token}); !errors.Is(err, &api.Error{Code: api.CodeLeaseLost}) {
		t.Errorf("a report after the end: %v", err)
	}
}

// A gated server tool parks a cloud turn as it parks a local one: the
// runner parks it, the turn is not claimable until the decision is carried
// out here, and then a runner claims it with the result in its history.
func TestCloudTurnApproval(t *testing.T) {
	h := setupCloud(t, host.CloudOptions{ToolsURL: "http://127.0.0.1:1/agent/mcp", DefaultMode: api.ModeCloud})
	ctx := context.Background()
	sess, turnID, err := h.Sessions().Create(ctx, host.SessionOptions{Message: "deploy"})
	if err != nil || sess.Mode != api.ModeCloud {
		t.Fatalf("create with the default mode: %+v %v", sess, err)
	}
	c := mustClaim(t, h, time.Second)
	callID := tool.NewCallID("deploy")
	if err := h.Runners().Report(ctx, sess.ID, turnID, api.RunnerReport{Token: c.Token, Events: []api.Event{
		payloadEvent(api.ActionsRequested{Actions: []api.Action{{CallID: callID, ModelCallID: "m1", Tool: "deploy", Input: json.RawMessage(`{}`)}}}),
	}}); err != nil {
		t.Fatal(err)
	}
	_, err = h.CallInTurn(ctx, "deploy", json.RawMessage(`{}`), host.InTurn{SessionID: sess.ID, TurnID: turnID, CallID: callID, ModelCallID: "m1"})
	var pending *host.ApprovalPendingError
	if !errors.As(err, &pending) || pending.CallID != callID {
		t.Fatalf("a gated call in a cloud turn: %v", err)
	}
	if err := h.Runners().Report(ctx, sess.ID, turnID, api.RunnerReport{Token: c.Token, End: api.RunnerEndParked}); err != nil {
		t.Fatal(err)
	}
	if again, _ := h.Runners().Claim(ctx, "r2", 300*time.Millisecond); again != nil {
		t.Fatalf("a turn waiting for a decision was claimed")
	}
	if _, err := h.Approvals().Resolve(ctx, callID, host.Decision{Approved: true, By: "boss"}); err != nil {
		t.Fatal(err)
	}
	c2 := mustClaim(t, h, 5*time.Second)
	if c2.TurnID != turnID || c2.Token == c.Token {
		t.Errorf("second claim %+v", c2)
	}
	got := kinds(c2.Events)
	if !strings.HasSuffix(got, "actions.requested action.approval_requested action.approval_resolved action.result") {
		t.Errorf("the second claim's history: %s", got)
	}
	if r := find(c2.Events, api.KindActionResult); len(r) != 1 || !strings.Contains(string(r[0].Data), "deployed") {
		t.Errorf("the approved call's result: %v", r)
	}
	if err := h.Runners().Report(ctx, sess.ID, turnID, api.RunnerReport{Token: c.Token, End: api.RunnerEndCompleted}); !errors.Is(err, &api.Error{Code: api.CodeLeaseLost}) {
		t.Errorf("the first claim's token after the second claim: %v", err)
	}
	if _, err := h.CallInTurn(ctx, "weather", json.RawMessage(`{"city":"Oslo"}`), host.InTurn{SessionID: sess.ID, TurnID: turnID, Token: c.Token}); !errors.Is(err, api.ErrNoRunningTurn) {
		t.Errorf("a call under the first claim after the second: %v", err)
	}
	if out, err := h.CallInTurn(ctx, "weather", json.RawMessage(`{"city":"Oslo"}`), host.InTurn{SessionID: sess.ID, TurnID: turnID, Token: c2.Token}); err != nil || out.IsError {
		t.Errorf("a call under the second claim: %+v %v", out, err)
	}
	if err := h.Runners().Report(ctx, sess.ID, turnID, api.RunnerReport{Token: c2.Token, End: api.RunnerEndCompleted}); err != nil {
		t.Fatal(err)
	}
}

// A runner that stops reporting loses its turn when the lease runs out: the
// host's sweep answers the call it was running as interrupted, records
// turn.resumed, and the next claim goes on with it; past MaxResumes the
// turn fails with resume_limit. The session takes messages again.
func TestCloudRunnerDies(t *testing.T) {
	h := setupCloudWith(t, host.Options{LeaseTTL: 400 * time.Millisecond, MaxResumes: 1})
	ctx := context.Background()
	sess, turnID, err := h.Sessions().Create(ctx, host.SessionOptions{Mode: api.ModeCloud, Message: "go"})
	if err != nil {
		t.Fatal(err)
	}
	c := mustClaim(t, h, time.Second)
	for _, rt := range c.Tools {
		if rt.Execution != "agent" {
			t.Errorf("without a tools URL a claim offers %s (%s)", rt.Name, rt.Execution)
		}
	}
	if !strings.Contains(c.System, "weather") || !strings.Contains(c.System, "not reachable") {
		t.Errorf("the model is not told which tools it lacks: %q", c.System)
	}
	callID := tool.NewCallID("echo")
	if err := h.Runners().Report(ctx, sess.ID, turnID, api.RunnerReport{Token: c.Token, Events: []api.Event{
		payloadEvent(api.ActionsRequested{Actions: []api.Action{{CallID: callID, ModelCallID: "m1", Tool: "echo", Input: json.RawMessage(`{}`)}}}),
	}}); err != nil {
		t.Fatal(err)
	}
	// The runner dies; the next claim (after the lease runs out) has the
	// running call's result and the resumption.
	c2 := mustClaim(t, h, 10*time.Second)
	if c2.TurnID != turnID || c2.Token <= c.Token {
		t.Fatalf("the second claim: %s token %d after %d", c2.TurnID, c2.Token, c.Token)
	}
	if got := kinds(c2.Events); !strings.HasSuffix(got, "actions.requested action.result turn.resumed") {
		t.Errorf("the second claim's history: %s", got)
	}
	if r := find(c2.Events, api.KindActionResult); len(r) != 1 || !strings.Contains(string(r[0].Data), callID) || !strings.Contains(string(r[0].Data), "interrupted by host restart; not retried") {
		t.Errorf("the running call's result: %v", r)
	}
	if r := find(c2.Events, api.KindTurnResumed); len(r) == 1 {
		if got, _ := api.Decode[api.TurnResumed](r[0]); got != (api.TurnResumed{Attempt: 1, From: "runner:r1"}) {
			t.Errorf("turn.resumed: %+v", got)
		}
	}
	if err := h.Runners().Report(ctx, sess.ID, turnID, api.RunnerReport{Token: c.Token, End: api.RunnerEndCompleted}); !errors.Is(err, &api.Error{Code: api.CodeLeaseLost}) {
		t.Errorf("the dead runner's report after the second claim: %v", err)
	}
	// The second runner dies too: once is all MaxResumes allows.
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, _ := h.Sessions().Events(ctx, sess.ID, 0, 0)
		if f := find(evs, api.KindTurnFailed); len(f) == 1 {
			if got, _ := api.Decode[api.TurnFailed](f[0]); got.Code != api.FailureResumeLimit || !strings.Contains(got.Reason, "died 2 times") || f[0].TurnID != turnID {
				t.Errorf("turn.failed: %s", f[0].Data)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn of two dead runners is still open: %s", kinds(evs))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := h.Sessions().Send(ctx, sess.ID, "again"); err != nil {
		t.Errorf("the session after its runners died: %v", err)
	}
}

// Cancelling a cloud turn ends it wherever it is: the runner's next report
// finds it gone.
func TestCloudTurnCancel(t *testing.T) {
	h := setupCloud(t, host.CloudOptions{})
	ctx := context.Background()
	sess, turnID, err := h.Sessions().Create(ctx, host.SessionOptions{Mode: api.ModeCloud, Message: "go"})
	if err != nil {
		t.Fatal(err)
	}
	c := mustClaim(t, h, time.Second)
	callID := tool.NewCallID("echo")
	if err := h.Runners().Report(ctx, sess.ID, turnID, api.RunnerReport{Token: c.Token, Events: []api.Event{
		payloadEvent(api.ActionsRequested{Actions: []api.Action{{CallID: callID, ModelCallID: "m1", Tool: "echo", Input: json.RawMessage(`{}`)}}}),
	}}); err != nil {
		t.Fatal(err)
	}
	if err := h.Sessions().Cancel(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	evs, _ := h.Sessions().Events(ctx, sess.ID, 0, 0)
	if got := kinds(evs[len(evs)-2:]); got != "action.result turn.failed" || !strings.Contains(string(evs[len(evs)-1].Data), "cancelled") {
		t.Errorf("after cancel: %s", kinds(evs))
	}
	if err := h.Runners().Report(ctx, sess.ID, turnID, api.RunnerReport{Token: c.Token}); !errors.Is(err, &api.Error{Code: api.CodeLeaseLost}) {
		t.Errorf("the runner's report after the cancel: %v", err)
	}
	if err := h.Sessions().Cancel(ctx, sess.ID); !errors.Is(err, api.ErrNoRunningTurn) {
		t.Errorf("a second cancel: %v", err)
	}
}

// FuzzRunnerReport sends a runner's report with arbitrary events: whatever
// it holds, Report never panics, refuses what a runner may not write with
// invalid_report (appending nothing), and the stream stays numbered
// without gaps.
//
//	go test ./host -run '^$' -fuzz FuzzRunnerReport -fuzztime 60s
func FuzzRunnerReport(f *testing.F) {
	f.Add("message.delta", []byte(`{"text":"hi"}`), "")
	f.Add("message", []byte(`{"role":"user","text":"x"}`), "")
	f.Add("actions.requested", []byte(`{"actions":[{"callId":"tool_x_abcdefgh","tool":"x"}]}`), "parked")
	f.Add("action.result", []byte(`{"callId":"","direct":true}`), "completed")
	f.Add("action.output", []byte(`{"callId":"c","tool":"t","text":"`+strings.Repeat("x", 100)+`"}`), "failed")
	f.Add("turn.completed", []byte(`{}`), "")
	f.Add("action.progress", []byte(`{"done":"NaN"}`), "weird")
	h := setupCloud(f, host.CloudOptions{})
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, kind string, data []byte, end string) {
		sess, turnID, err := h.Sessions().Create(ctx, host.SessionOptions{Mode: api.ModeCloud, Message: "go"})
		if err != nil {
			t.Skip(err) // the session quota, after many runs
		}
		c, err := h.Runners().Claim(ctx, "fuzz", time.Second)
		if err != nil || c == nil || c.SessionID != sess.ID {
			t.Fatalf("claim: %+v %v", c, err)
		}
		before, _ := h.Sessions().Events(ctx, sess.ID, 0, 0)
		err = h.Runners().Report(ctx, sess.ID, turnID, api.RunnerReport{Token: c.Token, End: end,
			Events: []api.Event{{Kind: api.Kind(kind), Data: json.RawMessage(data)}}})
		after, _ := h.Sessions().Events(ctx, sess.ID, 0, 0)
		var apiErr *api.Error
		if err != nil && !errors.As(err, &apiErr) {
			t.Fatalf("a report's error is not an API error: %v", err)
		}
		if err != nil && apiErr.Code == api.CodeInvalidReport && len(after) != len(before) {
			t.Errorf("a refused report appended %d events", len(after)-len(before))
		}
		for i, e := range after {
			if e.Seq != int64(i+1) {
				t.Fatalf("seq %d at %d", e.Seq, i+1)
			}
		}
		// Leave no turn running for the next input's claim.
		h.Sessions().Cancel(ctx, sess.ID)
	})
}

// A runner reports results only of the calls of its turn: each announced
// in actions.requested (in the report, or stored before) under its tool,
// without a result yet, and not one the host answers itself (a gated
// tool's: its result comes with the decision, when approved). Anything
// else is refused, invalid_report, and nothing of the report appended.
func TestCloudReportResults(t *testing.T) {
	h := setupCloud(t, host.CloudOptions{ToolsURL: "http://127.0.0.1:1/agent/mcp"})
	ctx := context.Background()
	sess, turnID, err := h.Sessions().Create(ctx, host.SessionOptions{Mode: api.ModeCloud, Message: "weather, then deploy"})
	if err != nil {
		t.Fatal(err)
	}
	c := mustClaim(t, h, time.Second)
	report := func(evs ...api.Event) error {
		return h.Runners().Report(ctx, sess.ID, turnID, api.RunnerReport{Token: c.Token, Events: evs})
	}
	weather, deploy := tool.NewCallID("weather"), tool.NewCallID("deploy")
	if err := report(payloadEvent(api.ActionsRequested{Actions: []api.Action{
		{CallID: weather, ModelCallID: "m1", Tool: "weather", Input: json.RawMessage(`{"city":"Oslo"}`)},
		{CallID: deploy, ModelCallID: "m2", Tool: "deploy", Input: json.RawMessage(`{}`)},
	}})); err != nil {
		t.Fatal(err)
	}
	result := func(callID, name string) api.Event {
		return payloadEvent(api.ActionResult{CallID: callID, Tool: name, Result: json.RawMessage(`"done"`)})
	}
	refused := func(what, want string, evs ...api.Event) {
		t.Helper()
		before, _ := h.Sessions().Events(ctx, sess.ID, 0, 0)
		err := report(evs...)
		after, _ := h.Sessions().Events(ctx, sess.ID, 0, 0)
		if !errors.Is(err, &api.Error{Code: api.CodeInvalidReport}) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want invalid_report with %q", what, err, want)
		}
		if len(after) != len(before) {
			t.Errorf("%s: %d events appended", what, len(after)-len(before))
		}
	}
	refused("a result of a call never requested", "was not requested in this turn",
		payloadEvent(api.MessageDelta{Text: "x"}), result(tool.NewCallID("weather"), "weather"))
	refused("a result of a gated call never approved", "needs approval: its result comes with the decision", result(deploy, "deploy"))
	refused("a result under another tool's name", `was requested as weather, not deploy`, result(weather, "deploy"))
	if err := report(result(weather, "weather")); err != nil {
		t.Fatalf("the result of a requested call: %v", err)
	}
	refused("a second result of a call", "has its result already", result(weather, "weather"))
	// Requested and answered in one report.
	again := tool.NewCallID("weather")
	if err := report(payloadEvent(api.ActionsRequested{Actions: []api.Action{{CallID: again, Tool: "weather", Input: json.RawMessage(`{"city":"Rome"}`)}}}),
		result(again, "weather")); err != nil {
		t.Fatalf("a call requested and answered in one report: %v", err)
	}
	refused("a result twice in one report", "has its result already", payloadEvent(api.ActionsRequested{Actions: []api.Action{{CallID: tool.NewCallID("weather"), Tool: "weather"}}}),
		result(again, "weather"))
	// A call parked for approval is answered by the host, with its decision.
	if _, err := h.CallInTurn(ctx, "deploy", json.RawMessage(`{}`), host.InTurn{SessionID: sess.ID, TurnID: turnID, Token: c.Token, CallID: deploy, ModelCallID: "m2"}); err == nil {
		t.Fatal("the gated call ran")
	}
	refused("a result of a call parked for approval", "needs approval: its result comes with the decision", result(deploy, "deploy"))
}

// A cloud turn keeps the usage limits: its runner asks before each model
// call; the host reserves the call's estimate, prices what the runner
// reports with its own table, and at the limit answers budget_exceeded —
// or, with onExceed approve, parks the turn for a raise.
func TestCloudTurnBudget(t *testing.T) {
	ctx := context.Background()
	cloud := host.CloudOptions{Model: model.Config{Provider: "anthropic", Name: "claude-sonnet-4-5"}}
	// A call reported at 1000 in and 100 out costs $0.0045 at $3/$15 per
	// million; a limit of $0.01 admits two (with their small estimates).
	usage := payloadEvent(api.ModelUsage{Provider: "anthropic", Model: "claude-sonnet-4-5", InputTokens: 1000, OutputTokens: 100, Reported: true})
	for _, onExceed := range []host.OnExceed{host.LimitFail, host.LimitApprove} {
		t.Run(string(onExceed), func(t *testing.T) {
			h := setupCloudWith(t, host.Options{Cloud: cloud, MaxTokens: 100,
				Limits: host.UsageLimits{Session: host.UsageLimit{Cost: 10_000}, OnExceed: onExceed}})
			sess, turnID, err := h.Sessions().Create(ctx, host.SessionOptions{Mode: api.ModeCloud, Message: "go"})
			if err != nil {
				t.Fatal(err)
			}
			c := mustClaim(t, h, time.Second)
			admit := func() (api.RunnerAdmitted, error) {
				return h.Runners().Admit(ctx, sess.ID, turnID, api.RunnerAdmit{Token: c.Token, InputBytes: 400, MaxTokens: 100})
			}
			for i := range 2 {
				if ans, err := admit(); err != nil || ans.Parked {
					t.Fatalf("call %d: %+v %v", i+1, ans, err)
				}
				// A second ask before the call's usage replaces the first's
				// reservation rather than adding to it.
				if ans, err := admit(); err != nil || ans.Parked {
					t.Fatalf("call %d asked again: %+v %v", i+1, ans, err)
				}
				if err := h.Runners().Report(ctx, sess.ID, turnID, api.RunnerReport{Token: c.Token, Events: []api.Event{usage}}); err != nil {
					t.Fatal(err)
				}
			}
			got, _ := h.Sessions().Get(ctx, sess.ID)
			if got.Usage == nil || got.Usage.CostMicroUsd == nil || *got.Usage.CostMicroUsd != 9_000 {
				t.Fatalf("the runner's calls priced by the host: %s", mustJSON(got.Usage))
			}
			ans, err := admit()
			if onExceed == host.LimitFail {
				if !errors.Is(err, api.ErrOverBudget) || !strings.Contains(err.Error(), "the session's usage limit of $0.01 reached") {
					t.Fatalf("the third call: %+v %v, want budget_exceeded", ans, err)
				}
				if err := h.Runners().Report(ctx, sess.ID, turnID, api.RunnerReport{Token: c.Token, End: api.RunnerEndFailed,
					Code: api.FailureBudgetExceeded, Reason: err.Error()}); err != nil {
					t.Fatal(err)
				}
				evs, _ := h.Sessions().Events(ctx, sess.ID, 0, 0)
				end, _ := api.Decode[api.TurnFailed](evs[len(evs)-1])
				if end.Code != api.FailureBudgetExceeded || end.Usage == nil || end.Usage.ModelCalls != 2 {
					t.Errorf("the turn's end: %s", evs[len(evs)-1].Data)
				}
				return
			}
			if err != nil || !ans.Parked {
				t.Fatalf("the third call with onExceed approve: %+v %v, want parked", ans, err)
			}
			evs, _ := h.Sessions().Events(ctx, sess.ID, 0, 0)
			if req := find(evs, api.KindApprovalRequested); len(req) != 1 || !strings.Contains(string(req[0].Data), "raise_usage_limit") {
				t.Errorf("no raise requested: %s", kinds(evs))
			}
		})
	}
}

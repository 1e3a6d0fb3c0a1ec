package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/internal/harnesstest"
	"github.com/agentsdk/agentsdk/store/memory"
	"github.com/agentsdk/agentsdk/tool"
)

// harnessCase is how a test drives one harness: its spec against the
// fake, and the fake's call of the harness's shell tool.
type harnessCase struct {
	name  string
	spec  func(testing.TB, *fakemodel.Server) harness.Spec
	shell func(command string) fakemodel.Call
}

var harnessCases = []harnessCase{
	{harness.ClaudeCode, harnesstest.Claude, func(c string) fakemodel.Call {
		in, _ := json.Marshal(map[string]string{"command": c, "description": "run it"})
		return fakemodel.Call{ID: "toolu_sh", Name: "Bash", Input: string(in)}
	}},
	{harness.Codex, harnesstest.Codex, func(c string) fakemodel.Call {
		in, _ := json.Marshal(map[string]string{"cmd": c})
		return fakemodel.Call{ID: "call_sh", Name: "exec_command", Input: string(in)}
	}},
	{harness.Gemini, harnesstest.Gemini, func(c string) fakemodel.Call {
		in, _ := json.Marshal(map[string]string{"command": c, "description": "run it"})
		return fakemodel.Call{Name: "run_shell_command", Input: string(in)}
	}},
}

// harnessHost starts a host whose sessions may run on the harness
// against fake.
func harnessHost(t *testing.T, c harnessCase, fake *fakemodel.Server, perms harness.Permissions) *host.Host {
	spec := c.spec(t, fake)
	spec.Permissions = perms
	set, err := tool.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	return startHost(t, memory.New(), set, fake.AnthropicURL(), host.Options{Harnesses: map[string]harness.Spec{spec.Name: spec}})
}

// waitHarnessParked waits for the turn's first parked call.
func waitHarnessParked(t *testing.T, h *host.Host, sessionID string) api.ApprovalRequested {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		evs, err := h.Sessions().Events(context.Background(), sessionID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if rs := find(evs, api.KindApprovalRequested); len(rs) > 0 {
			r, _ := api.Decode[api.ApprovalRequested](rs[0])
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no call parked")
	return api.ApprovalRequested{}
}

// A Claude Code turn: its text is the session's message; a shell command
// it asks permission for parks, and once approved runs in the session's
// workspace; the next turn continues the harness's conversation.
func TestHarnessTurn(t *testing.T) {
	for _, c := range harnessCases {
		t.Run(c.name, func(t *testing.T) { testHarnessTurn(t, c) })
	}
}

func testHarnessTurn(t *testing.T, c harnessCase) {
	fake := fakemodel.New()
	t.Cleanup(fake.Close)
	h := harnessHost(t, c, fake, harness.Permissions{})
	ctx := context.Background()
	fake.Push(fakemodel.Reply{Text: []string{"hello ", "there"}})
	sess, turn, err := h.Sessions().Create(ctx, host.SessionOptions{Message: "say hello", Runtime: c.name})
	if err != nil {
		t.Fatal(err)
	}
	evs := waitTurnEnd(t, h, sess.ID, turn)
	if k := kinds(evs); !strings.Contains(k, "harness.session") || len(find(evs, api.KindTurnCompleted)) != 1 {
		t.Fatalf("events: %s", k)
	}
	if m := lastAssistant(evs); !strings.HasSuffix(m, "hello there") {
		t.Fatalf("answer %q; events %s", m, kinds(evs))
	}
	// What the harness says it consumed is the turn's usage.
	us := find(evs, api.KindModelUsage)
	if len(us) != 1 {
		t.Fatalf("%d model.usage events: %s", len(us), kinds(evs))
	}
	// Codex's adapter reports none: the call counts, with no tokens.
	reports := c.name != harness.Codex
	if u, _ := api.Decode[api.ModelUsage](us[0]); u.Provider != c.name || u.Reported != reports || reports && (u.InputTokens <= 0 || u.OutputTokens <= 0) {
		t.Errorf("usage %+v", u)
	}
	if end, _ := api.Decode[api.TurnCompleted](find(evs, api.KindTurnCompleted)[0]); end.Usage == nil || end.Usage.ModelCalls != 1 || reports && end.Usage.InputTokens <= 0 {
		t.Errorf("the turn's end says no usage: %+v", end.Usage)
	}

	fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{c.shell("echo made > made.txt")}},
		fakemodel.Reply{Text: []string{"made it"}})
	turn, err = h.Sessions().Send(ctx, sess.ID, "make a file")
	if err != nil {
		t.Fatal(err)
	}
	parked := waitHarnessParked(t, h, sess.ID)
	var asked struct {
		Title, Kind string
	}
	if err := json.Unmarshal(parked.Input, &asked); err != nil || parked.Tool != "harness_execute" || !strings.Contains(asked.Title, "echo made > made.txt") || asked.Kind != "execute" {
		t.Fatalf("parked %+v", parked)
	}
	ws := h.Sessions().WorkspaceDir(sess.ID)
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); err == nil {
		t.Fatal("the command ran before approval")
	}
	if _, err := h.Approvals().Resolve(ctx, parked.CallID, host.Decision{Approved: true, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	evs = waitTurnEnd(t, h, sess.ID, turn)
	if b, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("made.txt: %q, %v; events %s", b, err, kinds(evs))
	}
	var results int
	for _, e := range find(evs, api.KindActionResult) {
		if r, _ := api.Decode[api.ActionResult](e); r.CallID == parked.CallID {
			results++
		}
	}
	if results != 1 || !strings.HasSuffix(lastAssistant(evs), "made it") {
		t.Errorf("%d results for the call, answer %q: %s", results, lastAssistant(evs), kinds(evs))
	}
	a, err := h.Approvals().Get(ctx, parked.CallID)
	if err != nil || a.Outcome == nil || a.DecidedBy != "alice" {
		t.Errorf("approval %+v, %v", a, err)
	}
}

// lastAssistant is the text of the last assistant message in evs.
func lastAssistant(evs []api.Event) string {
	text := ""
	for _, e := range find(evs, api.KindMessage) {
		if m, _ := api.Decode[api.Message](e); m.Role == api.RoleAssistant {
			text = m.Text
		}
	}
	return text
}

// harnessPids are the processes whose HOME is home: a harness and
// everything it started.
func harnessPids(home string) []int {
	return harnesstest.Procs(func(h string) bool { return h == home })
}

// waitGone waits until no process has HOME home.
func waitGone(t *testing.T, home string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if len(harnessPids(home)) == 0 {
			return
		}
	}
	t.Errorf("harness processes outlived their turn: %v", harnessPids(home))
}

// turnFailure decodes the turn's turn.failed.
func turnFailure(t *testing.T, evs []api.Event, turn string) api.TurnFailed {
	t.Helper()
	for _, e := range find(evs, api.KindTurnFailed) {
		if e.TurnID == turn {
			f, _ := api.Decode[api.TurnFailed](e)
			return f
		}
	}
	t.Fatalf("turn %s did not fail: %s", turn, kinds(evs))
	return api.TurnFailed{}
}

// A denied shell command does not run, its result says who denied it and
// why, and the harness's next prompt tells the model; a cancel while the
// harness waits for a decision ends the turn cancelled and its processes;
// a harness that dies mid-turn fails the turn with harness_failed.
func TestHarnessDenyCancelCrash(t *testing.T) {
	for _, c := range harnessCases {
		t.Run(c.name, func(t *testing.T) {
			fake := fakemodel.New()
			t.Cleanup(fake.Close)
			h := harnessHost(t, c, fake, harness.Permissions{})
			ctx := context.Background()
			ws := func(id string) string { return h.Sessions().WorkspaceDir(id) }
			home := func(id string) string { return filepath.Join(filepath.Dir(ws(id)), "harness-home") }

			// Denied.
			// Only the calls are scripted: what follows a call depends on
			// the harness (Codex ends the turn at a rejection, Claude asks
			// the model again).
			fake.SetDefault(fakemodel.Reply{Text: []string{"noted"}})
			fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{c.shell("echo made > denied.txt")}})
			sess, turn, err := h.Sessions().Create(ctx, host.SessionOptions{Message: "make a file", Runtime: c.name})
			if err != nil {
				t.Fatal(err)
			}
			parked := waitHarnessParked(t, h, sess.ID)
			if _, err := h.Approvals().Resolve(ctx, parked.CallID, host.Decision{Approved: false, By: "bob", Reason: "not today"}); err != nil {
				t.Fatal(err)
			}
			evs := waitTurnEnd(t, h, sess.ID, turn)
			if _, err := os.Stat(filepath.Join(ws(sess.ID), "denied.txt")); err == nil {
				t.Fatal("a denied command ran")
			}
			var said string
			for _, e := range find(evs, api.KindActionResult) {
				if r, _ := api.Decode[api.ActionResult](e); r.CallID == parked.CallID {
					said = string(r.Result)
				}
			}
			if !strings.Contains(said, "denied by bob: not today") {
				t.Errorf("the denied call's result: %s; %s", said, kinds(evs))
			}
			turn, err = h.Sessions().Send(ctx, sess.ID, "next")
			if err != nil {
				t.Fatal(err)
			}
			waitTurnEnd(t, h, sess.ID, turn)
			reqs := fake.Requests()
			if last := string(reqs[len(reqs)-1]); !strings.Contains(last, "not today") {
				t.Errorf("the model was not told why: %.600s", last)
			}

			// Cancelled while it waits.
			fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{c.shell("echo made > cancelled.txt")}})
			turn, err = h.Sessions().Send(ctx, sess.ID, "make another")
			if err != nil {
				t.Fatal(err)
			}
			waitHarnessParkedIn(t, h, sess.ID, turn)
			if len(harnessPids(home(sess.ID))) == 0 {
				t.Fatal("no harness process while the call waits")
			}
			if err := h.Sessions().Cancel(ctx, sess.ID); err != nil {
				t.Fatal(err)
			}
			evs = waitTurnEnd(t, h, sess.ID, turn)
			if f := turnFailure(t, evs, turn); f.Code != api.FailureCancelled {
				t.Errorf("cancelled turn: %+v", f)
			}
			waitGone(t, home(sess.ID))

			// The harness dies mid-turn.
			fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{c.shell("echo made > crashed.txt")}})
			turn, err = h.Sessions().Send(ctx, sess.ID, "and another")
			if err != nil {
				t.Fatal(err)
			}
			waitHarnessParkedIn(t, h, sess.ID, turn)
			for _, pid := range harnessPids(home(sess.ID)) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			evs = waitTurnEnd(t, h, sess.ID, turn)
			if f := turnFailure(t, evs, turn); f.Code != api.FailureHarness || !strings.Contains(f.Reason, "exited") {
				t.Errorf("crashed turn: %+v", f)
			}
			waitGone(t, home(sess.ID))
		})
	}
}

// waitHarnessParkedIn waits for a call of the turn to park.
func waitHarnessParkedIn(t *testing.T, h *host.Host, sessionID, turnID string) api.ApprovalRequested {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		evs, _ := h.Sessions().Events(context.Background(), sessionID, 0, 0)
		for _, e := range find(evs, api.KindApprovalRequested) {
			if e.TurnID == turnID {
				r, _ := api.Decode[api.ApprovalRequested](e)
				return r
			}
		}
	}
	t.Fatalf("no call of turn %s parked", turnID)
	return api.ApprovalRequested{}
}

// An agent tool is a script in the session's workspace, with its catalog
// in AGENTS.md (and CLAUDE.md and GEMINI.md pointing at it); each harness
// runs it with its own shell, here allowed without a person by the
// permissions policy. A plan Claude Code makes is a plan event.
func TestHarnessAgentToolAndPlan(t *testing.T) {
	for _, c := range harnessCases {
		t.Run(c.name, func(t *testing.T) { testHarnessAgentTool(t, c) })
	}
}

func testHarnessAgentTool(t *testing.T, c harnessCase) {
	fake := fakemodel.New()
	t.Cleanup(fake.Close)
	greet, err := tool.NewScript("greet", tool.Config{Description: "Greets whoever its input names."}, "#!/bin/sh\necho \"hello $(cat)\" > greeted.txt\necho greeted\n")
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(greet)
	if err != nil {
		t.Fatal(err)
	}
	spec := c.spec(t, fake)
	spec.Permissions = harness.Permissions{Allow: []string{"execute:*.agent-serve/tools/*"}}
	h := startHost(t, memory.New(), set, fake.AnthropicURL(), host.Options{Harnesses: map[string]harness.Spec{spec.Name: spec}})
	fake.SetDefault(fakemodel.Reply{Text: []string{"done"}})
	run := fakemodel.Reply{Calls: []fakemodel.Call{c.shell(`echo '{"name":"ada"}' | .agent-serve/tools/greet`)}}
	if c.name == harness.ClaudeCode {
		todos := `{"todos":[{"content":"Greet Ada","status":"in_progress","activeForm":"Greeting Ada"},{"content":"Report","status":"pending","activeForm":"Reporting"}]}`
		fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "toolu_plan", Name: "TodoWrite", Input: todos}}})
	}
	fake.Push(run)
	sess, turn, err := h.Sessions().Create(context.Background(), host.SessionOptions{Message: "greet ada", Runtime: c.name})
	if err != nil {
		t.Fatal(err)
	}
	evs := waitTurnEndOrParked(t, h, sess.ID, turn)
	if len(find(evs, api.KindApprovalRequested)) != 0 {
		t.Fatalf("the policy's allowed command was parked: %s", find(evs, api.KindApprovalRequested)[0].Data)
	}
	ws := h.Sessions().WorkspaceDir(sess.ID)
	if b, err := os.ReadFile(filepath.Join(ws, "greeted.txt")); err != nil || string(b) != "hello {\"name\":\"ada\"}\n" {
		t.Fatalf("greeted.txt %q, %v: %s", b, err, kinds(evs))
	}
	if b, err := os.ReadFile(filepath.Join(ws, "AGENTS.md")); err != nil || !strings.Contains(string(b), "greet") {
		t.Errorf("AGENTS.md: %q, %v", b, err)
	}
	for _, f := range []string{"CLAUDE.md", "GEMINI.md"} {
		if b, err := os.ReadFile(filepath.Join(ws, f)); err != nil || !strings.Contains(string(b), "@AGENTS.md") {
			t.Errorf("%s: %q, %v", f, b, err)
		}
	}
	if c.name != harness.ClaudeCode {
		return
	}
	plans := find(evs, api.KindPlan)
	if len(plans) == 0 {
		t.Fatalf("no plan: %s", kinds(evs))
	}
	p, _ := api.Decode[api.Plan](plans[len(plans)-1])
	if len(p.Entries) != 2 || p.Entries[0].Content != "Greet Ada" || p.Entries[0].Status != "in_progress" {
		t.Errorf("plan %+v", p)
	}
}

// waitTurnEndOrParked waits until the turn ends or one of its calls
// parks, and returns the session's events.
func waitTurnEndOrParked(t *testing.T, h *host.Host, sessionID, turnID string) []api.Event {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		evs, err := h.Sessions().Events(context.Background(), sessionID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.TurnID == turnID && (e.Kind == api.KindTurnCompleted || e.Kind == api.KindTurnFailed || e.Kind == api.KindApprovalRequested) {
				return evs
			}
		}
	}
	t.Fatalf("turn %s neither ended nor parked a call", turnID)
	return nil
}

// A harness that hangs (sends nothing for its hang timeout) fails its
// turn harness_failed, saying so with the tail of its stderr, and leaves
// no process; while it waits for a person's decision it is not hung.
func TestHarnessHangs(t *testing.T) {
	fake := fakemodel.New()
	t.Cleanup(fake.Close)
	set, err := tool.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	const hang = 300 * time.Millisecond
	specs := map[string]harness.Spec{"stuck": harnesstest.Stuck(hang, false)}
	asking := harnesstest.Stuck(hang, true)
	asking.Name = "asking"
	specs["asking"] = asking
	h := startHost(t, memory.New(), set, fake.AnthropicURL(), host.Options{Harnesses: specs})
	ctx := context.Background()

	sess, turn, err := h.Sessions().Create(ctx, host.SessionOptions{Message: "go", Runtime: "stuck"})
	if err != nil {
		t.Fatal(err)
	}
	evs := waitTurnEnd(t, h, sess.ID, turn)
	if f := turnFailure(t, evs, turn); f.Code != api.FailureHarness || !strings.Contains(f.Reason, "sent nothing for") || !strings.Contains(f.Reason, "stuck in a loop") {
		t.Errorf("the hung turn: %+v", f)
	}
	waitGone(t, filepath.Join(filepath.Dir(h.Sessions().WorkspaceDir(sess.ID)), "harness-home"))

	// Parked for a person for many hang timeouts, then approved: the
	// harness is taken for hung only after that.
	sess, turn, err = h.Sessions().Create(ctx, host.SessionOptions{Message: "go", Runtime: "asking"})
	if err != nil {
		t.Fatal(err)
	}
	parked := waitHarnessParked(t, h, sess.ID)
	time.Sleep(5 * hang)
	evs, err = h.Sessions().Events(ctx, sess.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(find(evs, api.KindTurnFailed)); n != 0 {
		t.Fatalf("the turn failed while its harness waited for a person: %s", kinds(evs))
	}
	if _, err := h.Approvals().Resolve(ctx, parked.CallID, host.Decision{Approved: true, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	evs = waitTurnEnd(t, h, sess.ID, turn)
	if f := turnFailure(t, evs, turn); f.Code != api.FailureHarness || !strings.Contains(f.Reason, "sent nothing for") {
		t.Errorf("the turn hung after the approval: %+v", f)
	}
}

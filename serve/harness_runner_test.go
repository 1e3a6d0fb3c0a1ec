package serve_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/internal/harnesstest"
	"github.com/agentsdk/agentsdk/internal/runner"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// A cloud session on Claude Code runs on a runner: the harness starts on
// the runner's machine in the runner's workspace, calls the agent's server
// tool over the host's MCP endpoint with the claim's runner token (the
// host records the call once), asks before a shell command — parked on the
// host's stream, approved over HTTP, then run on the runner, its result
// recorded once — and a denied command does not run, the harness told who
// denied it. What the harness says it consumed is the turn's usage.
func TestRunnerHarnessTurn(t *testing.T) {
	for _, c := range []struct {
		name string
		spec func(testing.TB, *fakemodel.Server) harness.Spec
		// wc is the fake's call of the agent's word_count; shell, of the
		// harness's shell tool.
		wc    fakemodel.Call
		shell func(command string) fakemodel.Call
	}{
		{harness.ClaudeCode, harnesstest.Claude, fakemodel.Call{ID: "toolu_wc", Name: "mcp__agent__word_count", Input: `{"text":"one two three"}`},
			func(c string) fakemodel.Call {
				in, _ := json.Marshal(map[string]string{"command": c, "description": "run it"})
				return fakemodel.Call{ID: "toolu_sh", Name: "Bash", Input: string(in)}
			}},
		{harness.Codex, harnesstest.Codex, fakemodel.Call{ID: "call_wc", Namespace: "mcp__agent", Name: "word_count", Input: `{"text":"one two three"}`},
			func(c string) fakemodel.Call {
				in, _ := json.Marshal(map[string]string{"cmd": c})
				return fakemodel.Call{ID: "call_sh", Name: "exec_command", Input: string(in)}
			}},
		{harness.Gemini, harnesstest.Gemini, fakemodel.Call{Name: "mcp_agent_word_count", Input: `{"text":"one two three"}`},
			func(c string) fakemodel.Call {
				in, _ := json.Marshal(map[string]string{"command": c, "description": "run it"})
				return fakemodel.Call{Name: "run_shell_command", Input: string(in)}
			}},
	} {
		t.Run(c.name, func(t *testing.T) { testRunnerHarnessTurn(t, c.name, c.spec, c.wc, c.shell) })
	}
}

func testRunnerHarnessTurn(t *testing.T, runtime string, specOf func(testing.TB, *fakemodel.Server) harness.Spec, wcCall fakemodel.Call, shell func(string) fakemodel.Call) {
	fake := fakemodel.New()
	t.Cleanup(fake.Close)
	spec := specOf(t, fake)
	wc, _ := tool.New("word_count", tool.Config{Description: "Counts words."}, func(ctx context.Context, call *tool.Call, in struct {
		Text string `json:"text"`
	}) (int, error) {
		return len(strings.Fields(in.Text)), nil
	})
	set, _ := tool.NewSet(wc)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	state := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(state, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(set, &host.Options{StateRoot: state, Store: st, Harnesses: map[string]harness.Spec{spec.Name: spec},
		Cloud: host.CloudOptions{ToolsURL: base + "/agent/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	h.Start(context.Background())
	srv, _ := serve.New(h, &serve.Options{Slug: "agent", Token: testToken, ApprovalWait: -1})
	ts := httptest.NewUnstartedServer(srv)
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	work := t.TempDir()
	r, err := runner.New(&runner.Options{URL: base + "/agent", Token: testToken, Dir: work, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	running.Go(func() { _ = r.Run(ctx) })
	t.Cleanup(func() {
		stop()
		running.Wait()
		srv.Shutdown()
		ts.Close()
		h.Close()
		st.Close()
	})
	hs := &harnessServer{sessionServer: &sessionServer{url: base + "/agent/v1", fake: fake, srv: srv}, h: h}

	fake.SetDefault(fakemodel.Reply{Text: []string{"done"}})
	fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{wcCall}},
		fakemodel.Reply{Calls: []fakemodel.Call{shell("echo made > made.txt")}},
		fakemodel.Reply{Text: []string{"made it"}})
	status, body := hs.call(t, "POST", "/session", `{"message":"count, then make a file","mode":"cloud","runtime":"`+runtime+`"}`)
	if status != 201 {
		t.Fatalf("create: %d %v", status, body)
	}
	id, turn := body["sessionId"].(string), body["turnId"].(string)
	e := hs.waitFor(t, id, api.KindApprovalRequested, func(e api.Event) bool { return e.TurnID == turn })
	parked, _ := api.Decode[api.ApprovalRequested](e)
	ws := filepath.Join(work, "sessions", id, "workspace")
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); parked.Tool != "harness_execute" || err == nil {
		t.Fatalf("parked %+v; the file exists before approval: %v", parked, err == nil)
	}
	if len(harnesstest.Procs(func(home string) bool { return strings.HasPrefix(home, work) })) == 0 {
		t.Fatal("no harness process runs on the runner while it waits")
	}
	if status, body := hs.call(t, "POST", "/session/"+id+"/approvals/"+parked.CallID, `{"approved":true}`); status != 200 {
		t.Fatalf("approve: %d %v", status, body)
	}
	if end := hs.turnEnd(t, id, turn); end.Kind != api.KindTurnCompleted {
		t.Fatalf("turn ended %s: %s", end.Kind, end.Data)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("made.txt in the runner's workspace: %q, %v", b, err)
	}
	results := map[string]int{}
	var usage []api.ModelUsage
	for _, e := range hs.events(t, id) {
		switch e.Kind {
		case api.KindActionResult:
			r, _ := api.Decode[api.ActionResult](e)
			results[r.Tool]++
			if r.Tool == "word_count" && string(r.Result) != "3" {
				t.Errorf("word_count's result %s", r.Result)
			}
		case api.KindModelUsage:
			u, _ := api.Decode[api.ModelUsage](e)
			usage = append(usage, u)
		}
	}
	if results["word_count"] != 1 || results["harness_execute"] != 1 {
		t.Fatalf("results %v: %s", results, eventKinds(hs.events(t, id)))
	}
	reports := runtime != harness.Codex // Codex's adapter reports no tokens
	if len(usage) != 1 || usage[0].Provider != runtime || usage[0].Reported != reports || reports && (usage[0].InputTokens <= 0 || usage[0].OutputTokens <= 0) {
		t.Errorf("usage %+v", usage)
	}

	// Denied: not run, and the harness is told who denied it.
	fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{shell("echo no > no.txt")}}, fakemodel.Reply{Text: []string{"ok"}})
	status, body = hs.call(t, "POST", "/session/"+id+"/messages", `{"message":"make another"}`)
	if status != 202 && status != 201 && status != 200 {
		t.Fatalf("send: %d %v", status, body)
	}
	turn = body["turnId"].(string)
	e = hs.waitFor(t, id, api.KindApprovalRequested, func(e api.Event) bool { return e.TurnID == turn })
	parked, _ = api.Decode[api.ApprovalRequested](e)
	if status, body := hs.call(t, "POST", "/session/"+id+"/approvals/"+parked.CallID, `{"approved":false,"reason":"not today"}`); status != 200 {
		t.Fatalf("deny: %d %v", status, body)
	}
	if end := hs.turnEnd(t, id, turn); end.Kind != api.KindTurnCompleted {
		for _, e := range hs.events(t, id) {
			t.Logf("%s %s %s", e.TurnID, e.Kind, e.Data) // the stream, to see why
		}
		t.Fatalf("turn ended %s: %s", end.Kind, end.Data)
	}
	if _, err := os.Stat(filepath.Join(ws, "no.txt")); err == nil {
		t.Fatal("a denied command ran")
	}
	var denied int
	for _, e := range hs.events(t, id) {
		if r, err := api.Decode[api.ActionResult](e); err == nil && e.Kind == api.KindActionResult && r.CallID == parked.CallID {
			denied++
			if !strings.Contains(string(r.Result), "not today") {
				t.Errorf("the denial's result %s", r.Result)
			}
		}
	}
	if denied != 1 {
		t.Errorf("%d results of the denied call", denied)
	}
	stop()
	running.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for len(harnesstest.Procs(func(home string) bool { return strings.HasPrefix(home, work) })) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("harness processes outlived the runner")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// The cloud agent (testdata/cloud: weather and deploy, server tools, the
// second gated; pwd, an agent tool), built once.
var cloudBuild struct {
	once     sync.Once
	dir, bin string
	err      error
}

func cloudCluster(t *testing.T) *mhCluster {
	t.Helper()
	cloudBuild.once.Do(func() {
		dir := filepath.Join(filepath.Dir(cliBin), "cloud")
		if err := newAgent(dir); err != nil {
			cloudBuild.err = err
			return
		}
		if err := addFixtures(dir, "cloud", "model:\n  provider: anthropic\n  name: fake-model\nmaxSteps: 6\n"); err != nil {
			cloudBuild.err = err
			return
		}
		cloudBuild.dir, cloudBuild.err = dir, nil
		cloudBuild.bin, cloudBuild.err = buildFixtureAgent(dir, false)
	})
	if cloudBuild.err != nil {
		t.Fatal(cloudBuild.err)
	}
	return &mhCluster{dir: cloudBuild.dir, bin: cloudBuild.bin, token: "asdk_cloud_test_token", runs: filepath.Join(t.TempDir(), "runs")}
}

// freeAddr returns a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// runnerProc is an agent-sdk runner process.
type runnerProc struct {
	cmd  *exec.Cmd
	work string
	mu   sync.Mutex
	logs bytes.Buffer
	done chan struct{}
}

func (r *runnerProc) log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.String()
}

// startRunner starts agent-sdk runner against the host at base
// (http://…/<slug>), with its model at model.
func startRunner(t *testing.T, base, token string, model *fakemodel.Server) *runnerProc {
	t.Helper()
	r := &runnerProc{work: t.TempDir(), done: make(chan struct{})}
	r.cmd = exec.Command(cliBin, "runner", "--url", base, "--token", token, "--work", r.work, "--name", "r1", "--wait", "2s")
	r.cmd.Env = append(os.Environ(), "ANTHROPIC_BASE_URL="+model.AnthropicURL(), "ANTHROPIC_API_KEY=test-key", "CLOUD_WHERE=runner")
	pipe, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			r.mu.Lock()
			r.logs.WriteString(sc.Text() + "\n")
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		r.cmd.Wait()
		if t.Failed() {
			t.Logf("runner log:\n%s", r.log())
		}
	})
	return r
}

// cloudHost starts agent-sdk serve on a known address, so that it can
// advertise itself with --public-url when public is set.
func cloudHost(t *testing.T, c *mhCluster, model *fakemodel.Server, public bool) (*mhHost, string) {
	t.Helper()
	t.Setenv("CLOUD_WHERE", "host")
	addr := freeAddr(t)
	args := []string{"--addr", addr, "--lease-ttl", "2s"}
	if public {
		args = append(args, "--public-url", "http://"+addr)
	}
	h := c.host(t, "H", model, args...)
	return h, "http://" + addr + "/cloud"
}

// A cloud session's turns run on a runner: the model there calls a server
// tool (run on the host, over MCP, its result on the host's stream) and an
// agent tool (run in the runner's workspace); a gated server tool parks the
// turn, and approving it on the host lets a runner go on with it; a runner
// SIGKILLed mid-turn leaves the turn to the next claim (turn.resumed, the
// running call answered as interrupted), which finishes it.
func TestCloudTurnsOnARunner(t *testing.T) {
	c := cloudCluster(t)
	fake := c.fake(t, "(no more scripted replies)",
		fakemodel.Reply{Text: []string{"Checking."}, Calls: []fakemodel.Call{{ID: "tu_1", Name: "weather", Input: `{"city":"Oslo"}`}, {ID: "tu_2", Name: "pwd", Input: `{}`}}},
		fakemodel.Reply{Text: []string{"All ", "done."}},
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "tu_3", Name: "deploy", Input: `{}`}}},
		fakemodel.Reply{Text: []string{"Deployed."}},
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "tu_4", Name: "pwd", Input: `{"sleep":1}`}}},
	)
	h, base := cloudHost(t, c, fake, true)
	runner := startRunner(t, base, c.token, fake)

	status, v, err := mhDo(h.server, "POST", "/session", `{"message":"weather in Oslo?","mode":"cloud"}`)
	if err != nil || status != 201 {
		t.Fatalf("create a cloud session: %d %v %v", status, v, err)
	}
	sid, tid := v["sessionId"].(string), v["turnId"].(string)
	st := follow(t, h.server, sid, 0)
	evs := st.until(t, time.Minute, "the first cloud turn's end", func(e mhEvent) bool {
		return e.TurnID == tid && strings.HasPrefix(e.Kind, "turn.") && e.Kind != "turn.started"
	})
	if last := evs[len(evs)-1]; last.Kind != "turn.completed" {
		t.Fatalf("the first turn ended with %s\n%s", last, eventLines(evs))
	}
	if !inOrder(evs, "session.created turn.started message actions.requested action.result action.result message turn.completed") {
		t.Errorf("stream:\n%s", eventLines(evs))
	}
	checkSeqs(t, "the cloud session's stream", evs, 1)
	var weather, pwd map[string]any
	for _, e := range evs {
		if e.Kind != "action.result" {
			continue
		}
		res, _ := e.field("result").(map[string]any)
		switch e.field("tool") {
		case "weather":
			weather = res
		case "pwd":
			pwd = res
		}
	}
	if weather["ranOn"] != "host" || weather["session"] != sid {
		t.Errorf("the server tool's result: %v; want it run on the host, in the session", weather)
	}
	if dir, _ := pwd["dir"].(string); !strings.HasPrefix(dir, runner.work) || !strings.Contains(dir, sid) {
		t.Errorf("the agent tool ran in %q; want the runner's workspace under %s", dir, runner.work)
	}
	var output []mhEvent
	for _, e := range evs {
		if e.Kind == "action.output" && e.field("tool") == "pwd" {
			output = append(output, e)
		}
	}
	if len(output) != 1 || output[0].field("text") != "looking around\n" {
		t.Errorf("the agent tool's stderr on the host's stream: %v", output)
	}
	if reqs := fake.Requests(); len(reqs) < 2 || !strings.Contains(string(reqs[0]), `"weather"`) || !strings.Contains(string(reqs[0]), `"pwd"`) ||
		!strings.Contains(string(reqs[1]), "Oslo") {
		t.Errorf("the model's requests from the runner: %d, first %.400s", len(reqs), reqs[0])
	}

	// A gated server tool: the turn parks; approved on the host, a runner
	// goes on with it.
	status, v, err = mhDo(h.server, "POST", "/session/"+sid+"/messages", `{"message":"deploy it"}`)
	if err != nil || status != 202 {
		t.Fatalf("second message: %d %v %v", status, v, err)
	}
	tid2 := v["turnId"].(string)
	evs = st.until(t, time.Minute, "the deploy call parked", kindIs("action.approval_requested"))
	callID, _ := evs[len(evs)-1].field("callId").(string)
	if status, v, err := mhDo(h.server, "POST", "/session/"+sid+"/approvals/"+callID, `{"approved":true,"reason":"go"}`); err != nil || status != 200 {
		t.Fatalf("approve %s: %d %v %v", callID, status, v, err)
	}
	evs = st.until(t, time.Minute, "the second turn's end", func(e mhEvent) bool {
		return e.TurnID == tid2 && (e.Kind == "turn.completed" || e.Kind == "turn.failed")
	})
	if last := evs[len(evs)-1]; last.Kind != "turn.completed" {
		t.Fatalf("the gated turn ended with %s\n%s", last, eventLines(evs))
	}
	deployed := ofCall(evs, "action.result", callID)
	if len(deployed) != 1 || deployed[0].field("result") != "deployed" {
		t.Errorf("the approved call's result: %v", deployed)
	}
	if n := strings.Count(runner.log(), "running a cloud turn"); n < 3 {
		t.Errorf("the runner ran %d claims; want 3 (the first turn, the gated one before and after the decision)", n)
	}

	// The runner dies mid-call: the host's sweep answers the call as
	// interrupted and records turn.resumed; the next runner's claim
	// finishes the turn.
	status, v, err = mhDo(h.server, "POST", "/session/"+sid+"/messages", `{"message":"where are you?"}`)
	if err != nil || status != 202 {
		t.Fatalf("third message: %d %v %v", status, v, err)
	}
	tid3 := v["turnId"].(string)
	evs = st.until(t, time.Minute, "the slow agent tool requested", func(e mhEvent) bool { return e.TurnID == tid3 && e.Kind == "actions.requested" })
	slowCall, _ := evs[len(evs)-1].field("actions").([]any)[0].(map[string]any)["callId"].(string)
	time.Sleep(300 * time.Millisecond) // into the sleeping script
	killed := time.Now()
	runner.cmd.Process.Kill()
	evs = st.until(t, time.Minute, "the dead runner's turn resumed", func(e mhEvent) bool { return e.TurnID == tid3 && e.Kind == "turn.resumed" })
	t.Logf("the dead runner's turn was resumed %v after the SIGKILL (--lease-ttl 2s)", time.Since(killed).Round(time.Millisecond))
	if r := ofCall(evs, "action.result", slowCall); len(r) != 1 || r[0].field("isError") != true || !strings.Contains(fmt.Sprint(r[0].field("result")), "not retried") {
		t.Errorf("the interrupted call's result: %v", r)
	}
	if last := evs[len(evs)-1]; last.field("from") != "runner:r1" || last.field("attempt") != 1.0 {
		t.Errorf("turn.resumed: %s", last)
	}
	startRunner(t, base, c.token, fake)
	evs = st.until(t, time.Minute, "the resumed turn's end", func(e mhEvent) bool {
		return e.TurnID == tid3 && (e.Kind == "turn.completed" || e.Kind == "turn.failed")
	})
	if last := evs[len(evs)-1]; last.Kind != "turn.completed" {
		t.Fatalf("the resumed turn ended with %s\n%s", last, eventLines(evs))
	}
	if reqs := fake.Requests(); !strings.Contains(string(reqs[len(reqs)-1]), "interrupted by host restart; not retried") {
		t.Errorf("the next runner's model did not read the interruption: %.600s", reqs[len(reqs)-1])
	}
}

// Without --public-url or --cloud-tools-url the host warns at startup, and
// a cloud turn's model is offered the agent tools only (pwd, and the
// scaffold's scripts), and told so.
func TestCloudTurnWithoutToolsURL(t *testing.T) {
	c := cloudCluster(t)
	fake := c.fake(t, "Only local tools here.")
	h, base := cloudHost(t, c, fake, false)
	if !strings.Contains(h.logs(), "cloud turns will be offered the agent tools only") {
		t.Errorf("no warning at startup:\n%s", h.logs())
	}
	startRunner(t, base, c.token, fake)
	status, v, err := mhDo(h.server, "POST", "/session", `{"message":"hello","mode":"cloud"}`)
	if err != nil || status != 201 {
		t.Fatalf("create: %d %v %v", status, v, err)
	}
	st := follow(t, h.server, v["sessionId"].(string), 0)
	evs := st.until(t, time.Minute, "the turn's end", func(e mhEvent) bool { return e.Kind == "turn.completed" || e.Kind == "turn.failed" })
	if last := evs[len(evs)-1]; last.Kind != "turn.completed" {
		t.Fatalf("ended with %s\n%s", last, eventLines(evs))
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	var req struct {
		System any `json:"system"`
		Tools  []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(reqs[0], &req); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Name)
	}
	offered := " " + strings.Join(names, " ") + " "
	if !strings.Contains(offered, " pwd ") || strings.Contains(offered, " weather ") || strings.Contains(offered, " deploy ") ||
		!strings.Contains(fmt.Sprint(req.System), "not reachable") {
		t.Errorf("offered %v with system %v; want the agent tools only, and a note naming the others", names, req.System)
	}
}

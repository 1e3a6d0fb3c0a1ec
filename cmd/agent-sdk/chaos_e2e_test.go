package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/pgtest"
)

// The chaos test: a real agent host is SIGKILLed at random moments during
// bursts of every kind of write, and after each restart a checker holds the
// store to what the host acknowledged. TestSoak (soak_e2e_test.go) shares
// the agent, the process handling and the fake model defined here.

var (
	chaosRounds   = flag.Int("chaos.rounds", 10, "TestChaos: bursts, each ended by a SIGKILL of the host and checked after the restart")
	chaosSettle   = flag.Int("chaos.settle-every", 10, "TestChaos: let the host settle and check everything every this many rounds (and after the last)")
	chaosSeed     = flag.Uint64("chaos.seed", 0, "TestChaos: seed of the random choices (0: from the clock)")
	chaosPostgres = flag.Bool("chaos.postgres", false, "TestChaos: run it on PostgreSQL too (pgtest: TEST_DATABASE_URL or the local server)")
)

// chaosToken is the bearer token of every host these tests start.
const chaosToken = "asdk_chaos_test_token"

// chaosSlug is the agents' slug (their directory's name).
const chaosSlug = "chaos"

// The agent TestChaos and TestSoak serve: init's, with the tools of
// testdata/chaos (mark, gated, incr, procstats) and a model, built once per
// store driver.
var chaosBuild struct {
	once sync.Once
	dir  string
	err  error
	mu   sync.Mutex
	bins map[bool]string // by "with the PostgreSQL driver"
}

func chaosAgent(t *testing.T, postgres bool) (dir, bin string) {
	t.Helper()
	chaosBuild.once.Do(func() {
		dir := filepath.Join(filepath.Dir(cliBin), chaosSlug) // removed with TestMain's directory
		if err := newAgent(dir); err != nil {
			chaosBuild.err = err
			return
		}
		if err := addFixtures(dir, "chaos", "model:\n  provider: anthropic\n  name: fake-model\nmaxSteps: 4\ntoolConcurrency: 4\npricing:\n  fake-model: {input: 3, output: 15}\n"); err != nil {
			chaosBuild.err = err
			return
		}
		chaosBuild.dir, chaosBuild.bins = dir, map[bool]string{}
	})
	if chaosBuild.err != nil {
		t.Fatal(chaosBuild.err)
	}
	chaosBuild.mu.Lock()
	defer chaosBuild.mu.Unlock()
	if bin := chaosBuild.bins[postgres]; bin != "" {
		return chaosBuild.dir, bin
	}
	start := time.Now()
	bin, err := buildFixtureAgent(chaosBuild.dir, postgres)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built the chaos agent (postgres driver: %v) in %v", postgres, time.Since(start).Round(time.Millisecond))
	chaosBuild.bins[postgres] = bin
	return chaosBuild.dir, bin
}

// agentProc is one serving process of the agent's binary, started as
// `agent-sdk serve` starts it: serve builds the agent (or finds it cached)
// and execs the binary, in the agent's directory, with
// `serve --state … --slug …` and the serve flags; this runs the same
// binary the same way, built once by `agent-sdk build`, so that an edit of
// the SDK's sources while a test runs cannot make a restart rebuild.
type agentProc struct {
	cmd  *exec.Cmd
	base string // http://127.0.0.1:port/<slug>/v1
	done chan struct{}

	mu      sync.Mutex
	tail    []string // the last lines of its log, but for request logs
	notable []string // its WARN and ERROR records, and lines that are no log record (a panic)
}

// agentSpec says how to start a host: the binary, its directory, state
// directory, environment and serve flags.
type agentSpec struct {
	bin, dir, state string
	env             []string
	args            []string
}

func (sp agentSpec) start(t *testing.T) *agentProc {
	t.Helper()
	argv := append([]string{"serve", "--state", sp.state, "--slug", chaosSlug, "--addr", "127.0.0.1:0", "--token", chaosToken}, sp.args...)
	cmd := exec.Command(sp.bin, argv...)
	cmd.Dir = sp.dir
	cmd.Env = append(os.Environ(), sp.env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &agentProc{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(pipe)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if m := servingLine.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[2]:
				default:
				}
			}
			p.mu.Lock()
			if !strings.Contains(line, " msg=request ") { // request logs: too many to keep
				if p.tail = append(p.tail, line); len(p.tail) > 200 {
					p.tail = p.tail[len(p.tail)-100:]
				}
			}
			// The startup warning that cloud turns get no server tools (no
			// --public-url) is expected here.
			if (strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") || !strings.HasPrefix(line, "time=")) &&
				!strings.HasPrefix(line, "serving ") && !strings.Contains(line, "cloud turns will be offered the agent tools only") && len(p.notable) < 500 {
				p.notable = append(p.notable, line)
			}
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
		cmd.Wait()
	})
	select {
	case p.base = <-found:
	case <-p.done:
		cmd.Wait()
		t.Fatalf("the host exited:\n%s", p.logTail(50))
	case <-time.After(2 * time.Minute):
		t.Fatalf("the host did not start:\n%s", p.logTail(50))
	}
	return p
}

// kill SIGKILLs the process and waits until it is gone.
func (p *agentProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	p.cmd.Wait()
}

func (p *agentProc) logTail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail[max(0, len(p.tail)-n):], "\n")
}

func (p *agentProc) notableLines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.notable)
}

// chaosHTTP is the client of the tests' requests; followHTTP, with no
// timeout, that of their event streams.
var (
	chaosHTTP  = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	followHTTP = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
)

// apiDo sends a request with the chaos token and decodes the JSON answer.
func apiDo(ctx context.Context, base, method, path, body string) (int, map[string]any, error) {
	return doJSON(ctx, chaosHTTP, chaosToken, base, method, path, body)
}

// doJSON sends a request with a bearer token and decodes the JSON
// answer, without failing the test (for goroutines). An error is the
// request's: no answer, or an answer that is not JSON.
func doJSON(ctx context.Context, hc *http.Client, token, base, method, path, body string) (int, map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("%s %s: %d, not JSON: %.200s", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode, v, nil
}

// errCode is an error answer's code.
func errCode(v map[string]any) string {
	e, _ := v["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// chaosModel is a fake Anthropic API that answers each model request from
// the conversation, so that concurrent turns do not take each other's
// answers: a request whose last message is the user's text gets tool
// calls, one per word of that text that names a tool (mark, gated), with
// ids unique over the test; any other request (tool results) gets text.
// It speaks through two internal/fakemodel servers.
type chaosModel struct {
	front       *httptest.Server
	calls, text *fakemodel.Server
	mu          sync.Mutex // held from a push to the calls server until it took the reply
	n           int
}

func newChaosModel(t *testing.T) *chaosModel {
	m := &chaosModel{calls: fakemodel.New(), text: fakemodel.New()}
	m.text.SetDefault(fakemodel.Reply{Text: []string{"Done", "."}})
	m.front = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(func() {
		m.front.Close()
		m.calls.Close()
		m.text.Close()
	})
	return m
}

func (m *chaosModel) env() []string {
	return []string{"ANTHROPIC_BASE_URL=" + m.front.URL, "ANTHROPIC_API_KEY=test-key"}
}

func (m *chaosModel) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(body, &req)
	var words []string
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" {
		var blocks []struct{ Type, Text string }
		var text string
		if json.Unmarshal(req.Messages[n-1].Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_result" {
					words, text = nil, ""
					break
				}
				text += " " + b.Text
			}
		} else {
			json.Unmarshal(req.Messages[n-1].Content, &text)
		}
		words = strings.Fields(text)
	}
	target := m.text
	m.mu.Lock()
	var calls []fakemodel.Call
	for _, w := range words {
		switch w {
		case "mark":
			m.n++
			calls = append(calls, fakemodel.Call{ID: fmt.Sprintf("toolu_%06d", m.n), Name: "mark", Input: fmt.Sprintf(`{"note":"turn-%d","sleepMs":100}`, m.n)})
		case "gated":
			m.n++
			calls = append(calls, fakemodel.Call{ID: fmt.Sprintf("toolu_%06d", m.n), Name: "gated", Input: fmt.Sprintf(`{"note":"turn-%d","sleepMs":50}`, m.n)})
		}
	}
	if len(calls) > 0 {
		m.calls.Push(fakemodel.Reply{Text: []string{"On it."}, Calls: calls})
		target = m.calls
	}
	resp, err := fakemodel.Forward(r, body, target.URL)
	m.mu.Unlock() // the fake took its reply before it answered the headers
	fakemodel.Relay(w, resp, err)
}

// chaosEvent is a stored or streamed event.
type chaosEvent struct {
	Seq    int64           `json:"seq"`
	TurnID string          `json:"turnId"`
	Kind   string          `json:"kind"`
	Data   json.RawMessage `json:"data"`
}

func (e chaosEvent) String() string {
	return fmt.Sprintf("%d %s %s %s", e.Seq, e.TurnID, e.Kind, e.Data)
}

// str returns a string field of the event's data.
func (e chaosEvent) str(name string) string {
	var m map[string]any
	json.Unmarshal(e.Data, &m)
	s, _ := m[name].(string)
	return s
}

// follower follows a session's event stream across the host's deaths,
// reconnecting to the current host with Last-Event-ID, and keeps what it
// read. It notes every event that does not follow the one before.
type follower struct {
	session string
	mu      sync.Mutex
	events  []chaosEvent
	faults  []string
	conns   int
}

func (f *follower) run(ctx context.Context, base func() string) {
	for ctx.Err() == nil {
		f.stream(ctx, base())
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (f *follower) last() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.events) == 0 {
		return 0
	}
	return f.events[len(f.events)-1].Seq
}

func (f *follower) stream(ctx context.Context, base string) {
	if base == "" {
		return
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/session/"+f.session+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+chaosToken)
	if last := f.last(); last > 0 {
		req.Header.Set("Last-Event-ID", fmt.Sprint(last))
	}
	resp, err := followHTTP.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		f.fault("the stream answered %d", resp.StatusCode)
		return
	}
	f.mu.Lock()
	f.conns++
	f.mu.Unlock()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var id, kind, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data == "" {
				continue
			}
			var e chaosEvent
			if err := json.Unmarshal([]byte(data), &e); err != nil || fmt.Sprint(e.Seq) != id || e.Kind != kind {
				f.fault("a malformed event: id %q, event %q, data %s (%v)", id, kind, data, err)
				return
			}
			f.mu.Lock()
			if want := int64(len(f.events)) + 1; e.Seq != want {
				f.faults = append(f.faults, fmt.Sprintf("read seq %d after %d (a gap or a repeat): %s", e.Seq, want-1, e))
			} else {
				f.events = append(f.events, e)
			}
			f.mu.Unlock()
			id, kind, data = "", "", ""
		case strings.HasPrefix(line, "id: "):
			id = line[len("id: "):]
		case strings.HasPrefix(line, "event: "):
			kind = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		}
	}
}

func (f *follower) fault(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, fmt.Sprintf(format, args...))
}

// ackedCall is a session-bound call the host answered 200.
type ackedCall struct {
	session string
	result  json.RawMessage
}

// ledger is what the hosts acknowledged (a 2xx answer), over all rounds,
// and what was attempted.
type ledger struct {
	mu         sync.Mutex
	sessions   map[string]bool      // sessions created (201)
	turns      map[string]string    // turns started (201 with a message, 202): turn → session
	sessCalls  map[string]ackedCall // session-bound direct calls answered (200): call → session
	direct     map[string]bool      // direct calls of mark outside sessions answered (200)
	parked     map[string]string    // gated calls parked (202): call → session ("" outside any)
	approved   map[string]bool      // approvals answered (200)
	incrValues map[int64]int        // values written by answered increments, counted
	incrAcked  int
	incrTried  int
	// per kind: requests sent, answered 2xx, in the current round
	sent, acked map[string]int
	// answers that are neither 2xx nor an expected refusal, and requests
	// that failed while the host was up
	unexpected []string
}

func newLedger() *ledger {
	return &ledger{sessions: map[string]bool{}, turns: map[string]string{}, sessCalls: map[string]ackedCall{}, direct: map[string]bool{},
		parked: map[string]string{}, approved: map[string]bool{}, incrValues: map[int64]int{}, sent: map[string]int{}, acked: map[string]int{}}
}

// note records a request of kind and its answer; ok says it was
// acknowledged, and then record (if any) runs under the ledger's lock.
func (l *ledger) note(kind string, ok bool, record func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent[kind]++
	if ok {
		l.acked[kind]++
		if record != nil {
			record()
		}
	}
}

func (l *ledger) odd(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.unexpected) < 100 {
		l.unexpected = append(l.unexpected, fmt.Sprintf(format, args...))
	}
}

// chaos is one run of the chaos test on one store.
type chaos struct {
	t       *testing.T
	spec    agentSpec
	host    *agentProc
	current atomic.Pointer[string] // the live host's base URL, for the followers
	l       *ledger
	rng     *rand.Rand
	seed    uint64

	callSessions  []string // sessions of the session-bound call workers
	modelSessions []string // sessions of the model turn workers
	gatedSession  string   // session of the session-bound gated calls
	followers     []*follower

	snapshot map[string][]chaosEvent // every session's events at the last check
	killedAt time.Time               // when the current burst's host was killed (zero while it runs)
	kills    []time.Time             // when each round's host was killed
	killMu   sync.Mutex
	hosts    int      // processes started
	notable  []string // the warnings and errors the killed hosts logged
}

// TestChaos SIGKILLs a real host at random moments during bursts of
// session-bound direct calls, model turns whose model asks for parallel
// tool calls (one of them gated), gated calls parked and approved (outside
// and inside sessions), KV compare-and-set increments made by a tool, and
// session creations, with SSE clients following sessions throughout. After
// each restart a checker asserts that every acknowledged write is there,
// that every stream is whole (seq 1..n, no repeat, no gap, the same for
// clients that resumed across the kills), that no call ran twice and no
// gated call ran unapproved, and that the KV counter is within what was
// acknowledged and attempted.
func TestChaos(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { runChaos(t, nil) })
	t.Run("postgres", func(t *testing.T) {
		if !*chaosPostgres {
			t.Skip("run with -chaos.postgres")
		}
		runChaos(t, []string{"--store", pgtest.Schema(t)})
	})
}

func runChaos(t *testing.T, storeArgs []string) {
	dir, bin := chaosAgent(t, len(storeArgs) > 0)
	model := newChaosModel(t)
	seed := *chaosSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-chaos.seed to repeat the random choices; the kills' timing is the machine's)", seed)
	c := &chaos{t: t, l: newLedger(), rng: rand.New(rand.NewPCG(seed, 1)), seed: seed, snapshot: map[string][]chaosEvent{},
		spec: agentSpec{bin: bin, dir: dir, state: t.TempDir(), env: model.env(),
			args: append([]string{"--lease-ttl", "1s", "--approval-wait", "0s"}, storeArgs...)}}
	t.Cleanup(func() {
		if t.Failed() && c.host != nil {
			t.Logf("the last host's log ends with:\n%s", c.host.logTail(60))
			notable := c.hostNotes()
			t.Logf("the warnings and errors of every host (%d):\n%s", len(notable), strings.Join(notable[:min(len(notable), 100)], "\n"))
		}
	})
	c.restart()
	c.setUp()
	ctx, cancel := context.WithCancel(context.Background())
	var fwg sync.WaitGroup
	defer func() {
		cancel()
		fwg.Wait()
	}()
	for _, f := range c.followers {
		fwg.Go(func() { f.run(ctx, func() string { return *c.current.Load() }) })
	}

	start := time.Now()
	for round := 1; round <= *chaosRounds; round++ {
		c.round(round)
		if round%max(*chaosSettle, 1) == 0 || round == *chaosRounds {
			// The host settles: it closes the turns the kills
			// interrupted, runs what was approved, and the model turns
			// go on to their end. Then everything is checked.
			settled := c.settle()
			t.Logf("after round %d the host settled in %v; the full check: %s", round, settled.Round(time.Millisecond), c.check(true))
		}
		if t.Failed() {
			t.Fatalf("round %d failed; stopping", round)
		}
	}
	notable := c.hostNotes()
	t.Logf("%d rounds in %v; the hosts' warnings and errors (%d):\n%s", *chaosRounds, time.Since(start).Round(time.Millisecond),
		len(notable), strings.Join(notable[:min(len(notable), 30)], "\n"))
}

// hostNotes returns the warnings and errors every host logged.
func (c *chaos) hostNotes() []string {
	notes := slices.Clone(c.notable)
	for _, line := range c.host.notableLines() {
		notes = append(notes, fmt.Sprintf("  host %d: %s", c.hosts, line))
	}
	return notes
}

// restart starts the host (again) on the same state.
func (c *chaos) restart() {
	c.t.Helper()
	if c.host != nil {
		for _, line := range c.host.notableLines() {
			c.notable = append(c.notable, fmt.Sprintf("  host %d: %s", c.hosts, line))
		}
	}
	c.hosts++
	c.host = c.spec.start(c.t)
	base := c.host.base
	c.current.Store(&base)
}

// setUp opens the sessions the workers use and the followers follow.
func (c *chaos) setUp() {
	t := c.t
	open := func() string {
		status, v, err := apiDo(context.Background(), c.host.base, "POST", "/session", `{}`)
		id, _ := v["sessionId"].(string)
		if err != nil || status != 201 || id == "" {
			t.Fatalf("opening a session: %d %v %v", status, v, err)
		}
		c.l.sessions[id] = true
		c.followers = append(c.followers, &follower{session: id})
		return id
	}
	for range 3 {
		c.callSessions = append(c.callSessions, open())
	}
	for range 2 {
		c.modelSessions = append(c.modelSessions, open())
	}
	c.gatedSession = open()
}

// round runs a burst, kills the host at a random moment in it, restarts
// the host and checks what must hold at any moment. The host does not
// settle in between: a turn the kill interrupted whose lease had not run
// out when the host started again is closed by the sweep River's leader
// runs, and the dead process stays River's leader for 10 to 20 s after a
// SIGKILL. The next burst starts at once; the interrupted turns' sessions
// take new turns as soon as their leases run out (1 s).
func (c *chaos) round(n int) {
	t := c.t
	c.l.mu.Lock()
	c.l.sent, c.l.acked = map[string]int{}, map[string]int{}
	c.l.mu.Unlock()
	c.killMu.Lock()
	c.killedAt = time.Time{}
	c.killMu.Unlock()

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	c.startWorkers(ctx, &wg, c.host.base, n)
	burst := time.Duration(300+c.rng.IntN(2200)) * time.Millisecond
	time.Sleep(burst)
	c.killMu.Lock()
	c.killedAt = time.Now()
	c.kills = append(c.kills, c.killedAt)
	c.killMu.Unlock()
	c.host.kill(t)
	cancel()
	wg.Wait()
	c.l.mu.Lock()
	sent, acked := c.l.sent, c.l.acked
	c.l.mu.Unlock()

	restarted := time.Now()
	c.restart()
	up := time.Since(restarted)
	v := c.check(false)
	t.Logf("round %d: SIGKILL after a %v burst; requests sent/acknowledged: %s; restarted in %v; checked: %s",
		n, burst, kindCounts(sent, acked), up.Round(time.Millisecond), v)
}

func kindCounts(sent, acked map[string]int) string {
	var kinds []string
	for k := range sent {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d/%d", k, sent[k], acked[k]))
	}
	return strings.Join(parts, ", ")
}

// killTimes lists when the hosts were killed.
func (c *chaos) killTimes() string {
	c.killMu.Lock()
	defer c.killMu.Unlock()
	var ts []string
	for _, k := range c.kills {
		ts = append(ts, k.UTC().Format("15:04:05.000000"))
	}
	return strings.Join(ts, ", ")
}

// failedWhileUp records a request that failed before the host was killed.
func (c *chaos) failedWhileUp(what string, err error) {
	c.killMu.Lock()
	killed := c.killedAt
	c.killMu.Unlock()
	if killed.IsZero() {
		c.l.odd("%s failed while the host was up: %v", what, err)
	}
}

// startWorkers starts the burst's workers against the host at base; they
// stop when ctx ends or the host stops answering.
func (c *chaos) startWorkers(ctx context.Context, wg *sync.WaitGroup, base string, round int) {
	l := c.l
	seed := c.rng.Uint64()
	worker := func(i int, body func(rng *rand.Rand, n int) bool) {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for n := 0; ctx.Err() == nil; n++ {
				if !body(rng, n) {
					return
				}
			}
		})
	}
	// do sends one request; false means stop (the host is gone).
	do := func(kind, method, path, body string) (int, map[string]any, bool) {
		status, v, err := apiDo(ctx, base, method, path, body)
		if err != nil {
			if ctx.Err() == nil {
				c.failedWhileUp(kind, err)
			}
			l.note(kind, false, nil)
			return 0, nil, false
		}
		return status, v, true
	}
	pause := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	unexpected := func(kind string, status int, v map[string]any) {
		l.odd("%s: answered %d %v", kind, status, v)
	}

	// Session-bound direct calls, one worker per session.
	for i, sid := range c.callSessions {
		worker(i, func(rng *rand.Rand, n int) bool {
			body := fmt.Sprintf(`{"input":{"note":"r%d-s%d-%d","sleepMs":%d},"sessionId":%q}`, round, i, n, rng.IntN(30), sid)
			status, v, ok := do("session call", "POST", "/tools/mark", body)
			if !ok {
				return false
			}
			switch {
			case status == 200 && v["isError"] == false:
				callID, _ := v["callId"].(string)
				result, _ := json.Marshal(v["result"])
				l.note("session call", true, func() { l.sessCalls[callID] = ackedCall{sid, result} })
			case status == 409 && errCode(v) == "session_busy": // a turn the kill interrupted holds it until its lease runs out
				l.note("session call", false, nil)
				return pause(50 * time.Millisecond)
			default:
				l.note("session call", false, nil)
				unexpected("session call", status, v)
			}
			return true
		})
	}
	// Direct calls outside sessions.
	worker(10, func(rng *rand.Rand, n int) bool {
		status, v, ok := do("direct call", "POST", "/tools/mark", fmt.Sprintf(`{"input":{"note":"r%d-d-%d","sleepMs":%d}}`, round, n, rng.IntN(30)))
		if !ok {
			return false
		}
		if status == 200 && v["isError"] == false {
			callID, _ := v["callId"].(string)
			l.note("direct call", true, func() { l.direct[callID] = true })
		} else {
			l.note("direct call", false, nil)
			unexpected("direct call", status, v)
		}
		return true
	})
	// Model turns: the model asks for three marks in parallel, and
	// sometimes a gated call too, which parks the turn until approved.
	for i, sid := range c.modelSessions {
		worker(20+i, func(rng *rand.Rand, n int) bool {
			msg := "mark mark mark"
			if rng.IntN(2) == 0 {
				msg += " gated"
			}
			status, v, ok := do("message", "POST", "/session/"+sid+"/messages", fmt.Sprintf(`{"message":%q}`, msg))
			if !ok {
				return false
			}
			switch {
			case status == 202:
				turn, _ := v["turnId"].(string)
				l.note("message", true, func() { l.turns[turn] = sid })
			case status == 409 && errCode(v) == "session_busy":
				l.note("message", false, nil)
			default:
				l.note("message", false, nil)
				unexpected("message", status, v)
			}
			return pause(50 * time.Millisecond)
		})
	}
	// New sessions, each with a model turn.
	worker(30, func(rng *rand.Rand, n int) bool {
		status, v, ok := do("new session", "POST", "/session", `{"message":"mark mark"}`)
		if !ok {
			return false
		}
		if sid, _ := v["sessionId"].(string); status == 201 && sid != "" {
			turn, _ := v["turnId"].(string)
			l.note("new session", true, func() {
				l.sessions[sid] = true
				l.turns[turn] = sid
			})
		} else {
			l.note("new session", false, nil)
			unexpected("new session", status, v)
		}
		return pause(time.Duration(100+rng.IntN(200)) * time.Millisecond)
	})
	// Gated calls, parked: outside any session, and in a session (where
	// the call's turn holds the session until it has run).
	worker(40, func(rng *rand.Rand, n int) bool {
		body := fmt.Sprintf(`{"input":{"note":"r%d-g-%d","sleepMs":%d}}`, round, n, rng.IntN(300))
		status, v, ok := do("gated call", "POST", "/tools/gated", body)
		if !ok {
			return false
		}
		if callID, _ := v["callId"].(string); status == 202 && v["status"] == "approval_pending" && callID != "" {
			l.note("gated call", true, func() { l.parked[callID] = "" })
		} else {
			l.note("gated call", false, nil)
			unexpected("gated call", status, v)
		}
		return pause(time.Duration(rng.IntN(100)) * time.Millisecond)
	})
	worker(41, func(rng *rand.Rand, n int) bool {
		body := fmt.Sprintf(`{"input":{"note":"r%d-gs-%d","sleepMs":%d},"sessionId":%q}`, round, n, rng.IntN(100), c.gatedSession)
		status, v, ok := do("gated session call", "POST", "/tools/gated", body)
		if !ok {
			return false
		}
		switch callID, _ := v["callId"].(string); {
		case status == 202 && v["status"] == "approval_pending" && callID != "":
			l.note("gated session call", true, func() { l.parked[callID] = c.gatedSession })
		case status == 409 && errCode(v) == "session_busy":
			l.note("gated session call", false, nil)
		default:
			l.note("gated session call", false, nil)
			unexpected("gated session call", status, v)
		}
		return pause(50 * time.Millisecond)
	})
	// The approver approves whatever is pending.
	worker(50, func(rng *rand.Rand, n int) bool {
		if !c.approvePending(rng, do) {
			return false
		}
		return pause(time.Duration(20+rng.IntN(60)) * time.Millisecond)
	})
	// KV compare-and-set increments, by three workers on one counter.
	for i := range 3 {
		worker(60+i, func(rng *rand.Rand, n int) bool {
			l.mu.Lock()
			l.incrTried++
			l.mu.Unlock()
			status, v, ok := do("incr", "POST", "/tools/incr", `{"input":{"key":"chaos/counter"}}`)
			if !ok {
				return false
			}
			res, _ := v["result"].(map[string]any)
			value, isNum := res["value"].(float64)
			if status == 200 && v["isError"] == false && isNum {
				l.note("incr", true, func() {
					l.incrAcked++
					l.incrValues[int64(value)]++
				})
			} else {
				l.note("incr", false, nil)
				unexpected("incr", status, v)
			}
			return true
		})
	}
}

// approvePending approves every pending call, once each, recording the
// acknowledged approvals; false means the host is gone.
func (c *chaos) approvePending(rng *rand.Rand, do func(kind, method, path, body string) (int, map[string]any, bool)) bool {
	l := c.l
	status, v, ok := do("list approvals", "GET", "/approvals?status=pending&limit=1000", "")
	if !ok {
		return false
	}
	list, _ := v["approvals"].([]any)
	if status != 200 {
		l.odd("listing approvals: %d %v", status, v)
		return true
	}
	l.note("list approvals", true, nil)
	if rng != nil {
		rng.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
	}
	for _, a := range list {
		callID, _ := a.(map[string]any)["callId"].(string)
		status, v, ok := do("approval", "POST", "/approvals/"+callID, `{"approved":true,"onBehalfOf":"chaos"}`)
		if !ok {
			return false
		}
		switch {
		case status == 200:
			l.note("approval", true, func() { l.approved[callID] = true })
		case status == 409 && errCode(v) == "already_resolved":
			l.note("approval", false, nil)
		default:
			l.note("approval", false, nil)
			l.odd("approving %s: %d %v", callID, status, v)
		}
	}
	return true
}

// settle waits until the restarted host has closed the turns the kill
// interrupted, every parked call is approved (it approves them) and run,
// and no turn runs; it returns how long that took.
func (c *chaos) settle() time.Duration {
	t := c.t
	start := time.Now()
	ctx := context.Background()
	base := c.host.base
	do := func(kind, method, path, body string) (int, map[string]any, bool) {
		status, v, err := apiDo(ctx, base, method, path, body)
		if err != nil {
			c.l.odd("%s while settling: %v", kind, err)
			return 0, nil, false
		}
		return status, v, true
	}
	var busy []string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if !c.approvePending(nil, do) {
			t.Fatalf("the restarted host stopped answering:\n%s", c.host.logTail(40))
		}
		busy = nil
		for _, sid := range c.sessionIDs() {
			status, v, ok := do("get session", "GET", "/session/"+sid, "")
			s, _ := v["session"].(map[string]any)
			if !ok || status != 200 {
				busy = append(busy, fmt.Sprintf("session %s: %d %v", sid, status, v))
				continue
			}
			if turn, _ := s["runningTurn"].(string); turn != "" {
				busy = append(busy, fmt.Sprintf("session %s runs turn %s", sid, turn))
			}
		}
		for _, a := range c.approvals() {
			if a.Status == "pending" || a.Outcome == nil {
				busy = append(busy, fmt.Sprintf("call %s (%s, session %q) is %s with no outcome", a.CallID, a.Tool, a.SessionID, a.Status))
			}
		}
		if len(busy) == 0 {
			return time.Since(start)
		}
	}
	t.Errorf("the host did not settle within 2 minutes after the restart:\n  %s", strings.Join(busy, "\n  "))
	return time.Since(start)
}

// sessionIDs lists every session the host has.
func (c *chaos) sessionIDs() []string {
	t := c.t
	var ids []string
	for cursor := ""; ; {
		status, v, err := apiDo(context.Background(), c.host.base, "GET", "/sessions?limit=1000&cursor="+cursor, "")
		if err != nil || status != 200 {
			t.Fatalf("listing sessions: %d %v %v", status, v, err)
		}
		list, _ := v["sessions"].([]any)
		for _, s := range list {
			ids = append(ids, s.(map[string]any)["id"].(string))
		}
		if cursor, _ = v["next"].(string); cursor == "" {
			return ids
		}
	}
}

// chaosApproval is an approval as the host lists it.
type chaosApproval struct {
	CallID    string     `json:"callId"`
	SessionID string     `json:"sessionId"`
	TurnID    string     `json:"turnId"`
	Tool      string     `json:"tool"`
	Status    string     `json:"status"`
	DecidedBy string     `json:"decidedBy"`
	DecidedAt *time.Time `json:"decidedAt"`
	Outcome   *struct {
		IsError bool            `json:"isError"`
		Result  json.RawMessage `json:"result"`
	} `json:"outcome"`
}

// approvals lists every approval the host has.
func (c *chaos) approvals() []chaosApproval {
	t := c.t
	var all []chaosApproval
	for cursor := ""; ; {
		req, _ := http.NewRequest("GET", c.host.base+"/approvals?limit=1000&cursor="+cursor, nil)
		req.Header.Set("Authorization", "Bearer "+chaosToken)
		resp, err := chaosHTTP.Do(req)
		if err != nil {
			t.Fatalf("listing approvals: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var page struct {
			Approvals []chaosApproval `json:"approvals"`
			Next      string          `json:"next"`
		}
		if err := json.Unmarshal(body, &page); err != nil || resp.StatusCode != 200 {
			t.Fatalf("listing approvals: %d %s", resp.StatusCode, body)
		}
		all = append(all, page.Approvals...)
		if cursor = page.Next; cursor == "" {
			return all
		}
	}
}

// storedEvents returns every stored event of a session.
func (c *chaos) storedEvents(sid string) []chaosEvent {
	t := c.t
	var all []chaosEvent
	for {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/session/%s/events?follow=false&limit=10000&after=%d", c.host.base, sid, int64(len(all))), nil)
		req.Header.Set("Authorization", "Bearer "+chaosToken)
		resp, err := chaosHTTP.Do(req)
		if err != nil {
			t.Fatalf("events of %s: %v", sid, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var page struct {
			Events []chaosEvent `json:"events"`
		}
		if err := json.Unmarshal(body, &page); err != nil || resp.StatusCode != 200 {
			t.Fatalf("events of %s: %d %s", sid, resp.StatusCode, body)
		}
		all = append(all, page.Events...)
		if len(page.Events) == 0 || len(all) > 0 && all[len(all)-1].Seq != int64(len(all)) {
			return all // done, or numbered so that "after" cannot page on: checkStream says so
		}
	}
}

// fileLines counts the lines of a tool's side-effect file by call id.
func fileLines(path string) map[string]int {
	counts := map[string]int{}
	b, _ := os.ReadFile(path)
	for line := range strings.Lines(string(b)) {
		callID, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		counts[callID]++
	}
	return counts
}

// check verifies what the host holds against the ledger and returns a
// summary of what it verified. Once the host has settled (full), every
// turn has ended, every parked call is approved and has its outcome, each
// streamed once after its decision, and every call of a completed turn
// has its result; before, these may be on their way.
func (c *chaos) check(full bool) string {
	t := c.t
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, u := range l.unexpected {
		t.Errorf("unexpected: %s", u)
	}
	l.unexpected = nil

	// Streams: every session's stored events.
	sids := c.sessionIDs()
	events := map[string][]chaosEvent{}
	results := map[string][]chaosEvent{} // call → its action.result events, in any session
	nEvents, interruptedTurns, unanswered, resumedTurns := 0, 0, 0, 0
	for _, sid := range sids {
		evs := c.storedEvents(sid)
		events[sid] = evs
		nEvents += len(evs)
		i, u, r := c.checkStream(sid, evs, full)
		interruptedTurns += i
		unanswered += u
		resumedTurns += r
		for _, e := range evs {
			if e.Kind == "action.result" {
				results[e.str("callId")] = append(results[e.str("callId")], e)
			}
		}
	}
	for sid := range l.sessions {
		if evs := events[sid]; len(evs) == 0 || evs[0].Kind != "session.created" {
			t.Errorf("acknowledged session %s: not listed, or its stream does not start with session.created", sid)
		}
	}
	// Clients that followed the streams across the kills read exactly
	// what is stored: all of it, by now (or more: the host may have
	// appended since the events were read for this check).
	resumes := 0
	for _, f := range c.followers {
		stored := events[f.session]
		deadline := time.Now().Add(20 * time.Second)
		for f.last() < int64(len(stored)) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		f.mu.Lock()
		for _, fault := range f.faults {
			t.Errorf("the client following %s: %s", f.session, fault)
		}
		f.faults = nil
		read := slices.Clone(f.events)
		resumes += f.conns
		f.mu.Unlock()
		if len(read) > len(stored) {
			stored = c.storedEvents(f.session)
		}
		n := min(len(read), len(stored))
		switch {
		case len(read) < len(events[f.session]):
			t.Errorf("the client following %s read %d events; %d are stored", f.session, len(read), len(events[f.session]))
		case eventsText(read[:n]) != eventsText(stored[:n]):
			t.Errorf("the client following %s read other events than are stored:\n%s\nstored:\n%s", f.session, eventsText(read), eventsText(stored))
		}
	}

	// Turns started are there, once each.
	for turn, sid := range l.turns {
		n := 0
		for _, e := range events[sid] {
			if e.Kind == "turn.started" && e.TurnID == turn {
				n++
			}
		}
		if n != 1 {
			t.Errorf("acknowledged turn %s of %s: %d turn.started", turn, sid, n)
		}
	}
	// Session-bound calls: their result once, in their session, as answered.
	marks := fileLines(filepath.Join(c.spec.state, "marks"))
	for callID, ac := range l.sessCalls {
		rs := results[callID]
		if len(rs) != 1 || !sameInSession(events[ac.session], rs[0]) {
			t.Errorf("acknowledged session call %s: %d action.result (want 1, in %s): %v", callID, len(rs), ac.session, rs)
			continue
		}
		var got struct {
			Result json.RawMessage `json:"result"`
			Direct bool            `json:"direct"`
		}
		json.Unmarshal(rs[0].Data, &got)
		if !jsonEqual(got.Result, ac.result) || !got.Direct {
			t.Errorf("acknowledged session call %s: stored %s, answered %s", callID, rs[0].Data, ac.result)
		}
		if marks[callID] != 1 {
			t.Errorf("acknowledged session call %s ran %d times", callID, marks[callID])
		}
	}
	for callID := range l.direct {
		if marks[callID] != 1 {
			t.Errorf("acknowledged direct call %s ran %d times", callID, marks[callID])
		}
	}
	for callID, n := range marks {
		if n > 1 {
			t.Errorf("mark call %s ran %d times", callID, n)
		}
	}

	// Approvals: every parked call is there, every approval held, no
	// gated call ran unapproved or twice, each approved call has one
	// outcome, streamed once in its session after its decision.
	approvals := map[string]chaosApproval{}
	for _, a := range c.approvals() {
		approvals[a.CallID] = a
	}
	gatedRuns := fileLines(filepath.Join(c.spec.state, "gated-runs"))
	for callID, sid := range l.parked {
		if a, ok := approvals[callID]; !ok || a.SessionID != sid || a.Tool != "gated" {
			t.Errorf("acknowledged parked call %s (session %q): stored as %+v (found: %v)", callID, sid, a, ok)
		}
	}
	for callID := range l.approved {
		if a := approvals[callID]; a.Status != "approved" || a.DecidedBy != "bearer-token:chaos" {
			t.Errorf("acknowledged approval of %s: stored as %+v", callID, a)
		}
	}
	ran, interruptedCalls := 0, 0
	for callID, n := range gatedRuns {
		if a, ok := approvals[callID]; !ok || a.Status != "approved" {
			t.Errorf("gated call %s ran %d times without an approval: %+v", callID, n, a)
		}
		if n > 1 {
			t.Errorf("approved call %s ran %d times", callID, n)
		}
	}
	pending, undone := 0, 0
	for callID, a := range approvals {
		switch {
		case a.Status == "pending" && !full:
			pending++
			continue
		case a.Status != "approved":
			t.Errorf("call %s: %s (every parked call is approved)", callID, a.Status)
			continue
		case a.Outcome == nil && !full:
			undone++ // running, or its host died: recorded as interrupted once River's leader watches it
		case a.Outcome == nil:
			t.Errorf("approved call %s has no outcome", callID)
			continue
		case !a.Outcome.IsError:
			ran++
			if gatedRuns[callID] != 1 {
				t.Errorf("approved call %s succeeded, but ran %d times", callID, gatedRuns[callID])
			}
		case strings.Contains(string(a.Outcome.Result), "interrupted by host restart; not retried"):
			interruptedCalls++
		default:
			t.Errorf("approved call %s failed: %s", callID, a.Outcome.Result)
		}
		if a.SessionID == "" {
			if len(results[callID]) != 0 {
				t.Errorf("call %s outside any session has results streamed: %v", callID, results[callID])
			}
			continue
		}
		evs := events[a.SessionID]
		rs, decided := ofKind(evs, "action.result", callID), ofKind(evs, "action.approval_resolved", callID)
		switch {
		case full && (len(rs) != 1 || len(decided) != 1):
			t.Errorf("approved call %s in %s (turn %s), outcome %s, decided at %v: %d action.result and %d action.approval_resolved, want 1 and 1; "+
				"the hosts were killed at %s; the events of its turn and about it:\n%s",
				callID, a.SessionID, a.TurnID, outcomeText(a), a.DecidedAt, len(rs), len(decided), c.killTimes(), eventsText(aboutCall(evs, callID, a.TurnID)))
		case len(rs) == 0:
		case len(decided) == 0 || decided[0].Seq > rs[0].Seq:
			t.Errorf("approved call %s in %s: its action.result (seq %d) has no action.approval_resolved before it (%v); decided at %v, the hosts were killed at %s; the events of its turn and about it:\n%s",
				callID, a.SessionID, rs[0].Seq, decided, a.DecidedAt, c.killTimes(), eventsText(aboutCall(evs, callID, a.TurnID)))
		case a.Outcome == nil || !strings.Contains(string(rs[0].Data), `"isError":`+fmt.Sprint(a.Outcome.IsError)):
			t.Errorf("approved call %s: outcome %s, streamed %s", callID, outcomeText(a), rs[0].Data)
		}
	}

	// KV: the counter holds every acknowledged increment, and no more than
	// were attempted; each acknowledged increment wrote a value of its own.
	status, v, err := apiDo(context.Background(), c.host.base, "POST", "/tools/incr", `{"input":{"key":"chaos/counter","read":true}}`)
	res, _ := v["result"].(map[string]any)
	counterF, isNum := res["value"].(float64)
	counter := int64(counterF)
	if err != nil || status != 200 || !isNum {
		t.Errorf("reading the counter: %d %v %v", status, v, err)
	}
	if counter < int64(l.incrAcked) || counter > int64(l.incrTried) {
		t.Errorf("the counter is %d; %d increments were acknowledged, %d attempted", counter, l.incrAcked, l.incrTried)
	}
	for value, n := range l.incrValues {
		if n > 1 || value < 1 || value > counter {
			t.Errorf("%d acknowledged increments wrote %d (the counter is %d)", n, value, counter)
		}
	}

	c.snapshot = events
	return fmt.Sprintf("%d sessions, %d events (%d turns resumed, %d closed as interrupted, %d of their calls parked for a decision), %d client (re)connections; "+
		"%d turns, %d session calls, %d direct calls acknowledged, %d mark runs; %d parked calls (%d acknowledged): %d pending, %d approved (%d acknowledged) of which %d ran, %d interrupted, %d under way; "+
		"counter %d (acknowledged %d, attempted %d)",
		len(sids), nEvents, resumedTurns, interruptedTurns, unanswered, resumes,
		len(l.turns), len(l.sessCalls), len(l.direct), len(marks), len(approvals), len(l.parked), pending, len(approvals)-pending, len(l.approved),
		ran, interruptedCalls, undone, counter, l.incrAcked, l.incrTried)
}

// checkStream checks one session's stored events: numbered 1..n, what the
// last check saw still there unchanged, each turn started once and ended
// once with nothing of it after its end but a decided call's outcome, each
// call requested, decided and answered at most once, and every call of a
// completed turn answered, and of a turn whose host died too (but for its
// parked calls); a turn resumed after its host died counts its attempts
// from 1, at most maxResumes (2). It returns the turns that failed because
// their host died, how many of their calls are parked without a result
// yet, and the turns resumed.
func (c *chaos) checkStream(sid string, evs []chaosEvent, full bool) (interrupted, unanswered, resumed int) {
	t := c.t
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Errorf("session %s: event %d has seq %d (a gap or a repeat):\n%s", sid, i+1, e.Seq, eventsText(evs))
			return 0, 0, 0
		}
	}
	if prev := c.snapshot[sid]; len(prev) > len(evs) || eventsText(prev) != eventsText(evs[:len(prev)]) {
		t.Errorf("session %s: the events stored at the last check changed:\nthen:\n%s\nnow:\n%s", sid, eventsText(prev), eventsText(evs))
	}
	type turnState struct {
		started, ended, resumed int
		end                     chaosEvent
		requested               []string
	}
	turns := map[string]*turnState{}
	var order []string
	seen := map[string]int{} // kind + call id → count
	for _, e := range evs {
		if e.TurnID == "" {
			continue
		}
		ts := turns[e.TurnID]
		if ts == nil {
			ts = &turnState{}
			turns[e.TurnID] = ts
			order = append(order, e.TurnID)
		}
		callID := e.str("callId")
		switch e.Kind {
		case "turn.started":
			ts.started++
		case "turn.completed", "turn.failed":
			ts.ended++
			ts.end = e
		case "turn.resumed":
			ts.resumed++
			var r struct {
				Attempt int `json:"attempt"`
			}
			json.Unmarshal(e.Data, &r)
			if r.Attempt != ts.resumed || r.Attempt > 2 {
				t.Errorf("session %s: turn %s resumed as attempt %d, its resumption %d (maxResumes 2)", sid, e.TurnID, r.Attempt, ts.resumed)
			}
		case "actions.requested":
			var p struct {
				Actions []struct {
					CallID string `json:"callId"`
				} `json:"actions"`
			}
			json.Unmarshal(e.Data, &p)
			for _, a := range p.Actions {
				ts.requested = append(ts.requested, a.CallID)
				seen["requested "+a.CallID]++
			}
		case "action.result", "action.approval_requested", "action.approval_resolved":
			seen[e.Kind+" "+callID]++
		}
		if ts.ended > 0 && e.Seq != ts.end.Seq && e.Kind != "action.result" && e.Kind != "action.approval_resolved" {
			t.Errorf("session %s: %s after its turn ended (%s)", sid, e, ts.end)
		}
	}
	for key, n := range seen {
		if n > 1 {
			t.Errorf("session %s: %s %d times", sid, key, n)
		}
	}
	for _, id := range order {
		ts := turns[id]
		if ts.started != 1 || ts.ended > 1 || full && ts.ended == 0 {
			t.Errorf("session %s: turn %s started %d times and ended %d times", sid, id, ts.started, ts.ended)
			continue
		}
		missing, parked := 0, 0 // parked: a decision still to come answers them
		for _, callID := range ts.requested {
			switch {
			case seen["action.result "+callID] > 0:
			case seen["action.approval_requested "+callID] > 0:
				parked++
			default:
				missing++
			}
		}
		switch {
		case ts.ended == 0:
		case ts.end.Kind == "turn.completed" && missing+parked > 0:
			t.Errorf("session %s: turn %s completed with %d of its calls unanswered", sid, id, missing+parked)
		case ts.end.Kind == "turn.failed":
			// A direct call's turn is closed as interrupted; a model turn is
			// resumed, and fails only once its host died past maxResumes.
			if reason, code := ts.end.str("reason"), ts.end.str("code"); reason != "interrupted by host restart" && (code != "resume_limit" || ts.resumed != 2) {
				t.Errorf("session %s: turn %s failed: %s", sid, id, ts.end.Data)
			}
			if missing > 0 {
				// The turn's end carries an interrupted result for every call
				// its host was running.
				t.Errorf("session %s: turn %s was closed as interrupted with %d of its calls unanswered:\n%s", sid, id, missing, eventsText(evs))
			}
			interrupted++
			unanswered += parked
		}
		if ts.resumed > 0 {
			resumed++
		}
	}
	return interrupted, unanswered, resumed
}

func outcomeText(a chaosApproval) string {
	if a.Outcome == nil {
		return "none"
	}
	return fmt.Sprintf("isError %v %s", a.Outcome.IsError, a.Outcome.Result)
}

func eventsText(evs []chaosEvent) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString("  " + e.String() + "\n")
	}
	return b.String()
}

// aboutCall returns the events about callID, and those of its turn.
func aboutCall(evs []chaosEvent, callID, turnID string) []chaosEvent {
	var out []chaosEvent
	for _, e := range evs {
		if e.TurnID == turnID || strings.Contains(string(e.Data), `"callId":"`+callID+`"`) {
			out = append(out, e)
		}
	}
	return out
}

// ofKind returns the events of kind about callID.
func ofKind(evs []chaosEvent, kind, callID string) []chaosEvent {
	var out []chaosEvent
	for _, e := range evs {
		if e.Kind == kind && e.str("callId") == callID {
			out = append(out, e)
		}
	}
	return out
}

// sameInSession reports whether e is one of evs.
func sameInSession(evs []chaosEvent, e chaosEvent) bool {
	i := e.Seq - 1
	return i >= 0 && i < int64(len(evs)) && evs[i].String() == e.String()
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

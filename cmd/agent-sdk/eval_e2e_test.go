package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// Evals end to end: the agent of testdata/evals (init's, with the tools
// lookup and judge, a scorer) served by the real binary with a fake
// model, its evals run with agent-sdk eval run, list and show; and a
// batch whose host is SIGKILLed while it runs, finished by the restarted
// host without running a case twice.

// evalBuild is the agent, built once.
var evalBuild struct {
	once     sync.Once
	dir, bin string
	err      error
}

func evalsAgent(t *testing.T) (dir, bin string) {
	t.Helper()
	evalBuild.once.Do(func() {
		dir := filepath.Join(filepath.Dir(cliBin), "evals") // removed with TestMain's directory
		if err := newAgent(dir); err != nil {
			evalBuild.err = err
			return
		}
		// Priced at $3 and $15 per million input and output tokens.
		if err := addFixtures(dir, "evals", "model:\n  provider: anthropic\n  name: fake-model\npricing:\n  fake-model: {input: 3, output: 15}\n"); err != nil {
			evalBuild.err = err
			return
		}
		start := time.Now()
		bin, err := buildFixtureAgent(dir, false)
		if err != nil {
			evalBuild.err = err
			return
		}
		// The build cache keeps one binary: another test's build may
		// replace it. Keep this one apart.
		kept := filepath.Join(filepath.Dir(cliBin), "evals-agent")
		if err := linkOrCopy(bin, kept); err != nil {
			evalBuild.err = err
			return
		}
		t.Logf("built the evals agent in %v", time.Since(start).Round(time.Millisecond))
		evalBuild.dir, evalBuild.bin = dir, kept
	})
	if evalBuild.err != nil {
		t.Fatal(evalBuild.err)
	}
	return evalBuild.dir, evalBuild.bin
}

// evalFakes is the model of the eval tests: a batch's cases run at once,
// so each case whose first message starts with a marker gets a fake of
// its own (fakemodel.Router), and the others a default one answering
// "done".
type evalFakes struct{ *fakemodel.Router }

func newEvalFakes(t *testing.T) *evalFakes {
	m := &evalFakes{fakemodel.NewRouter()}
	t.Cleanup(m.Close)
	return m
}

func (m *evalFakes) env() []string {
	return []string{"ANTHROPIC_BASE_URL=" + m.URL, "ANTHROPIC_API_KEY=test-key"}
}

// weatherScript answers the cases of testdata/evals/weather.yaml. Paris's
// two model calls cost 3000+1500 and 3600+750 micro-dollars (2,350
// tokens), Lima's one 2400+300 (820 tokens).
func (m *evalFakes) weatherScript() {
	m.Route("[paris]",
		fakemodel.Reply{Text: []string{"Let me look."}, Calls: []fakemodel.Call{{ID: "c1", Name: "lookup", Input: `{"city":"Paris","units":"metric"}`}},
			Usage: &fakemodel.Usage{Input: 1000, Output: 100}},
		fakemodel.Reply{Text: []string{"It is sunny ", "in Paris."}, Usage: &fakemodel.Usage{Input: 1200, Output: 50}})
	m.Route("[lima]", fakemodel.Reply{Text: []string{"I do not know."}, Usage: &fakemodel.Usage{Input: 800, Output: 20}})
}

// evalHostProc serves the evals agent on the store db.
func evalHostProc(t *testing.T, dir, bin, state, db string, m *evalFakes) *agentProc {
	t.Helper()
	return agentSpec{bin: bin, dir: dir, state: state, env: m.env(), args: []string{"--store", db, "--lease-ttl", "2s"}}.start(t)
}

// evalCLI runs agent-sdk eval ARGS against the host.
func evalCLI(t *testing.T, p *agentProc, args ...string) result {
	t.Helper()
	return run(t, t.TempDir(), "", append(append([]string{"eval"}, args...), "--url", p.url(), "--token", chaosToken)...)
}

func evalFixture(name string) string {
	p, _ := filepath.Abs(filepath.Join("testdata", "evals", name))
	return p
}

var (
	evalIDLine  = regexp.MustCompile(`running eval batch (eval_\w+) \(`)
	sessionCell = regexp.MustCompile(`sess_[a-z0-9]{16}`)
)

// eval run prints the table and the score and exits 0 at or above
// --min-score, 1 below it or when a case failed to run, 2 for an
// unreadable or invalid eval; eval list and eval show list the batches.
func TestEvalRunCLI(t *testing.T) {
	dir, bin := evalsAgent(t)
	m := newEvalFakes(t)
	state := t.TempDir()
	h := evalHostProc(t, dir, bin, state, filepath.Join(state, "agent.db"), m)

	m.weatherScript()
	r := evalCLI(t, h, "run", evalFixture("weather.yaml"), "--min-score", "0.6")
	if r.code != 0 {
		t.Fatalf("eval run --min-score 0.6: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := evalIDLine.FindStringSubmatch(r.stderr)
	if id == nil || !strings.Contains(r.stderr, "(weather, 2 cases); agent-sdk eval show "+id[1]) {
		t.Fatalf("stderr: %s", r.stderr)
	}
	table := sessionCell.ReplaceAllString(r.stdout, "sess_0123456789abcdef")
	want := `CASE   STATUS     SCORE  CHECKS  SESSION                TOKENS  COST      FAILED
paris  completed  1.00   7/7     sess_0123456789abcdef  2,350   $0.00885  -
lima   completed  0.33   1/3     sess_0123456789abcdef  820     $0.0027   called lookup: not called; contains "sunny": the final answer does not contain it: "I do not know."

batch ` + id[1] + ` (weather): score 0.67, 1 of 2 cases passed; 3,170 tokens, cost $0.01155
`
	if table != want {
		t.Errorf("eval run's table:\n%s\nwant:\n%s", table, want)
	}
	if r.stdout != evalCLI(t, h, "show", id[1]).stdout {
		t.Errorf("eval show prints another table than eval run")
	}

	// Below the least score: exit 1, and --json prints the batch.
	m.weatherScript()
	r = evalCLI(t, h, "run", evalFixture("weather.yaml"), "--json")
	var b api.EvalBatch
	if err := json.Unmarshal([]byte(r.stdout), &b); err != nil || r.code != 1 {
		t.Fatalf("eval run --json: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if b.Status != api.EvalCompleted || b.Passed != 1 || len(b.Cases) != 2 || len(b.Cases[0].Checks) != 7 ||
		b.Cases[0].Checks[6].Detail != "scorer judge: pass (score 1): looked up paris" ||
		b.Usage == nil || b.Usage.CostMicroUsd == nil || *b.Usage.CostMicroUsd != 11550 || b.Cases[1].Usage == nil || b.Cases[1].Usage.InputTokens != 800 ||
		!strings.Contains(r.stderr, "agent-sdk: eval batch "+b.ID+" did not pass: the score 0.67 is below --min-score 1") {
		t.Errorf("eval run --json: %+v\n%s", b, r.stderr)
	}

	// A list of cases, named after its file; the default model answers.
	r = evalCLI(t, h, "run", evalFixture("smoke.yaml"))
	if r.code != 0 || !strings.Contains(r.stdout, "(smoke): score 1.00, 2 of 2 cases passed; ") {
		t.Errorf("eval run smoke.yaml: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// A case that cannot be run (its turn fails): exit 1 whatever the
	// least score.
	down := filepath.Join(t.TempDir(), "down.yaml")
	os.WriteFile(down, []byte("- name: down\n  message: \"[down] Hi\"\n"), 0o644)
	failure := fakemodel.Reply{Status: 400}
	m.Route("[down]", failure, failure, failure, failure, failure)
	r = evalCLI(t, h, "run", down, "--min-score", "0")
	if r.code != 1 || !strings.Contains(r.stderr, "did not pass: 1 of 1 cases failed to run") ||
		!regexp.MustCompile(`down\s+failed\s+0\.00\s+-\s+sess_\w+\s+0\s+\$0\.00\s+error: the turn failed: `).MatchString(r.stdout) ||
		!strings.Contains(r.stdout, "score 0.00, 0 of 1 cases passed, 1 failed to run; 0 tokens, cost $0.00") {
		t.Errorf("eval run of a case that fails: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The batches, newest first.
	r = evalCLI(t, h, "list")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 5 || !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(lines[1], " down ") ||
		!regexp.MustCompile(`^`+id[1]+`\s+weather\s+completed\s+0\.67\s+1/2\s+20\d\d-\S+\s+\$0\.01155$`).MatchString(lines[4]) {
		t.Errorf("eval list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = evalCLI(t, h, "list", "--json", "--limit", "2")
	var list api.EvalList
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || r.code != 0 || len(list.Batches) != 2 || list.Batches[1].Name != "smoke" || list.Batches[0].Cases != nil {
		t.Errorf("eval list --json --limit 2: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	r = evalCLI(t, h, "show", id[1], "--json")
	if err := json.Unmarshal([]byte(r.stdout), &b); err != nil || r.code != 0 || b.ID != id[1] || len(b.Cases) != 2 {
		t.Errorf("eval show --json: exit %d, %v\n%s", r.code, err, r.stdout)
	}

	// Refusals.
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"show", "eval_nope"}, 2, `agent-sdk: no eval batch has that id: "eval_nope" (HTTP 404)`},
		{[]string{"run", evalFixture("typo.yaml")}, 2, "agent-sdk: the eval file " + evalFixture("typo.yaml") + ": yaml: unmarshal errors:\n  line 3: field contain not found in type api.EvalCheck"},
		{[]string{"run", evalFixture("invalid.yaml")}, 2, `agent-sdk: invalid eval: cases[0]: has neither a message nor a conversation; ` +
			`cases[0].checks[0]: has contains and noError; a check is exactly one kind (make one check of each); ` +
			`cases[1].scorer: the agent has no tool "no_such_tool" (HTTP 400)`},
		{[]string{"run", evalFixture("nope.yaml")}, 2, "agent-sdk: reading the eval file: open " + evalFixture("nope.yaml") + ": no such file or directory"},
		{[]string{"run", evalFixture("weather.yaml"), "--min-score", "2"}, 2, "agent-sdk: --min-score must be between 0 and 1, not 2"},
		{[]string{"run", evalFixture("weather.yaml"), "--concurrency", "-1"}, 2, "agent-sdk: --concurrency must not be negative, not -1"},
		{[]string{"run"}, 2, "accepts 1 arg(s), received 0"},
	} {
		r := evalCLI(t, h, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) || r.stdout != "" {
			t.Errorf("eval %v: exit %d, want %d with %q\n%s%s", tc.args, r.code, tc.code, tc.stderr, r.stdout, r.stderr)
		}
	}
	r = run(t, t.TempDir(), "", "eval", "runn")
	if r.code != 2 || !strings.Contains(r.stderr, `unknown command "runn" for "agent-sdk eval"`) {
		t.Errorf("eval runn: %+v", r)
	}
	r = run(t, t.TempDir(), "", "eval", "list", "--url", "http://127.0.0.1:1/chaos", "--token", "x")
	if r.code != 3 || !strings.Contains(r.stderr, "reaching the host") {
		t.Errorf("eval list of a host out of reach: %+v", r)
	}
	r = run(t, t.TempDir(), "", "eval", "show", "eval_x", "--url", h.url(), "--token", "wrong")
	if r.code != 2 || !strings.Contains(r.stderr, "HTTP 401") {
		t.Errorf("eval show with a wrong token: %+v", r)
	}
	stopProc(t, h)
}

// eval's commands explain themselves, with examples and exit statuses;
// --url is required.
func TestEvalHelp(t *testing.T) {
	for _, args := range [][]string{{"eval", "run", "--help"}, {"eval", "list", "--help"}, {"eval", "show", "--help"}} {
		r := run(t, repoRoot, "", args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage:") || !strings.Contains(r.stdout, "Examples:") || !strings.Contains(r.stdout, "Exit status:") {
			t.Errorf("%v: exit %d\n%s", args, r.code, r.stdout)
		}
	}
	if r := run(t, repoRoot, "", "eval", "run", "--help"); !strings.Contains(r.stdout, "1 it ran but did not\npass") {
		t.Errorf("eval run --help does not document exit status 1:\n%s", r.stdout)
	}
	for _, args := range [][]string{{"eval", "list"}, {"eval", "show", "x"}, {"eval", "run", "x.yaml"}} {
		if r := run(t, repoRoot, "", args...); r.code != 2 || !strings.Contains(r.stderr, `required flag(s) "url" not set`) {
			t.Errorf("%v without --url: %+v", args, r)
		}
	}
}

// A batch whose host is SIGKILLed while its cases run finishes on the
// restarted host: the cases that were running are recorded as interrupted
// and not run again (one model request, one session and one turn at most
// each), the queued ones run there.
func TestEvalSurvivesSIGKILL(t *testing.T) {
	dir, bin := evalsAgent(t)
	m := newEvalFakes(t)
	state := t.TempDir()
	db := filepath.Join(state, "agent.db")
	h := evalHostProc(t, dir, bin, state, db, m)
	c := schedClient(t, h)
	ctx := context.Background()

	release := make(chan struct{})
	defer close(release)
	m.Route("[k0]", fakemodel.Reply{Until: release}) // hangs until the test ends
	const n = 10
	req := api.EvalRunRequest{Name: "crash", Cases: []api.EvalCase{{Name: "hang", Message: "[k0] Hi"}}}
	for i := 1; i < n; i++ {
		marker := fmt.Sprintf("[k%d]", i)
		m.Route(marker, fakemodel.Reply{Hang: 300 * time.Millisecond, Text: []string{"ok"}})
		req.Cases = append(req.Cases, api.EvalCase{Message: marker + " Hi", Checks: []api.EvalCheck{{Contains: "ok"}}})
	}
	started, err := c.RunEval(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the hanging case to ask the model", func() bool { return m.Requests("[k0]") > 0 })
	h.kill(t)
	killed := time.Now()
	h = evalHostProc(t, dir, bin, state, db, m)
	c = schedClient(t, h)
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	b, err := c.WaitEval(wctx, started.ID, 100*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("the batch did not complete after the restart: %v\n%s", err, h.logTail(50))
	}
	t.Logf("completed %v after the SIGKILL", time.Since(killed).Round(time.Millisecond))

	interrupted := 0
	sessions := map[string]int{}
	completed := map[string]bool{} // the sessions of the cases that completed
	for i, cr := range b.Cases {
		reqs := m.Requests(fmt.Sprintf("[k%d]", i))
		switch {
		case cr.Status == api.EvalFailed && cr.Error == "interrupted: its host stopped; not run again" && reqs <= 1:
			interrupted++
		case cr.Status == api.EvalCompleted && cr.Pass && reqs == 1:
		default:
			t.Errorf("case %d: %+v, %d model requests", i, cr, reqs)
		}
		if cr.SessionID == "" {
			t.Errorf("case %d has no session", i)
		}
		sessions[cr.SessionID]++
		completed[cr.SessionID] = cr.Status == api.EvalCompleted
	}
	t.Logf("%d of %d cases interrupted by the SIGKILL", interrupted, n)
	if b.Cases[0].Status != api.EvalFailed || interrupted > 4 || b.Passed != n-interrupted {
		t.Errorf("the batch after the restart: %d interrupted, %+v", interrupted, b)
	}
	// Each case has one session of its own on the eval channel, and there
	// are no others: no case ran twice.
	var onEval []api.Session
	for s, err := range c.AllSessions(ctx, 100) {
		if err != nil {
			t.Fatal(err)
		}
		if s.Channel == "eval" {
			onEval = append(onEval, s)
		}
	}
	for _, s := range onEval {
		if sessions[s.ID] != 1 {
			t.Errorf("the session %s on the eval channel belongs to %d cases", s.ID, sessions[s.ID])
		}
		evs, err := c.StoredEvents(ctx, s.ID, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		turns := 0
		for _, e := range evs {
			if e.Kind == api.KindTurnStarted {
				turns++
			}
		}
		// A completed case's session had its one turn. An interrupted
		// case's had one at most: the SIGKILL may have come after its
		// session was made and before its turn began (two writes).
		if turns > 1 || completed[s.ID] && turns != 1 {
			t.Errorf("the session %s (completed: %v) had %d turns, want 1 (at most 1 if interrupted)", s.ID, completed[s.ID], turns)
		}
	}
	if len(onEval) < n-interrupted || len(onEval) > n {
		t.Errorf("%d sessions on the eval channel for %d cases (%d interrupted)", len(onEval), n, interrupted)
	}
	r := evalCLI(t, h, "show", started.ID)
	if r.code != 0 || !regexp.MustCompile(`hang\s+failed\s+0\.00\s+-\s+sess_\w+\s+0\s+\$0\.00\s+error: interrupted: its host stopped; not run again`).MatchString(r.stdout) {
		t.Errorf("eval show after the restart: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	stopProc(t, h)
}

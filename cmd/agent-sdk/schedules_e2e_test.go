package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/client"
	"github.com/agentsdk/agentsdk/internal/pgtest"
	"github.com/agentsdk/agentsdk/schedule"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/postgres"
	"github.com/agentsdk/agentsdk/store/sqlite"
)

// Schedules end to end: the agent of testdata/schedules (init's, with the
// tool ticks and the schedules tick and slow, both every second; slow
// takes 3 s a run and skips overlaps), served by real hosts that a test
// kills and restarts, listed and run by hand with agent-sdk schedules.
//
// Each run records its tick in KV with a conditional write (a second run
// of a tick would find the key taken and leave a dup/ record), and the
// store keeps every run. After the hosts stop, the test reads both from
// the store and holds them to the schedules' rules, which need no timing:
// each tick runs at most once; each run's successor is the tick after it,
// or, when the run was taken once the tick after it had come (the host
// was down, or late), the first tick after the run started (catch-up
// once); a run that skips overlaps never starts while another runs.
//
// The hosts run the binary `agent-sdk build` made, as serve would exec it
// (agentSpec): a restart cannot rebuild it from sources edited meanwhile.

// schedBuild is the agent, built once per store driver.
var schedBuild struct {
	once sync.Once
	dir  string
	err  error
	mu   sync.Mutex
	bins map[bool]string // by "with the PostgreSQL driver"
}

// schedulesFixture makes an agent in dir with the tools and schedules of
// testdata/schedules, and agent.yaml if it is not "".
func schedulesFixture(dir, agentYAML string) error {
	if err := newAgent(dir); err != nil {
		return err
	}
	for _, sub := range []string{"tools", "schedules"} {
		files, err := filepath.Glob(filepath.Join("testdata", "schedules", sub, "*.go"))
		if err != nil || len(files) == 0 {
			return fmt.Errorf("no fixtures in testdata/schedules/%s: %v", sub, err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "agent", sub), 0o755); err != nil {
			return err
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, "agent", sub, filepath.Base(f)), b, 0o644)
			}
			if err != nil {
				return err
			}
		}
	}
	if agentYAML == "" {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, "agent", "agent.yaml"), []byte(agentYAML), 0o644)
}

func schedulesAgent(t *testing.T, postgres bool) (dir, bin string) {
	t.Helper()
	schedBuild.once.Do(func() {
		dir := filepath.Join(filepath.Dir(cliBin), "schedules") // removed with TestMain's directory
		schedBuild.dir, schedBuild.bins, schedBuild.err = dir, map[bool]string{}, schedulesFixture(dir, "")
	})
	if schedBuild.err != nil {
		t.Fatal(schedBuild.err)
	}
	schedBuild.mu.Lock()
	defer schedBuild.mu.Unlock()
	if bin := schedBuild.bins[postgres]; bin != "" {
		return schedBuild.dir, bin
	}
	start := time.Now()
	bin, err := buildFixtureAgent(schedBuild.dir, postgres)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built the schedules agent (postgres driver: %v) in %v", postgres, time.Since(start).Round(time.Millisecond))
	// The build cache keeps one binary: the other driver's build would
	// remove this one. Keep it apart.
	kept := filepath.Join(filepath.Dir(cliBin), fmt.Sprintf("schedules-agent-postgres-%v", postgres))
	if err := linkOrCopy(bin, kept); err != nil {
		t.Fatal(err)
	}
	schedBuild.bins[postgres] = kept
	return schedBuild.dir, bin
}

// schedHost is a host of the schedules agent: name is its
// $MULTIHOST_NAME, which its runs record.
func schedHost(t *testing.T, dir, bin, state, storeURL, name string) *agentProc {
	t.Helper()
	return agentSpec{bin: bin, dir: dir, state: state, env: []string{"MULTIHOST_NAME=" + name},
		args: []string{"--store", storeURL, "--lease-ttl", "2s"}}.start(t)
}

// stopProc SIGTERMs the host and waits for it to exit.
func stopProc(t *testing.T, p *agentProc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the host did not stop after SIGTERM:\n%s", p.logTail(50))
	}
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("the host exited with %v after SIGTERM:\n%s", err, p.logTail(50))
	}
}

// url is the host's --url: http://127.0.0.1:port/<slug>.
func (p *agentProc) url() string { return strings.TrimSuffix(p.base, "/v1") }

// schedClient is a Go client of the host, to poll its schedules.
func schedClient(t *testing.T, p *agentProc) *client.Client {
	t.Helper()
	c, err := client.New(p.url(), chaosToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// lastRuns returns the schedule's last runs as the host lists them.
func lastRuns(t *testing.T, c *client.Client, name string) []api.ScheduleRun {
	t.Helper()
	list, err := c.Schedules(context.Background())
	if err != nil {
		t.Fatalf("listing schedules: %v", err)
	}
	for _, s := range list {
		if s.Name == name {
			return s.LastRuns
		}
	}
	t.Fatalf("no schedule %s in %+v", name, list)
	return nil
}

// schedulesCLI runs agent-sdk schedules ARGS against the host.
func schedulesCLI(t *testing.T, p *agentProc, args ...string) result {
	t.Helper()
	return run(t, t.TempDir(), "", append(append([]string{"schedules"}, args...), "--url", p.url(), "--token", chaosToken)...)
}

// tickRecord is a run's record in KV (testdata/schedules/schedules/tick.go).
type tickRecord struct {
	Key   string
	Tick  time.Time // from the key
	Run   string    `json:"run"`
	Host  string    `json:"host"`
	Began time.Time `json:"began"`
}

// schedHistory is what the store holds of the schedules, read once the
// hosts have stopped.
type schedHistory struct {
	records map[string][]tickRecord      // by prefix (tick, slow, manual/tick, dup): KV records, in key order
	runs    map[string][]api.ScheduleRun // by schedule: every run, the earliest started first
}

func readHistory(t *testing.T, storeURL string) schedHistory {
	t.Helper()
	ctx := context.Background()
	var st store.Store
	var err error
	if strings.HasPrefix(storeURL, "postgres://") {
		st, err = postgres.Open(ctx, storeURL)
	} else {
		st, err = sqlite.Open(ctx, storeURL)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := schedHistory{records: map[string][]tickRecord{}, runs: map[string][]api.ScheduleRun{}}
	for _, prefix := range []string{"tick", "slow", "manual/tick", "manual/slow", "dup"} {
		cursor := ""
		for {
			page, next, err := st.KVList(ctx, store.ListParams{Namespace: "agent", Prefix: prefix + "/", Page: store.Page{Limit: 1000, Cursor: cursor}})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page {
				r := tickRecord{Key: e.Key}
				if err := json.Unmarshal(e.Value, &r); err != nil {
					t.Fatalf("KV %s: %v", e.Key, err)
				}
				r.Tick, _ = time.Parse(time.RFC3339Nano, strings.TrimPrefix(e.Key, prefix+"/"))
				h.records[prefix] = append(h.records[prefix], r)
			}
			if cursor = next; next == "" {
				break
			}
		}
	}
	timers, ok := st.(store.Timers)
	if !ok {
		t.Fatalf("the store %T keeps no schedules", st)
	}
	for _, name := range []string{"tick", "slow"} {
		runs, err := timers.ListScheduleRuns(ctx, name, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) == 1000 {
			t.Fatalf("schedule %s: 1000 runs or more; the test reads at most 1000", name)
		}
		slices.Reverse(runs)
		h.runs[name] = runs
	}
	return h
}

// everySecond is the schedules' cron, for the ticks that follow a tick.
var everySecond = func() *schedule.Schedule {
	s, err := schedule.New("every_second", schedule.Config{Cron: "* * * * * *", Run: func(context.Context, *schedule.Run) error { return nil }})
	if err != nil {
		panic(err)
	}
	return s
}()

// ticked returns the schedule's runs for ticks (not by hand), in tick
// order.
func (h schedHistory) ticked(name string) []api.ScheduleRun {
	var out []api.ScheduleRun
	for _, r := range h.runs[name] {
		if !r.Manual {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b api.ScheduleRun) int { return a.Tick.Compare(b.Tick) })
	return out
}

// check holds the history to the schedules' rules.
func (h schedHistory) check(t *testing.T) {
	t.Helper()
	if dups := h.records["dup"]; len(dups) > 0 {
		t.Errorf("ticks that ran twice (dup/ records): %+v", dups)
	}
	for _, name := range []string{"tick", "slow"} {
		runs := h.ticked(name)
		if len(runs) < 2 {
			t.Errorf("schedule %s: %d runs for ticks", name, len(runs))
			continue
		}
		// Each tick is taken once: one run, and one record for it.
		recorded := map[time.Time]tickRecord{}
		for _, rec := range h.records[name] {
			recorded[rec.Tick] = rec
		}
		for i, r := range runs {
			if i > 0 && r.Tick.Equal(runs[i-1].Tick) {
				t.Errorf("schedule %s: the tick %s has two runs: %+v and %+v", name, r.Tick.Format(time.RFC3339), runs[i-1], r)
			}
			rec, ok := recorded[r.Tick]
			switch {
			case r.Status == api.RunSkipped && ok:
				t.Errorf("schedule %s: the tick %s was skipped (%s), yet run %s recorded it", name, r.Tick.Format(time.RFC3339), r.Error, rec.Run)
			case r.Status == api.RunCompleted && (!ok || rec.Run != r.ID):
				t.Errorf("schedule %s: run %s of the tick %s completed; the tick's record is %+v", name, r.ID, r.Tick.Format(time.RFC3339), rec)
			case r.Status == api.RunRunning:
				t.Errorf("schedule %s: run %s still running after its hosts stopped", name, r.ID)
			}
			delete(recorded, r.Tick)
			if i == 0 {
				continue
			}
			// The chain: the tick after the previous one, or, if that
			// one was taken once the tick after it had come, the first
			// tick after it was taken (missed ticks run once).
			prev := runs[i-1]
			want := everySecond.Next(prev.Tick)
			if !want.After(prev.Started) {
				want = everySecond.Next(prev.Started)
			}
			if !r.Tick.Equal(want) {
				t.Errorf("schedule %s: after the tick %s (taken at %s) came the tick %s, want %s",
					name, prev.Tick.Format(time.RFC3339), prev.Started.Format(time.RFC3339Nano), r.Tick.Format(time.RFC3339), want.Format(time.RFC3339))
			}
		}
		for tick, rec := range recorded {
			t.Errorf("schedule %s: a record of the tick %s by run %s, which the store does not have", name, tick.Format(time.RFC3339), rec.Run)
		}
	}
	// slow skips overlaps: none of its runs began while another ran. A
	// run's end is recorded (EndScheduleRun) before a tick can find it
	// ended and start the next, which records when it began once that has
	// committed; so the next began after the end, whichever host ran it.
	began := map[string]time.Time{}
	for _, prefix := range []string{"slow", "manual/slow"} {
		for _, rec := range h.records[prefix] {
			began[rec.Run] = rec.Began
		}
	}
	var going []api.ScheduleRun
	for _, r := range h.runs["slow"] {
		if r.Status != api.RunSkipped {
			going = append(going, r)
		}
	}
	for i := 1; i < len(going); i++ {
		prev, r := going[i-1], going[i]
		b, ok := began[r.ID]
		if prev.Ended == nil || ok && b.Before(*prev.Ended) {
			t.Errorf("schedule slow (overlap: skip): run %s began at %s while run %s ran (%s to %v)",
				r.ID, b.Format(time.RFC3339Nano), prev.ID, prev.Started.Format(time.RFC3339Nano), prev.Ended)
		}
	}
}

func (h schedHistory) String() string {
	var b strings.Builder
	for _, name := range []string{"tick", "slow"} {
		fmt.Fprintf(&b, "%s:\n", name)
		for _, r := range h.runs[name] {
			end := "-"
			if r.Ended != nil {
				end = r.Ended.Format("15:04:05.000")
			}
			fmt.Fprintf(&b, "  %s tick %s manual=%v %-11s host %s %s..%s %s\n", r.ID, r.Tick.Format("15:04:05"), r.Manual, r.Status, r.Host,
				r.Started.Format("15:04:05.000"), end, r.Error)
		}
	}
	return b.String()
}

var overlapReason = regexp.MustCompile(`^run (run_\w+) was still going \(overlap: skip\)$`)

// On SQLite: the schedules tick every second, each tick once; agent-sdk
// schedules lists them (table, --json), runs one by hand, refuses a busy
// or unknown one. Then the host is SIGKILLed during a run of slow and
// started again on its state: the run is recorded as interrupted and not
// run again, and the ticks missed while it was down run once.
func TestSchedulesSQLite(t *testing.T) {
	dir, bin := schedulesAgent(t, false)
	state := t.TempDir()
	db := filepath.Join(state, "agent.db")
	begun := time.Now()
	h := schedHost(t, dir, bin, state, db, "first")
	c := schedClient(t, h)

	// Let it tick for a while: about 5 s, and until slow has skipped a
	// tick (its run takes 3 s).
	eventually(t, 60*time.Second, "a skipped tick of slow", func() bool {
		for _, r := range lastRuns(t, c, "slow") {
			if r.Status == api.RunSkipped {
				return time.Since(begun) > 5*time.Second
			}
		}
		return false
	})

	t.Run("list", func(t *testing.T) {
		r := schedulesCLI(t, h, "--json")
		var list api.ScheduleList
		if err := json.Unmarshal([]byte(r.stdout), &list); r.code != 0 || err != nil {
			t.Fatalf("schedules --json: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, `"lastRuns": [`) {
			t.Errorf("schedules --json: lastRuns is not a list:\n%s", r.stdout)
		}
		if len(list.Schedules) != 2 || list.Schedules[0].Name != "slow" || list.Schedules[1].Name != "tick" {
			t.Fatalf("schedules --json:\n%s", r.stdout)
		}
		slow, tick := list.Schedules[0], list.Schedules[1]
		if tick.Cron != "* * * * * *" || tick.TimeZone != "UTC" || tick.Overlap != "skip" || tick.CatchUp != "once" || tick.NextRun == nil ||
			tick.Description != "Record every second's tick in KV." {
			t.Errorf("tick as listed: %+v", tick)
		}
		if n := len(tick.LastRuns); n == 0 || n > 10 {
			t.Errorf("tick lists %d last runs, want 1 to 10", n)
		}
		completed := 0
		for _, r := range tick.LastRuns {
			if r.Status == api.RunCompleted {
				completed++
			}
			if r.Schedule != "tick" || r.ID == "" || r.Host == "" || r.Manual {
				t.Errorf("a run of tick: %+v", r)
			}
		}
		if completed == 0 {
			t.Errorf("no completed run of tick listed: %+v", tick.LastRuns)
		}
		ids := map[string]bool{}
		for _, r := range slow.LastRuns {
			ids[r.ID] = true
		}
		skipped := 0
		for _, r := range slow.LastRuns {
			if r.Status != api.RunSkipped {
				continue
			}
			skipped++
			m := overlapReason.FindStringSubmatch(r.Error)
			if m == nil || r.Ended == nil || !r.Ended.Equal(r.Started) {
				t.Errorf("a skipped run of slow: %+v, want the overlap reason", r)
			} else if !ids[m[1]] {
				t.Logf("skipped for run %s, which is not among the last runs listed", m[1])
			}
		}
		if skipped == 0 {
			t.Errorf("no skipped run of slow listed:\n%s", r.stdout)
		}

		// The records, through the agent's tool: ticks, and no tick twice.
		for prefix, want := range map[string]bool{"tick/": true, "dup/": false} {
			status, v, err := doJSON(context.Background(), http.DefaultClient, chaosToken, h.base, "POST", "/tools/ticks", `{"input":{"prefix":"`+prefix+`"}}`)
			recs, _ := v["result"].([]any)
			if err != nil || status != 200 || (len(recs) > 0) != want {
				t.Errorf("ticks %s: %d %v %v", prefix, status, v, err)
			}
		}

		table := schedulesCLI(t, h)
		lines := strings.Split(strings.TrimSpace(table.stdout), "\n")
		if table.code != 0 || len(lines) != 3 ||
			!regexp.MustCompile(`^NAME +CRON +TZ +NEXT RUN +LAST RUN +LAST ERROR$`).MatchString(lines[0]) ||
			!regexp.MustCompile(`^slow +\* \* \* \* \* \* +UTC +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ +(running|completed|skipped) \S+Z +-$`).MatchString(lines[1]) ||
			!regexp.MustCompile(`^tick +\* \* \* \* \* \* +UTC +\S+Z +(running|completed) \S+Z +-$`).MatchString(lines[2]) {
			t.Errorf("schedules: exit %d\n%s%s", table.code, table.stdout, table.stderr)
		}
	})

	t.Run("run by hand", func(t *testing.T) {
		r := schedulesCLI(t, h, "run", "tick")
		id := strings.TrimSpace(r.stdout)
		if r.code != 0 || !regexp.MustCompile(`^run_\w+$`).MatchString(id) || !strings.Contains(r.stderr, "started run "+id+" of schedule tick") {
			t.Fatalf("schedules run tick: %+v", r)
		}
		eventually(t, 30*time.Second, "the run by hand's end", func() bool {
			for _, r := range lastRuns(t, c, "tick") {
				if r.ID == id && r.Status == api.RunCompleted && r.Manual {
					return true
				}
			}
			return false
		})

		// slow skips overlaps: while a run goes (for 3 s) a run by hand is
		// refused. Ask until one starts, then at once again.
		busy := func(r result) bool {
			return r.code == 2 && r.stdout == "" &&
				regexp.MustCompile(`schedule slow: run run_\w+ is still going \(overlap: skip\) \(HTTP 409\)`).MatchString(r.stderr)
		}
		for attempt := 0; ; attempt++ {
			first := schedulesCLI(t, h, "run", "slow")
			if first.code != 0 {
				if !busy(first) || attempt == 50 {
					t.Fatalf("schedules run slow, attempt %d: %+v", attempt+1, first)
				}
				time.Sleep(200 * time.Millisecond)
				continue
			}
			if second := schedulesCLI(t, h, "run", "slow"); !busy(second) {
				t.Errorf("schedules run slow while run %s goes: %+v", strings.TrimSpace(first.stdout), second)
			}
			break
		}

		r = schedulesCLI(t, h, "run", "nope")
		if r.code != 2 || !strings.Contains(r.stderr, `the agent has no schedule of that name: "nope" (HTTP 404)`) || r.stdout != "" {
			t.Errorf("schedules run nope: %+v", r)
		}
		r = run(t, t.TempDir(), "", "schedules", "run", "tick", "--url", h.url(), "--token", "wrong")
		if r.code != 2 || !strings.Contains(r.stderr, "HTTP 401") {
			t.Errorf("schedules run with a wrong token: %+v", r)
		}
		r = run(t, t.TempDir(), "", "schedules", "--url", "http://127.0.0.1:1/chaos", "--token", "x")
		if r.code != 3 || !strings.Contains(r.stderr, "reaching the host") {
			t.Errorf("schedules of a host out of reach: %+v", r)
		}
		r = run(t, t.TempDir(), "", "schedules", "run", "--url", h.url(), "--token", chaosToken)
		if r.code != 2 || !strings.Contains(r.stderr, "accepts 1 arg") {
			t.Errorf("schedules run without a name: %+v", r)
		}
	})

	// SIGKILL the host 0 to 1.5 s into a run of slow (which takes 3 s).
	var killed api.ScheduleRun
	eventually(t, 30*time.Second, "a fresh run of slow for a tick", func() bool {
		for _, r := range lastRuns(t, c, "slow") {
			if r.Status == api.RunRunning && !r.Manual && time.Since(r.Started) < 1500*time.Millisecond {
				killed = r
				return true
			}
		}
		return false
	})
	h.kill(t)
	killedAt := time.Now()
	// Down for 2.5 s: a few ticks are missed, and the run's hold
	// (--lease-ttl 2s) runs out.
	time.Sleep(2500 * time.Millisecond)
	restarted := time.Now()
	h = schedHost(t, dir, bin, state, db, "second")
	c = schedClient(t, h)
	eventually(t, 60*time.Second, "three ticks after the restart", func() bool {
		n := 0
		for _, r := range lastRuns(t, c, "tick") {
			if r.Started.After(restarted) && r.Status == api.RunCompleted {
				n++
			}
		}
		return n >= 3
	})
	stopProc(t, h)

	hist := readHistory(t, db)
	defer func() {
		if t.Failed() {
			t.Logf("killed run %s (tick %s) at %s; restarted at %s; the runs:\n%s", killed.ID, killed.Tick.Format("15:04:05"),
				killedAt.Format("15:04:05.000"), restarted.Format("15:04:05.000"), hist)
		}
	}()
	hist.check(t)

	// The killed run: interrupted, not run again.
	var sameTick []api.ScheduleRun
	for _, r := range hist.ticked("slow") {
		if r.Tick.Equal(killed.Tick) {
			sameTick = append(sameTick, r)
		}
	}
	if len(sameTick) != 1 || sameTick[0].ID != killed.ID || sameTick[0].Status != api.RunInterrupted || sameTick[0].Ended == nil || sameTick[0].Ended.Before(killedAt) {
		t.Errorf("the killed run %s: the runs of its tick are %+v, want it alone, interrupted after the kill", killed.ID, sameTick)
	}
	// Catch-up once: of the ticks missed while the host was down, the
	// restarted host ran one.
	var caughtUp []api.ScheduleRun
	for _, r := range hist.ticked("tick") {
		if r.Tick.Before(restarted) && r.Started.After(restarted) {
			caughtUp = append(caughtUp, r)
		}
	}
	if len(caughtUp) != 1 || caughtUp[0].Status != api.RunCompleted {
		t.Errorf("the ticks missed while the host was down ran %d times: %+v; want once", len(caughtUp), caughtUp)
	}
	for _, rec := range hist.records["tick"] {
		if rec.Tick.After(killedAt.Add(time.Second)) && rec.Tick.Before(restarted) {
			t.Errorf("the tick %s, missed while the host was down, has a record of its own: %+v", rec.Tick.Format(time.RFC3339), rec)
		}
	}
	// And the run by hand of tick, recorded once, apart from the ticks.
	if n := len(hist.records["manual/tick"]); n != 1 {
		t.Errorf("%d records of tick's run by hand, want 1: %+v", n, hist.records["manual/tick"])
	}
}

// On PostgreSQL, two hosts serve the agent on one database for about 6 s:
// each tick runs once across both, and slow never runs twice at once.
func TestSchedulesPostgresTwoHosts(t *testing.T) {
	url := pgtest.Schema(t)
	dir, bin := schedulesAgent(t, true)
	a := schedHost(t, dir, bin, t.TempDir(), url, "A")
	b := schedHost(t, dir, bin, t.TempDir(), url, "B")
	ca, cb := schedClient(t, a), schedClient(t, b)
	begun := time.Now()
	eventually(t, 60*time.Second, "6 s of ticks", func() bool {
		return len(lastRuns(t, ca, "tick")) >= 6 && time.Since(begun) > 6*time.Second
	})
	// Both hosts list the same schedules, from the one database.
	ra, rb := schedulesCLI(t, a, "--json"), schedulesCLI(t, b, "--json")
	var la, lb api.ScheduleList
	if json.Unmarshal([]byte(ra.stdout), &la) != nil || json.Unmarshal([]byte(rb.stdout), &lb) != nil || len(la.Schedules) != 2 || len(lb.Schedules) != 2 {
		t.Fatalf("schedules --json of A and B:\n%+v\n%+v", ra, rb)
	}
	// A run by hand on B, seen on A.
	run, err := cb.RunSchedule(context.Background(), "tick")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "B's run by hand, listed by A", func() bool {
		for _, r := range lastRuns(t, ca, "tick") {
			if r.ID == run.ID && r.Status == api.RunCompleted {
				return true
			}
		}
		return false
	})
	stopProc(t, a)
	stopProc(t, b)

	hist := readHistory(t, url)
	defer func() {
		if t.Failed() {
			t.Logf("the runs:\n%s", hist)
		}
	}()
	hist.check(t)
	hosts := map[string]int{}
	for _, rec := range hist.records["tick"] {
		hosts[rec.Host]++
	}
	t.Logf("ticks recorded by host: %v", hosts)
	if n := len(hist.records["tick"]); n < 5 {
		t.Errorf("%d ticks recorded in about 6 s", n)
	}
	if recs := hist.records["manual/tick"]; len(recs) != 1 || recs[0].Run != run.ID || recs[0].Host != "B" {
		t.Errorf("the run by hand on B: %+v", recs)
	}
}

// An agent whose agent.yaml names a model provider has its schedules too.
func TestSchedulesWithModelProvider(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "schedules")
	if err := schedulesFixture(dir, "model:\n  provider: anthropic\n  name: fake-model\n"); err != nil {
		t.Fatal(err)
	}
	bin, err := buildFixtureAgent(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	p := agentSpec{bin: bin, dir: dir, state: state, env: []string{"ANTHROPIC_API_KEY=test-key"},
		args: []string{"--store", filepath.Join(state, "agent.db")}}.start(t)
	list, err := schedClient(t, p).Schedules(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range list {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"slow", "tick"}) {
		t.Errorf("the schedules of an agent with a model provider: %v, want [slow tick] "+
			"(the generated main must import agent/schedules besides the model provider: internal/build's Build)", names)
	}
}

// schedules and schedules run explain themselves, with examples; --url is
// required.
func TestSchedulesHelp(t *testing.T) {
	for _, args := range [][]string{{"schedules", "--help"}, {"schedules", "run", "--help"}} {
		r := run(t, repoRoot, "", args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage:") || !strings.Contains(r.stdout, "Examples:") ||
			!strings.Contains(r.stdout, "agent-sdk schedules run nightly_report --url http://127.0.0.1:3000/myagent") || !strings.Contains(r.stdout, "Exit status:") {
			t.Errorf("%v: exit %d\n%s", args, r.code, r.stdout)
		}
	}
	for _, args := range [][]string{{"schedules"}, {"schedules", "run", "tick"}} {
		if r := run(t, repoRoot, "", args...); r.code != 2 || !strings.Contains(r.stderr, `required flag(s) "url" not set`) {
			t.Errorf("%v without --url: %+v", args, r)
		}
	}
	if r := run(t, repoRoot, "", "schedules", "runn", "--url", "http://127.0.0.1:1/x"); r.code != 2 || !strings.Contains(r.stderr, `unknown command "runn"`) {
		t.Errorf("schedules runn: %+v", r)
	}
}

// TestReminderSurvivesSIGKILL: a reminder set just before its host is
// SIGKILLed fires once, on the restarted host.
func TestReminderSurvivesSIGKILL(t *testing.T) {
	dir, bin := schedulesAgent(t, false)
	state := t.TempDir()
	db := filepath.Join(state, "agent.db")
	h := schedHost(t, dir, bin, state, db, "first")
	c := schedClient(t, h)
	ctx := context.Background()
	sess, err := c.CreateSession(ctx, api.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.CallTool(ctx, "remind", map[string]any{"key": "later", "inMs": 2500, "message": "wake after the crash"}, &client.CallOptions{SessionID: sess.SessionID})
	if err != nil || out.IsError {
		t.Fatalf("remind: %v %+v", err, out)
	}
	h.kill(t)
	time.Sleep(time.Second)
	h = schedHost(t, dir, bin, state, db, "second")
	c = schedClient(t, h)
	fired := func() []api.Event {
		evs, err := c.StoredEvents(ctx, sess.SessionID, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var out []api.Event
		for _, e := range evs {
			if e.Kind == api.KindReminderFired {
				out = append(out, e)
			}
		}
		return out
	}
	eventually(t, 30*time.Second, "the reminder to fire", func() bool { return len(fired()) > 0 })
	time.Sleep(2 * time.Second) // a second firing would come within River's release interval
	if evs := fired(); len(evs) != 1 {
		t.Fatalf("fired %d times, want once", len(evs))
	}
	stopProc(t, h)
}

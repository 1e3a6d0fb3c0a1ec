package host_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/pgtest"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/schedule"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/memory"
	"github.com/agentsdk/agentsdk/store/postgres"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// drivers are the stores that run durable jobs.
var drivers = []string{"sqlite", "postgres"}

// openStore opens a fresh store of a driver, closed when the test ends.
func openStore(t testing.TB, driver string) store.Store {
	t.Helper()
	return openStores(t, driver, 1)[0]
}

// openStores opens n stores on one fresh database, as n hosts would.
func openStores(t testing.TB, driver string, n int) []store.Store {
	t.Helper()
	where := ""
	switch driver {
	case "sqlite":
		where = filepath.Join(t.TempDir(), "agent.db")
	case "postgres":
		where = pgtest.Schema(t)
	}
	var out []store.Store
	for range n {
		var st store.Store
		var err error
		if driver == "sqlite" {
			st, err = sqlite.Open(context.Background(), where)
		} else {
			st, err = postgres.Open(context.Background(), where)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		out = append(out, st)
	}
	return out
}

// timerHost starts a host on st with a fake model; closed when the test
// ends.
func timerHost(t testing.TB, st store.Store, set *tool.Set, opts host.Options) (*host.Host, *fakemodel.Server) {
	t.Helper()
	fake := fakemodel.New()
	t.Cleanup(fake.Close)
	return startHost(t, st, set, fake.AnthropicURL(), opts), fake
}

// startHost starts a host of set on st whose model is the Anthropic API
// at modelURL (a fake); it is closed when the test ends. The state root
// defaults to a temporary directory, LeaseTTL to a second.
func startHost(t testing.TB, st store.Store, set *tool.Set, modelURL string, opts host.Options) *host.Host {
	t.Helper()
	p, err := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: modelURL, MaxTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	if opts.StateRoot == "" {
		opts.StateRoot = t.TempDir()
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = time.Second
	}
	opts.Store, opts.Model = st, p
	h, err := host.New(set, &opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

type remindInput struct {
	Key     string `json:"key"`
	InMs    int    `json:"inMs,omitempty"`
	Message string `json:"message,omitempty"`
}

// reminderTools set, cancel and list the calling session's reminders.
func reminderTools(t testing.TB) *tool.Set {
	remind, err := tool.New("remind", tool.Config{Description: "Set a reminder."}, func(ctx context.Context, call *tool.Call, in remindInput) (tool.Reminder, error) {
		return call.Host.Reminders.Set(ctx, in.Key, time.Now().Add(time.Duration(in.InMs)*time.Millisecond), in.Message)
	})
	if err != nil {
		t.Fatal(err)
	}
	forget, _ := tool.New("forget", tool.Config{Description: "Cancel a reminder."}, func(ctx context.Context, call *tool.Call, in remindInput) (string, error) {
		return "ok", call.Host.Reminders.Cancel(ctx, in.Key)
	})
	list, _ := tool.New("reminders", tool.Config{Description: "List reminders."}, func(ctx context.Context, call *tool.Call, in struct{}) ([]tool.Reminder, error) {
		return call.Host.Reminders.List(ctx)
	})
	set, err := tool.NewSet(remind, forget, list)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// callIn calls a tool in a session and fails the test on an error result.
func callIn(t *testing.T, h *host.Host, sessionID, name string, in any) *api.Outcome {
	t.Helper()
	out, err := h.CallTool(context.Background(), name, in, &host.CallOptions{SessionID: sessionID})
	if err != nil {
		t.Fatal(err)
	}
	if out.IsError {
		t.Fatalf("%s: %s", name, out.Result)
	}
	return out
}

// waitEvents waits until a session has n events of kind, and returns all.
func waitEvents(t *testing.T, h *host.Host, sessionID string, kind api.Kind, n int) []api.Event {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs, err := h.Sessions().Events(context.Background(), sessionID, 0, 10000)
		if err != nil {
			t.Fatal(err)
		}
		if len(find(evs, kind)) >= n {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %d×%s; events: %s", n, kind, kinds(evs))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func firedMessages(t *testing.T, evs []api.Event) []string {
	var out []string
	for _, e := range find(evs, api.KindReminderFired) {
		f, err := api.Decode[api.ReminderFired](e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f.Message)
	}
	return out
}

func TestReminders(t *testing.T) {
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			st := openStore(t, driver)
			h, fake := timerHost(t, st, reminderTools(t), host.Options{})
			ctx := context.Background()
			sess, _, err := h.Sessions().Create(ctx, host.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// Due 3 s on: the six calls before the listing are done by then
			// even on a loaded machine under -race (a reminder firing
			// meanwhile would make the next call session_busy).
			callIn(t, h, sess.ID, "remind", remindInput{Key: "a", InMs: 3300, Message: "wake a"})
			callIn(t, h, sess.ID, "remind", remindInput{Key: "b", InMs: 3200, Message: "wake b early"})
			callIn(t, h, sess.ID, "remind", remindInput{Key: "b", InMs: 3600, Message: "wake b moved"}) // moves b
			callIn(t, h, sess.ID, "remind", remindInput{Key: "c", InMs: 3400, Message: "wake c"})
			callIn(t, h, sess.ID, "forget", remindInput{Key: "c"})
			listed := string(callIn(t, h, sess.ID, "reminders", struct{}{}).Result)
			if !strings.Contains(listed, "wake a") || !strings.Contains(listed, "wake b moved") || strings.Contains(listed, "wake c") || strings.Contains(listed, "early") {
				t.Fatalf("listed: %s", listed)
			}
			waitEvents(t, h, sess.ID, api.KindReminderSet, 4)
			// Both fire, each as a model turn with its message; the moved
			// and the cancelled ones do not.
			waitEvents(t, h, sess.ID, api.KindReminderFired, 2)
			waitEvents(t, h, sess.ID, api.KindTurnCompleted, 6+2) // six direct calls, two woken turns
			time.Sleep(time.Second)
			evs, _ := h.Sessions().Events(ctx, sess.ID, 0, 10000)
			got := firedMessages(t, evs)
			slices.Sort(got) // due within River's release interval, they may fire in either order
			if len(got) != 2 || got[0] != "wake a" || got[1] != "wake b moved" {
				t.Fatalf("fired %q, want [wake a, wake b moved]; events: %s", got, kinds(evs))
			}
			if n := len(fake.Requests()); n != 2 {
				t.Fatalf("the model was asked %d times, want 2 (one turn per reminder)", n)
			}
			for i, r := range fake.Requests() {
				if !strings.Contains(string(r), "wake a") && !strings.Contains(string(r), "wake b moved") {
					t.Fatalf("woken turn %d's request lacks its message: %s", i, r)
				}
			}
			if listed := string(callIn(t, h, sess.ID, "reminders", struct{}{}).Result); listed != "[]" {
				t.Fatalf("after firing, listed: %s", listed)
			}
		})
	}
}

// TestReminderQueued: a reminder due while a turn runs waits for it, and
// fires after.
func TestReminderQueued(t *testing.T) {
	st := openStore(t, "sqlite")
	h, fake := timerHost(t, st, reminderTools(t), host.Options{})
	release := make(chan struct{})
	fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "c1", Name: "remind", Input: `{"key":"k","inMs":100,"message":"queued wake"}`}}},
		fakemodel.Reply{Until: release, Text: []string{"first turn done"}})
	ctx := context.Background()
	sess, _, err := h.Sessions().Create(ctx, host.SessionOptions{Message: "set a reminder"})
	if err != nil {
		t.Fatal(err)
	}
	waitEvents(t, h, sess.ID, api.KindReminderSet, 1)
	time.Sleep(6 * time.Second) // due, and past River's scheduler's release (every 5 s)
	evs, _ := h.Sessions().Events(ctx, sess.ID, 0, 10000)
	if len(find(evs, api.KindReminderFired)) != 0 {
		t.Fatalf("the reminder fired into a running turn: %s", kinds(evs))
	}
	close(release)
	evs = waitEvents(t, h, sess.ID, api.KindReminderFired, 1)
	first := find(evs, api.KindTurnCompleted)[0].Seq
	if fired := find(evs, api.KindReminderFired)[0].Seq; fired < first {
		t.Fatalf("fired at seq %d, before the first turn completed (%d)", fired, first)
	}
	waitEvents(t, h, sess.ID, api.KindTurnCompleted, 2)
}

func TestRemindersRefused(t *testing.T) {
	set := reminderTools(t)
	st := openStore(t, "sqlite")
	h, _ := timerHost(t, st, set, host.Options{})
	out, err := h.CallTool(context.Background(), "remind", remindInput{Key: "a", InMs: 10, Message: "m"}, nil)
	if err != nil || !out.IsError || !strings.Contains(string(out.Result), "not in a session") {
		t.Fatalf("outside a session: %v %s", err, out.Result)
	}
	sess, _, _ := h.Sessions().Create(context.Background(), host.SessionOptions{})
	for _, in := range []remindInput{{Key: "", InMs: 1, Message: "m"}, {Key: "a", Message: " "}} {
		if out, _ := h.CallTool(context.Background(), "remind", in, &host.CallOptions{SessionID: sess.ID}); !out.IsError {
			t.Errorf("%+v was accepted", in)
		}
	}
	mem, _ := timerHost(t, memory.New(), set, host.Options{})
	msess, _, _ := mem.Sessions().Create(context.Background(), host.SessionOptions{})
	out, err = mem.CallTool(context.Background(), "remind", remindInput{Key: "a", InMs: 10, Message: "m"}, &host.CallOptions{SessionID: msess.ID})
	if err != nil || !out.IsError || !strings.Contains(string(out.Result), "SQLite or PostgreSQL") {
		t.Fatalf("on the memory store: %v %s", err, out.Result)
	}
}

// TestReminderAcrossRestart: a reminder set on a host that stops fires once
// on the next.
func TestReminderAcrossRestart(t *testing.T) {
	st := openStore(t, "sqlite")
	state := t.TempDir()
	set := reminderTools(t)
	h1, _ := timerHost(t, st, set, host.Options{StateRoot: state})
	sess, _, _ := h1.Sessions().Create(context.Background(), host.SessionOptions{})
	callIn(t, h1, sess.ID, "remind", remindInput{Key: "later", InMs: 1500, Message: "after restart"})
	h1.Close()
	h2, _ := timerHost(t, st, set, host.Options{StateRoot: state})
	waitEvents(t, h2, sess.ID, api.KindTurnCompleted, 1+1)
	time.Sleep(time.Second)
	evs, _ := h2.Sessions().Events(context.Background(), sess.ID, 0, 10000)
	if got := firedMessages(t, evs); len(got) != 1 || got[0] != "after restart" {
		t.Fatalf("fired %q; events: %s", got, kinds(evs))
	}
}

// counting is a schedule's Run that counts its runs by tick, and how many
// run at once.
type counting struct {
	mu      sync.Mutex
	ticks   map[time.Time]int
	running atomic.Int32
	most    atomic.Int32
	sleep   time.Duration
}

func (c *counting) run(ctx context.Context, r *schedule.Run) error {
	n := c.running.Add(1)
	defer c.running.Add(-1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	c.mu.Lock()
	if c.ticks == nil {
		c.ticks = map[time.Time]int{}
	}
	c.ticks[r.Tick.UTC()]++
	c.mu.Unlock()
	if r.Schedule == "" || r.ID == "" {
		return errors.New("a run without its schedule or id")
	}
	select {
	case <-time.After(c.sleep):
	case <-ctx.Done():
	}
	return nil
}

func (c *counting) snapshot() map[time.Time]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[time.Time]int{}
	for k, v := range c.ticks {
		out[k] = v
	}
	return out
}

func mustSchedule(t testing.TB, name string, cfg schedule.Config) *schedule.Schedule {
	s, err := schedule.New(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func emptySet(t testing.TB) *tool.Set {
	set, _ := tool.NewSet()
	return set
}

// TestScheduleTwoHosts: two hosts on one database, a schedule ticking every
// second: every tick runs once.
func TestScheduleTwoHosts(t *testing.T) {
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			var c counting
			s := mustSchedule(t, "tick", schedule.Config{Cron: "* * * * * *", Run: c.run})
			hosts := []*host.Host{}
			for _, st := range openStores(t, driver, 2) {
				h, _ := timerHost(t, st, emptySet(t), host.Options{Schedules: []*schedule.Schedule{s}})
				hosts = append(hosts, h)
			}
			time.Sleep(5 * time.Second)
			for _, h := range hosts {
				h.Close()
			}
			ticks := c.snapshot()
			if len(ticks) < 3 {
				t.Fatalf("%d ticks ran in 5 s, want at least 3", len(ticks))
			}
			for tick, n := range ticks {
				if n != 1 {
					t.Errorf("tick %s ran %d times", tick.Format(time.TimeOnly), n)
				}
			}
			infos, err := hosts[0].ListSchedules(context.Background())
			if err != nil || len(infos) != 1 || len(infos[0].LastRuns) == 0 || infos[0].NextRun == nil {
				t.Fatalf("ListSchedules = %+v, %v", infos, err)
			}
			for _, r := range infos[0].LastRuns {
				if r.Status != api.RunCompleted && r.Status != api.RunFailed && r.Status != api.RunRunning && r.Status != api.RunInterrupted {
					t.Errorf("run %+v", r)
				}
			}
		})
	}
}

// TestScheduleCatchUp: a head left behind by downtime (three hours of
// hourly ticks missed) runs once (catch-up once) or is recorded skipped
// (catch-up skip), and the head moves to the next tick to come.
func TestScheduleCatchUp(t *testing.T) {
	for _, driver := range drivers {
		for _, policy := range []schedule.CatchUp{schedule.CatchUpOnce, schedule.CatchUpSkip} {
			t.Run(driver+"/"+string(policy), func(t *testing.T) {
				st := openStore(t, driver)
				var c counting
				s := mustSchedule(t, "hourly", schedule.Config{Cron: "@every 1h", CatchUp: policy, Run: c.run})
				missed := time.Now().Add(-3 * time.Hour).Truncate(time.Second)
				if err := st.(store.Timers).CreateScheduleState(context.Background(), store.ScheduleState{Name: "hourly", Spec: s.Spec(), NextAt: missed}); err != nil {
					t.Fatal(err)
				}
				h, _ := timerHost(t, st, emptySet(t), host.Options{Schedules: []*schedule.Schedule{s}})
				var runs []api.ScheduleRun
				deadline := time.Now().Add(20 * time.Second)
				for len(runs) == 0 || runs[0].Status == api.RunRunning {
					if time.Now().After(deadline) {
						t.Fatalf("no finished run: %+v", runs)
					}
					time.Sleep(50 * time.Millisecond)
					infos, _ := h.ListSchedules(context.Background())
					runs = infos[0].LastRuns
				}
				time.Sleep(300 * time.Millisecond)
				infos, _ := h.ListSchedules(context.Background())
				runs = infos[0].LastRuns
				if len(runs) != 1 || !runs[0].Tick.Equal(missed) {
					t.Fatalf("runs %+v, want one for the missed tick %s", runs, missed)
				}
				if next := *infos[0].NextRun; !next.After(time.Now()) {
					t.Fatalf("the head stayed in the past: %s", next)
				}
				switch policy {
				case schedule.CatchUpOnce:
					if runs[0].Status != api.RunCompleted || len(c.snapshot()) != 1 {
						t.Fatalf("catch-up once: %+v, ran %v", runs[0], c.snapshot())
					}
				case schedule.CatchUpSkip:
					if runs[0].Status != api.RunSkipped || !strings.Contains(runs[0].Error, "catch-up: skip") || len(c.snapshot()) != 0 {
						t.Fatalf("catch-up skip: %+v, ran %v", runs[0], c.snapshot())
					}
				}
			})
		}
	}
}

// TestScheduleOverlap: a run longer than the interval makes the ticks
// during it skipped (overlap: skip), never two at once; by hand, a busy
// schedule refuses.
func TestScheduleOverlap(t *testing.T) {
	st := openStore(t, "sqlite")
	c := counting{sleep: 2500 * time.Millisecond}
	s := mustSchedule(t, "slow", schedule.Config{Cron: "* * * * * *", Run: c.run})
	h, _ := timerHost(t, st, emptySet(t), host.Options{Schedules: []*schedule.Schedule{s}})
	for c.running.Load() == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := h.RunSchedule(context.Background(), "slow"); api.AsError(err).Code != api.CodeScheduleBusy {
		t.Fatalf("RunSchedule while a run is going: %v, want schedule_busy", err)
	}
	if _, err := h.RunSchedule(context.Background(), "nope"); api.AsError(err).Code != api.CodeScheduleNotFound {
		t.Fatalf("RunSchedule of an unknown schedule: %v", err)
	}
	time.Sleep(4 * time.Second)
	h.Close()
	if most := c.most.Load(); most != 1 {
		t.Fatalf("%d runs at once, want 1", most)
	}
	infos, _ := h.ListSchedules(context.Background())
	skipped := 0
	for _, r := range infos[0].LastRuns {
		if r.Status == api.RunSkipped {
			skipped++
			if !strings.Contains(r.Error, "still going (overlap: skip)") {
				t.Errorf("skipped run: %+v", r)
			}
		}
	}
	if skipped == 0 {
		t.Fatalf("no skipped run: %+v", infos[0].LastRuns)
	}
}

// TestScheduleRunByHand: a run asked for now runs on this host, is
// recorded manual, and ends completed.
func TestScheduleRunByHand(t *testing.T) {
	st := openStore(t, "sqlite")
	var c counting
	s := mustSchedule(t, "nightly", schedule.Config{Cron: "0 3 * * *", Run: c.run})
	h, _ := timerHost(t, st, emptySet(t), host.Options{Schedules: []*schedule.Schedule{s}})
	run, err := h.RunSchedule(context.Background(), "nightly")
	if err != nil || !run.Manual || run.Status != api.RunRunning {
		t.Fatalf("RunSchedule = %+v, %v", run, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		infos, _ := h.ListSchedules(context.Background())
		if r := infos[0].LastRuns; len(r) == 1 && r[0].Status == api.RunCompleted && r[0].ID == run.ID && r[0].Ended != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs: %+v", infos[0].LastRuns)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mem, _ := timerHost(t, memory.New(), emptySet(t), host.Options{Schedules: []*schedule.Schedule{s}})
	if _, err := mem.RunSchedule(context.Background(), "nightly"); api.AsError(err).Code != api.CodeNoJobs {
		t.Fatalf("on the memory store: %v", err)
	}
}

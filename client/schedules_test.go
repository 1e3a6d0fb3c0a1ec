package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/client"
	"github.com/agentsdk/agentsdk/evals"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/schedule"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// startScheduleHost starts a host with the schedules and the test's tools
// behind the real HTTP API, on st (nil: the in-memory store, which runs no
// jobs), and returns a client of it.
func startScheduleHost(t *testing.T, st store.Store, schedules ...*schedule.Schedule) *client.Client {
	t.Helper()
	ctx := context.Background()
	set, err := tool.NewSet(testTools()...)
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(set, &host.Options{StateRoot: t.TempDir(), Store: st, Schedules: schedules})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := evals.New(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	handler, err := serve.New(h, &serve.Options{Slug: testSlug, Token: testToken, Evals: ev})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(func() { handler.Shutdown(); srv.Close(); h.Close() })
	c, err := client.New(srv.URL+"/"+testSlug, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newSchedule(t *testing.T, name string, cfg schedule.Config) *schedule.Schedule {
	t.Helper()
	s, err := schedule.New(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// scheduleInfo returns the listing's schedule of that name.
func scheduleInfo(t *testing.T, c *client.Client, name string) api.ScheduleInfo {
	t.Helper()
	list, err := c.Schedules(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no schedule %s in %+v", name, list)
	return api.ScheduleInfo{}
}

// waitRun polls the listing until the schedule has a run that matches,
// and returns it.
func waitRun(t *testing.T, c *client.Client, name, what string, match func(api.ScheduleRun) bool) api.ScheduleRun {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		info := scheduleInfo(t, c, name)
		for _, r := range info.LastRuns {
			if match(r) {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("schedule %s: no %s within 30s; last runs: %+v", name, what, info.LastRuns)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// wantCode checks that err is the host's error answer with the code and
// the status.
func wantCode(t *testing.T, what string, err error, code api.Code, status int) {
	t.Helper()
	var se *client.StatusError
	if !errors.As(err, &se) || se.Status != status || !errors.Is(err, &api.Error{Code: code}) {
		t.Errorf("%s: %v (%T), want %s (HTTP %d)", what, err, err, code, status)
	}
}

// The client lists a host's schedules with their runs, and runs one by
// hand: a tick schedule ticks on its own, a run by hand is listed as
// manual, a schedule that skips overlaps refuses a second run while one is
// going (schedule_busy), an unknown one is schedule_not_found, a failing
// run is listed with its error.
func TestSchedules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })

	ticks := make(chan time.Time, 100)
	slowStarted, slowRelease := make(chan string, 10), make(chan struct{})
	c := startScheduleHost(t, st,
		newSchedule(t, "tick", schedule.Config{Description: "Every second.", Cron: "* * * * * *", TimeZone: "Europe/Berlin",
			Run: func(ctx context.Context, r *schedule.Run) error {
				select {
				case ticks <- r.Tick:
				default:
				}
				return nil
			}}),
		newSchedule(t, "slow", schedule.Config{Cron: "0 0 1 1 *", CatchUp: schedule.CatchUpSkip,
			Run: func(ctx context.Context, r *schedule.Run) error {
				slowStarted <- r.ID
				select {
				case <-slowRelease:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}}),
		newSchedule(t, "broken", schedule.Config{Cron: "@every 1h", Overlap: schedule.OverlapAllow,
			Run: func(ctx context.Context, r *schedule.Run) error { return errors.New("the tracker is down") }}),
	)

	list, err := c.Schedules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range list {
		names = append(names, s.Name)
		if s.NextRun == nil || s.NextRun.Before(time.Now().Add(-time.Minute)) {
			t.Errorf("%s: next run %v", s.Name, s.NextRun)
		}
	}
	if want := []string{"broken", "slow", "tick"}; !slices.Equal(names, want) {
		t.Fatalf("schedules %v, want %v", names, want)
	}
	if b, s, tk := list[0], list[1], list[2]; b.Cron != "@every 1h" || b.TimeZone != "UTC" || b.Overlap != "allow" || b.CatchUp != "once" ||
		s.Cron != "0 0 1 1 *" || s.Overlap != "skip" || s.CatchUp != "skip" ||
		tk.Cron != "* * * * * *" || tk.TimeZone != "Europe/Berlin" || tk.Description != "Every second." {
		t.Errorf("schedules as listed: %+v", list)
	}

	t.Run("ticks", func(t *testing.T) {
		select {
		case <-ticks:
		case <-time.After(30 * time.Second):
			t.Fatal("the tick schedule did not run within 30s")
		}
		r := waitRun(t, c, "tick", "completed tick", func(r api.ScheduleRun) bool { return r.Status == api.RunCompleted })
		if r.Manual || r.ID == "" || r.Schedule != "tick" || r.Host == "" || r.Ended == nil || r.Ended.Before(r.Started) ||
			!r.Tick.Equal(r.Tick.Truncate(time.Second)) || r.Error != "" {
			t.Errorf("a tick's run: %+v", r)
		}
		info := scheduleInfo(t, c, "tick")
		if len(info.LastRuns) > 10 {
			t.Errorf("%d last runs listed, want at most 10", len(info.LastRuns))
		}
		for i := 1; i < len(info.LastRuns); i++ {
			if info.LastRuns[i].Started.After(info.LastRuns[i-1].Started) {
				t.Errorf("last runs not newest first: %+v", info.LastRuns)
			}
		}
	})

	t.Run("by hand, busy", func(t *testing.T) {
		before := time.Now()
		run, err := c.RunSchedule(ctx, "slow")
		if err != nil {
			t.Fatal(err)
		}
		if run.ID == "" || run.Schedule != "slow" || !run.Manual || run.Status != api.RunRunning || run.Started.Before(before.Add(-time.Second)) {
			t.Errorf("run by hand: %+v", run)
		}
		select {
		case id := <-slowStarted:
			if id != run.ID {
				t.Errorf("the run that started is %s, the host answered %s", id, run.ID)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the run by hand did not start")
		}
		_, err = c.RunSchedule(ctx, "slow")
		wantCode(t, "a second run while one is going", err, api.CodeScheduleBusy, http.StatusConflict)
		if err != nil && !strings.Contains(err.Error(), run.ID) {
			t.Errorf("schedule_busy does not name the run going: %v", err)
		}
		if going := waitRun(t, c, "slow", "running run", func(r api.ScheduleRun) bool { return r.ID == run.ID }); going.Status != api.RunRunning {
			t.Errorf("the run going is listed as %+v", going)
		}
		close(slowRelease)
		done := waitRun(t, c, "slow", "completed run", func(r api.ScheduleRun) bool { return r.ID == run.ID && r.Status == api.RunCompleted })
		if !done.Manual || done.Ended == nil {
			t.Errorf("the run by hand, ended: %+v", done)
		}
		// Ended, it can run again.
		again, err := c.RunSchedule(ctx, "slow")
		if err != nil || again.ID == run.ID {
			t.Fatalf("running again after the end: %+v %v", again, err)
		}
		<-slowStarted
		waitRun(t, c, "slow", "second run's end", func(r api.ScheduleRun) bool { return r.ID == again.ID && r.Status == api.RunCompleted })
	})

	t.Run("failed", func(t *testing.T) {
		run, err := c.RunSchedule(ctx, "broken")
		if err != nil {
			t.Fatal(err)
		}
		r := waitRun(t, c, "broken", "failed run", func(r api.ScheduleRun) bool { return r.ID == run.ID && r.Status != api.RunRunning })
		if r.Status != api.RunFailed || r.Error != "the tracker is down" || r.Ended == nil {
			t.Errorf("a failing run: %+v", r)
		}
	})

	t.Run("not found", func(t *testing.T) {
		// A name with a slash reaches the route escaped, as it is.
		for _, name := range []string{"nope", "tick/../slow", "tick "} {
			_, err := c.RunSchedule(ctx, name)
			wantCode(t, "RunSchedule("+name+")", err, api.CodeScheduleNotFound, http.StatusNotFound)
		}
	})
}

// On a host whose store runs no jobs, the schedules are listed without a
// next run or runs, and a run by hand is refused with no_jobs.
func TestSchedulesWithoutJobs(t *testing.T) {
	t.Parallel()
	c := startScheduleHost(t, nil, newSchedule(t, "tick", schedule.Config{Cron: "* * * * * *",
		Run: func(ctx context.Context, r *schedule.Run) error { return nil }}))
	list, err := c.Schedules(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "tick" || list[0].NextRun != nil || len(list[0].LastRuns) != 0 {
		t.Errorf("schedules on the in-memory store: %+v", list)
	}
	_, err = c.RunSchedule(context.Background(), "tick")
	wantCode(t, "a run by hand on the in-memory store", err, api.CodeNoJobs, http.StatusServiceUnavailable)
}

// A host with no schedules lists none, and runs none by hand.
func TestSchedulesNone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	list, err := b.client.Schedules(context.Background())
	if err != nil || len(list) != 0 {
		t.Errorf("schedules of a host with none: %#v, %v", list, err)
	}
	_, err = b.client.RunSchedule(context.Background(), "tick")
	wantCode(t, "running a schedule the host does not have", err, api.CodeScheduleNotFound, http.StatusNotFound)
}

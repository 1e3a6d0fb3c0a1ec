package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// testTimers keeps the state of schedules and reminders in a store that
// has it (store.Timers): a schedule's head is inserted and replaced; a
// run is held by its lease while running, ends once, and is interrupted
// when its hold ran out; a session's reminders are one per key, each
// taken by its id once; and what a store.Tx wrote rolls back with it.
func testTimers(t *testing.T, s store.Store) {
	tm, ok := s.(store.Timers)
	if !ok {
		t.Skip("the store keeps no timers")
	}
	t.Run("ScheduleState", func(t *testing.T) { testScheduleState(t, tm) })
	t.Run("ScheduleRuns", func(t *testing.T) { testScheduleRuns(t, tm) })
	t.Run("Reminders", func(t *testing.T) { testReminders(t, s, tm) })
	t.Run("RollBack", func(t *testing.T) { testTimersRollBack(t, s, tm) })
}

var timerBase = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

func testScheduleState(t *testing.T, tm store.Timers) {
	if _, err := tm.ScheduleState(ctx, "daily"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ScheduleState of a new schedule: %v", err)
	}
	put := func(st store.ScheduleState) {
		t.Helper()
		if err := tm.CreateScheduleState(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want store.ScheduleState) {
		t.Helper()
		got, err := tm.ScheduleState(ctx, want.Name)
		if err != nil || got.Name != want.Name || got.Spec != want.Spec || !got.NextAt.Equal(want.NextAt) {
			t.Errorf("ScheduleState(%s) = %+v, %v; want %+v", want.Name, got, err, want)
		}
	}
	daily := store.ScheduleState{Name: "daily", Spec: "0 9 * * *|UTC", NextAt: timerBase}
	put(daily)
	check(daily)
	hourly := store.ScheduleState{Name: "hourly", Spec: "0 * * * *|UTC", NextAt: timerBase.Add(time.Hour)}
	put(hourly)
	// A head is made once: a second host finds it made.
	if err := tm.CreateScheduleState(ctx, store.ScheduleState{Name: "daily", Spec: "other", NextAt: timerBase.Add(time.Minute)}); !errors.Is(err, store.ErrExists) {
		t.Errorf("creating a head twice: %v", err)
	}
	check(daily)
	// A new spec starts a new chain: an advance from the head it finds.
	changed := store.ScheduleState{Name: "daily", Spec: "0 10 * * *|Europe/Paris", NextAt: timerBase.Add(24 * time.Hour)}
	if err := tm.AdvanceSchedule(ctx, daily.NextAt, changed); err != nil {
		t.Fatal(err)
	}
	daily = changed
	check(daily)
	check(hourly)

	// Advancing moves the head only from the tick it is at.
	next := store.ScheduleState{Name: "daily", Spec: daily.Spec, NextAt: daily.NextAt.Add(24 * time.Hour)}
	if err := tm.AdvanceSchedule(ctx, daily.NextAt.Add(-24*time.Hour), next); !errors.Is(err, store.ErrConflict) {
		t.Errorf("advancing from another tick: %v", err)
	}
	check(daily)
	if err := tm.AdvanceSchedule(ctx, timerBase, store.ScheduleState{Name: "nope", Spec: "x", NextAt: timerBase}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("advancing a schedule without a head: %v", err)
	}
	if err := tm.AdvanceSchedule(ctx, daily.NextAt, next); err != nil {
		t.Fatal(err)
	}
	check(next)
	if err := tm.AdvanceSchedule(ctx, daily.NextAt, next); !errors.Is(err, store.ErrConflict) {
		t.Errorf("advancing from the same tick twice: %v", err)
	}
	check(hourly)

	// Of hosts advancing one tick at once, exactly one does.
	from, to := next.NextAt, next.NextAt.Add(24*time.Hour)
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, lost := 0, 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := tm.AdvanceSchedule(ctx, from, store.ScheduleState{Name: "daily", Spec: fmt.Sprintf("host %d", i), NextAt: to})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, store.ErrConflict):
				lost++
			default:
				t.Errorf("AdvanceSchedule: %v", err)
			}
		}()
	}
	wg.Wait()
	if won != 1 || lost != 7 {
		t.Errorf("of 8 hosts advancing one tick, %d did and %d conflicted; want 1 and 7", won, lost)
	}
	if got, err := tm.ScheduleState(ctx, "daily"); err != nil || !got.NextAt.Equal(to) {
		t.Errorf("ScheduleState after the race = %+v, %v", got, err)
	}
}

// run is a schedule's run as StartScheduleRun takes it.
func run(id, schedule string, status api.ScheduleRunStatus, started time.Time) api.ScheduleRun {
	return api.ScheduleRun{ID: id, Schedule: schedule, Tick: started.Truncate(time.Minute), Status: status, Host: "h1", Started: started}
}

// runString shows a run's fields, times in UTC, to compare runs.
func runString(r api.ScheduleRun) string {
	ended := "-"
	if r.Ended != nil {
		ended = r.Ended.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%s %s tick=%s manual=%t %s host=%s started=%s ended=%s error=%q", r.ID, r.Schedule, r.Tick.UTC().Format(time.RFC3339Nano),
		r.Manual, r.Status, r.Host, r.Started.UTC().Format(time.RFC3339Nano), ended, r.Error)
}

func testScheduleRuns(t *testing.T, tm store.Timers) {
	start := func(r api.ScheduleRun, lease time.Time) {
		t.Helper()
		if err := tm.StartScheduleRun(ctx, r, lease); err != nil {
			t.Fatal(err)
		}
	}
	list := func(name string, limit int) []api.ScheduleRun {
		t.Helper()
		runs, err := tm.ListScheduleRuns(ctx, name, limit)
		if err != nil {
			t.Fatal(err)
		}
		return runs
	}
	find := func(id string) api.ScheduleRun {
		t.Helper()
		for _, r := range list("daily", 100) {
			if r.ID == id {
				return r
			}
		}
		t.Fatalf("run %s not listed", id)
		return api.ScheduleRun{}
	}
	at := func(d time.Duration) time.Time { return timerBase.Add(d) }
	ended := func(d time.Duration) *time.Time { e := at(d); return &e }

	if runs := list("daily", 10); len(runs) != 0 {
		t.Errorf("runs of a new schedule: %v", runs)
	}
	if _, err := tm.RunningScheduleRun(ctx, "daily", at(0)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RunningScheduleRun of a new schedule: %v", err)
	}

	// A running run is held until its lease runs out; a renewal moves it.
	r1 := run("r1", "daily", api.RunRunning, at(0))
	start(r1, at(time.Minute))
	if got, err := tm.RunningScheduleRun(ctx, "daily", at(30*time.Second)); err != nil || runString(got) != runString(r1) {
		t.Errorf("RunningScheduleRun = %s, %v; want %s", runString(got), err, runString(r1))
	}
	if _, err := tm.RunningScheduleRun(ctx, "daily", at(2*time.Minute)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RunningScheduleRun after the lease ran out: %v", err)
	}
	if _, err := tm.RunningScheduleRun(ctx, "hourly", at(30*time.Second)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RunningScheduleRun of another schedule: %v", err)
	}
	if err := tm.RenewScheduleRun(ctx, "r1", at(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, err := tm.RunningScheduleRun(ctx, "daily", at(2*time.Minute)); err != nil || got.ID != "r1" {
		t.Errorf("RunningScheduleRun after renewing = %s, %v", runString(got), err)
	}
	if err := tm.StartScheduleRun(ctx, r1, at(time.Minute)); !errors.Is(err, store.ErrExists) {
		t.Errorf("starting a run twice: %v", err)
	}

	// A skipped run is stored as ended, and is not running.
	r2 := run("r2", "daily", api.RunSkipped, at(time.Minute))
	r2.Error = "the previous run is still going"
	start(r2, time.Time{})
	want2 := r2
	want2.Ended = ended(time.Minute)
	if got := find("r2"); runString(got) != runString(want2) {
		t.Errorf("skipped run = %s; want %s", runString(got), runString(want2))
	}
	if err := tm.RenewScheduleRun(ctx, "r2", at(time.Hour)); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("renewing a skipped run: %v", err)
	}
	if err := tm.EndScheduleRun(ctx, "r2", api.RunCompleted, "", at(time.Hour)); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("ending a skipped run: %v", err)
	}

	// A run ends once.
	if err := tm.EndScheduleRun(ctx, "r1", api.RunCompleted, "", at(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	want1 := r1
	want1.Status, want1.Ended = api.RunCompleted, ended(3*time.Minute)
	if got := find("r1"); runString(got) != runString(want1) {
		t.Errorf("completed run = %s; want %s", runString(got), runString(want1))
	}
	if err := tm.EndScheduleRun(ctx, "r1", api.RunFailed, "late", at(4*time.Minute)); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("ending a run twice: %v", err)
	}
	if err := tm.RenewScheduleRun(ctx, "r1", at(time.Hour)); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("renewing an ended run: %v", err)
	}
	if _, err := tm.RunningScheduleRun(ctx, "daily", at(2*time.Minute)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RunningScheduleRun after the run ended: %v", err)
	}
	if err := tm.EndScheduleRun(ctx, "nope", api.RunCompleted, "", at(0)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ending a missing run: %v", err)
	}

	// Interrupting touches the schedule's running runs whose hold ran out,
	// and no others.
	r3 := run("r3", "daily", api.RunRunning, at(4*time.Minute))
	start(r3, at(10*time.Minute))
	r4 := run("r4", "daily", api.RunRunning, at(5*time.Minute))
	r4.Manual, r4.Host = true, "h2"
	start(r4, at(20*time.Minute))
	r5 := run("r5", "hourly", api.RunRunning, at(4*time.Minute))
	start(r5, at(10*time.Minute))
	if n, err := tm.InterruptScheduleRuns(ctx, "daily", at(15*time.Minute)); err != nil || n != 1 {
		t.Errorf("InterruptScheduleRuns = %d, %v; want 1", n, err)
	}
	want3 := r3
	want3.Status, want3.Ended = api.RunInterrupted, ended(15*time.Minute)
	if got := find("r3"); runString(got) != runString(want3) {
		t.Errorf("interrupted run = %s; want %s", runString(got), runString(want3))
	}
	if err := tm.RenewScheduleRun(ctx, "r3", at(time.Hour)); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("renewing an interrupted run: %v", err)
	}
	if err := tm.EndScheduleRun(ctx, "r3", api.RunCompleted, "", at(time.Hour)); !errors.Is(err, store.ErrNotRunning) {
		t.Errorf("ending an interrupted run: %v", err)
	}
	if got, err := tm.RunningScheduleRun(ctx, "daily", at(15*time.Minute)); err != nil || runString(got) != runString(r4) {
		t.Errorf("RunningScheduleRun = %s, %v; want %s", runString(got), err, runString(r4))
	}
	if got, err := tm.RunningScheduleRun(ctx, "hourly", at(9*time.Minute)); err != nil || got.ID != "r5" {
		t.Errorf("the other schedule's run = %s, %v", runString(got), err)
	}
	if n, err := tm.InterruptScheduleRuns(ctx, "daily", at(15*time.Minute)); err != nil || n != 0 {
		t.Errorf("InterruptScheduleRuns again = %d, %v; want 0", n, err)
	}
	if runs := list("hourly", 10); len(runs) != 1 || runs[0].Status != api.RunRunning {
		t.Errorf("the other schedule's runs: %v", runs)
	}

	// A failed run keeps its error.
	if err := tm.EndScheduleRun(ctx, "r4", api.RunFailed, "boom", at(16*time.Minute)); err != nil {
		t.Fatal(err)
	}
	want4 := r4
	want4.Status, want4.Error, want4.Ended = api.RunFailed, "boom", ended(16*time.Minute)
	if got := find("r4"); runString(got) != runString(want4) {
		t.Errorf("failed run = %s; want %s", runString(got), runString(want4))
	}

	// The latest started first, at most limit.
	var ids []string
	for _, r := range list("daily", 10) {
		ids = append(ids, r.ID)
	}
	if fmt.Sprint(ids) != "[r4 r3 r2 r1]" {
		t.Errorf("runs listed %v, want [r4 r3 r2 r1]", ids)
	}
	if runs := list("daily", 2); len(runs) != 2 || runs[0].ID != "r4" || runs[1].ID != "r3" {
		t.Errorf("runs listed with limit 2: %v", runs)
	}
}

// reminderString shows a reminder's fields, times in UTC, to compare them.
func reminderString(r api.Reminder) string {
	return fmt.Sprintf("%s/%s %s at=%s %q set=%s", r.SessionID, r.Key, r.ID, r.At.UTC().Format(time.RFC3339Nano), r.Message,
		r.SetAt.UTC().Format(time.RFC3339Nano))
}

func reminderStrings(rs []api.Reminder) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, reminderString(r))
	}
	return out
}

func testReminders(t *testing.T, s store.Store, tm store.Timers) {
	at := func(d time.Duration) time.Time { return timerBase.Add(d) }
	if _, err := tm.SetReminder(ctx, api.Reminder{SessionID: "nope", Key: "k", ID: "rem0", At: at(0), Message: "hi"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetReminder on a missing session: %v", err)
	}
	mustSession(t, s, "s")
	mustSession(t, s, "s2")
	set := func(r api.Reminder) api.Reminder {
		t.Helper()
		got, err := tm.SetReminder(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	check := func(sessionID string, want ...api.Reminder) {
		t.Helper()
		got, err := tm.Reminders(ctx, sessionID)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := fmt.Sprint(reminderStrings(got)), fmt.Sprint(reminderStrings(want)); g != w {
			t.Errorf("Reminders(%s) =\n%s\nwant\n%s", sessionID, g, w)
		}
	}

	before := time.Now().Add(-time.Minute)
	standup := set(api.Reminder{SessionID: "s", Key: "standup", ID: "rem1", At: at(2 * time.Hour), Message: "standup"})
	if standup.SetAt.Before(before) || standup.SetAt.After(time.Now().Add(time.Minute)) || standup.ID != "rem1" || !standup.At.Equal(at(2*time.Hour)) {
		t.Errorf("SetReminder = %s; want SetAt now", reminderString(standup))
	}
	lunch := set(api.Reminder{SessionID: "s", Key: "lunch", ID: "rem2", At: at(time.Hour), Message: "lunch", SetAt: at(0)})
	if !lunch.SetAt.Equal(at(0)) {
		t.Errorf("SetReminder kept SetAt %s, want %s", lunch.SetAt, at(0))
	}
	other := set(api.Reminder{SessionID: "s2", Key: "standup", ID: "rem3", At: at(0), Message: "other", SetAt: at(0)})
	check("s", lunch, standup) // the earliest due first
	check("s2", other)
	check("nope")

	// Setting a key again replaces its reminder: a new id, a new time,
	// still one reminder.
	moved := set(api.Reminder{SessionID: "s", Key: "standup", ID: "rem4", At: at(30 * time.Minute), Message: "moved", SetAt: at(time.Minute)})
	check("s", moved, lunch)
	// Due across sessions, the earliest first, before a time, at most limit.
	due := func(before time.Time, limit int, want ...api.Reminder) {
		t.Helper()
		got, err := tm.DueReminders(ctx, before, limit)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := fmt.Sprint(reminderStrings(got)), fmt.Sprint(reminderStrings(want)); g != w {
			t.Errorf("DueReminders(%s, %d) =\n%s\nwant\n%s", before, limit, g, w)
		}
	}
	due(at(2*time.Hour), 10, other, moved, lunch)
	due(at(time.Hour), 10, other, moved) // before, not at
	due(at(2*time.Hour), 1, other)
	due(at(0), 10)
	if _, err := tm.TakeReminder(ctx, "rem1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("taking a reminder whose key was set again: %v", err)
	}
	if got, err := tm.TakeReminder(ctx, "rem4"); err != nil || reminderString(got) != reminderString(moved) {
		t.Errorf("TakeReminder = %s, %v; want %s", reminderString(got), err, reminderString(moved))
	}
	if _, err := tm.TakeReminder(ctx, "rem4"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("taking a reminder twice: %v", err)
	}
	check("s", lunch)

	if _, err := tm.CancelReminder(ctx, "s", "standup"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("cancelling a taken reminder: %v", err)
	}
	if got, err := tm.CancelReminder(ctx, "s", "lunch"); err != nil || reminderString(got) != reminderString(lunch) {
		t.Errorf("CancelReminder = %s, %v; want %s", reminderString(got), err, reminderString(lunch))
	}
	if _, err := tm.CancelReminder(ctx, "s", "lunch"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("cancelling a reminder twice: %v", err)
	}
	if _, err := tm.TakeReminder(ctx, "rem2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("taking a cancelled reminder: %v", err)
	}
	check("s")
	check("s2", other) // the other session's reminder with the same key
}

// testTimersRollBack writes timers through a store.Tx: what a function
// that fails wrote is gone, what one that succeeds wrote is there, and
// within the transaction its own writes are seen.
func testTimersRollBack(t *testing.T, s store.Store, tm store.Timers) {
	j, ok := s.(store.Jobs)
	if !ok {
		t.Skip("the store runs no jobs")
	}
	mustSession(t, s, "tx")
	write := func(tx store.Tx, name string) error {
		if err := tx.CreateScheduleState(ctx, store.ScheduleState{Name: name, Spec: "@hourly", NextAt: timerBase}); err != nil {
			return err
		}
		if _, err := tx.ScheduleState(ctx, name); err != nil {
			return fmt.Errorf("reading what the transaction wrote: %w", err)
		}
		if err := tx.StartScheduleRun(ctx, run(name+"-run", name, api.RunRunning, timerBase), timerBase.Add(time.Hour)); err != nil {
			return err
		}
		if _, err := tx.RunningScheduleRun(ctx, name, timerBase); err != nil {
			return fmt.Errorf("reading what the transaction wrote: %w", err)
		}
		_, err := tx.SetReminder(ctx, api.Reminder{SessionID: "tx", Key: name, ID: name + "-rem", At: timerBase, Message: name})
		return err
	}
	rolledBack := errors.New("rolled back")
	if err := j.InTx(ctx, func(tx store.Tx) error {
		if err := write(tx, "lost"); err != nil {
			return err
		}
		return rolledBack
	}); !errors.Is(err, rolledBack) {
		t.Fatalf("InTx = %v", err)
	}
	if _, err := tm.ScheduleState(ctx, "lost"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("schedule state of a rolled back transaction: %v", err)
	}
	if runs, err := tm.ListScheduleRuns(ctx, "lost", 10); err != nil || len(runs) != 0 {
		t.Errorf("runs of a rolled back transaction: %v, %v", runs, err)
	}
	if rs, err := tm.Reminders(ctx, "tx"); err != nil || len(rs) != 0 {
		t.Errorf("reminders of a rolled back transaction: %v, %v", rs, err)
	}

	if err := j.InTx(ctx, func(tx store.Tx) error { return write(tx, "kept") }); err != nil {
		t.Fatalf("InTx = %v", err)
	}
	if _, err := tm.ScheduleState(ctx, "kept"); err != nil {
		t.Errorf("schedule state of a committed transaction: %v", err)
	}
	if runs, err := tm.ListScheduleRuns(ctx, "kept", 10); err != nil || len(runs) != 1 {
		t.Errorf("runs of a committed transaction: %v, %v", runs, err)
	}
	if rs, err := tm.Reminders(ctx, "tx"); err != nil || len(rs) != 1 || rs[0].ID != "kept-rem" {
		t.Errorf("reminders of a committed transaction: %v, %v", rs, err)
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// The table of agent-sdk schedules: one line a schedule, its latest run's
// status and start, the error of its latest failed run (cleaned, on one
// line, cut), and a note when the host runs no jobs.
func TestPrintSchedules(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ptr := func(v time.Time) *time.Time { return &v }
	next := ptr(at("2026-03-01T09:00:00+01:00"))
	list := []api.ScheduleInfo{
		{Name: "nightly_report", Cron: "0 2 * * *", TimeZone: "Europe/Berlin", NextRun: next, LastRuns: []api.ScheduleRun{
			{Status: api.RunCompleted, Started: at("2026-02-28T01:00:00.5Z"), Manual: true},
			{Status: api.RunFailed, Started: at("2026-02-27T01:00:00Z"), Error: "the tracker\nsaid \x1b[31mno\x1b[0m:\t" + strings.Repeat("x", 80)},
			{Status: api.RunFailed, Started: at("2026-02-26T01:00:00Z"), Error: "older"},
		}},
		{Name: "tick", Cron: "* * * * * *", TimeZone: "UTC", NextRun: next, LastRuns: []api.ScheduleRun{
			{Status: api.RunSkipped, Started: at("2026-02-28T07:59:59Z"), Error: "run run_x was still going (overlap: skip)"},
		}},
		{Name: "idle", Cron: "@hourly", TimeZone: "UTC", NextRun: next},
	}
	var out, notes bytes.Buffer
	printSchedules(&out, &notes, list)
	want := `NAME            CRON         TZ             NEXT RUN              LAST RUN                                 LAST ERROR
nightly_report  0 2 * * *    Europe/Berlin  2026-03-01T08:00:00Z  completed 2026-02-28T01:00:00Z (manual)  the tracker said [31mno[0m: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…
tick            * * * * * *  UTC            2026-03-01T08:00:00Z  skipped 2026-02-28T07:59:59Z             -
idle            @hourly      UTC            2026-03-01T08:00:00Z  -                                        -
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
	if notes.Len() != 0 {
		t.Errorf("notes: %s", notes.String())
	}

	// A host that runs no jobs: no next run, and a note.
	out.Reset()
	printSchedules(&out, &notes, []api.ScheduleInfo{{Name: "tick", Cron: "* * * * * *", TimeZone: "UTC"}})
	if want := "NAME  CRON         TZ   NEXT RUN  LAST RUN  LAST ERROR\ntick  * * * * * *  UTC  -         -         -\n"; out.String() != want {
		t.Errorf("table without jobs:\n%s\nwant:\n%s", out.String(), want)
	}
	if !strings.Contains(notes.String(), "runs no durable jobs") {
		t.Errorf("notes without jobs: %q", notes.String())
	}

	out.Reset()
	printSchedules(&out, &notes, nil)
	if out.String() != "no schedules (define one in agent/schedules/<name>.go)\n" {
		t.Errorf("no schedules: %q", out.String())
	}
}

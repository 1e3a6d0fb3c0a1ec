package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentsdk/agentsdk/api"
)

// errorColumn is how many columns of a run's error the table shows.
const errorColumn = 60

func newSchedules() *cobra.Command {
	var (
		f      urlFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "schedules",
		Short: "List a running host's schedules and their last runs, or run one now (schedules run NAME)",
		Long: `schedules lists the schedules of the agent a running host serves (agent/schedules,
one per file, named after it), one a line:

  NAME         the schedule's name
  CRON         its cron spec
  TZ           the time zone the spec is read in
  NEXT RUN     when its next tick is due
  LAST RUN     the status of its latest run, and when that run started: running,
               completed, failed, skipped (the previous run was still going and
               overlap is skip, or the tick was missed in downtime and catch-up
               is skip) or interrupted (the host running it died; it is not run
               again). A run triggered by hand is marked (manual).
  LAST ERROR   the error of the latest failed run among the last ten

--json prints the listing as the API answers it, each schedule with its policies
(overlap, catchUp) and its last ten runs, the latest started first (id, tick,
status, host, startedAt, endedAt, error).

Schedules tick only on a host whose store runs durable jobs (SQLite, PostgreSQL):
on the in-memory store they are listed with no next run.

The token is --token, $AGENT_SDK_TOKEN, or <state>/token of the agent in --dir
(default: the current directory). Exit status: 0 listed; 2 refused (bad flags,
wrong token); 3 the host could not be reached or failed.`,
		Example: `  agent-sdk schedules --url http://127.0.0.1:3000/myagent
  agent-sdk schedules --url http://127.0.0.1:3000/myagent --json
  agent-sdk schedules run nightly_report --url http://127.0.0.1:3000/myagent`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			list, err := c.Schedules(cmd.Context())
			if err != nil {
				return remoteError(err)
			}
			for i := range list {
				if list[i].LastRuns == nil {
					list[i].LastRuns = []api.ScheduleRun{} // a list, as the API documents it
				}
			}
			if asJSON {
				if list == nil {
					list = []api.ScheduleInfo{}
				}
				return printListing(os.Stdout, map[string][]api.ScheduleInfo{"schedules": list})
			}
			printSchedules(os.Stdout, os.Stderr, list)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for machines")
	cmd.AddCommand(newScheduleRun())
	return cmd
}

func newScheduleRun() *cobra.Command {
	var f urlFlags
	cmd := &cobra.Command{
		Use:   "run NAME",
		Short: "Run a schedule now, once, outside its ticks, and print the run's id",
		Long: `schedules run starts a run of the schedule NAME on the host asked, at once, outside
its ticks (which it does not move), and prints the run's id. The run goes on in
the background; agent-sdk schedules shows how it ended (marked manual).

Exit status: 0 the run started; 2 refused: no schedule has that name (404
schedule_not_found), or its previous run is still going and its overlap policy
is skip (409 schedule_busy), or a bad flag or token; 3 the host could not be
reached or failed, or its store runs no durable jobs (503 no_jobs: serve with
SQLite or PostgreSQL).`,
		Example: `  agent-sdk schedules run nightly_report --url http://127.0.0.1:3000/myagent
  agent-sdk schedules run nightly_report --url https://agents.example.com/myagent --token "$AGENT_SDK_TOKEN"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			run, err := c.RunSchedule(cmd.Context(), args[0])
			if err != nil {
				return remoteError(err)
			}
			fmt.Fprintf(os.Stderr, "started run %s of schedule %s on %s; agent-sdk schedules --url %s shows how it ends\n",
				run.ID, clean(run.Schedule), orDash(clean(run.Host)), f.url)
			fmt.Println(run.ID)
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

// printSchedules writes the listing as a table to w, and to notes what
// the reader should know about it.
func printSchedules(w, notes io.Writer, list []api.ScheduleInfo) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no schedules (define one in agent/schedules/<name>.go)")
		return
	}
	rows := [][]string{{"NAME", "CRON", "TZ", "NEXT RUN", "LAST RUN", "LAST ERROR"}}
	ticking := true
	for _, s := range list {
		next := "-"
		if s.NextRun != nil {
			next = s.NextRun.UTC().Format(time.RFC3339)
		} else {
			ticking = false
		}
		last, lastErr := "-", "-"
		if len(s.LastRuns) > 0 {
			r := s.LastRuns[0]
			last = string(r.Status) + " " + r.Started.UTC().Format(time.RFC3339)
			if r.Manual {
				last += " (manual)"
			}
		}
		for _, r := range s.LastRuns {
			if r.Status == api.RunFailed {
				lastErr = orDash(fit(strings.Join(strings.Fields(clean(r.Error)), " "), errorColumn))
				break
			}
		}
		rows = append(rows, []string{clean(s.Name), clean(s.Cron), clean(s.TimeZone), next, clean(last), lastErr})
	}
	printTable(w, rows)
	if !ticking {
		fmt.Fprintln(notes, "agent-sdk: the host's store runs no durable jobs (the in-memory store): its schedules do not tick; serve with SQLite or PostgreSQL")
	}
}

// printTable writes rows as columns two spaces apart, padded by their
// width on a terminal; the last column is not padded.
func printTable(w io.Writer, rows [][]string) {
	var widths []int
	for _, row := range rows {
		for i, cell := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], textWidth(cell))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		for i, cell := range row {
			b.WriteString(cell)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-textWidth(cell)+2))
			}
		}
		b.WriteByte('\n')
	}
	io.WriteString(w, b.String())
}

// orDash returns s, or "-" for "".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

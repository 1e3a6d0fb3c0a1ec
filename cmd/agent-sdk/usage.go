package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/client"
	"github.com/agentsdk/agentsdk/internal/command"
	"github.com/agentsdk/agentsdk/model"
)

// noCost is how a null cost reads: the model has no price, and a figure
// is never made up (never $0).
const noCost = "—"

func newUsage() *cobra.Command {
	var (
		f        urlFlags
		from, to string
		by       string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "What a running host's model calls consumed: tokens and cost, in total and by principal, channel, model or session",
		Long: `usage asks the host at --url what its model calls consumed between --from and --to
(every call it recorded, of every session), and prints a table: a line per group with
--by (principal, channel, model or session; the costliest first), then the total:

  CALLS        model calls
  INPUT        input tokens at full price (without the cached part)
  OUTPUT       output tokens (reasoning included)
  CACHE READ   input tokens read from the provider's cache
  CACHE WRITE  input tokens written to it
  REASONING    the part of OUTPUT the model spent reasoning
  COST         in dollars, at the host's prices (the shipped table and agent.yaml's
               pricing:); — when a call's model has no price: a cost is never
               made up, so a total with such a call has none either

--from and --to take a date (2026-03-01, a UTC day's start) or an RFC 3339 time;
--from counts from that instant, --to up to it (not included): --from 2026-03-01
--to 2026-04-01 is March. Without them, everything until now. --json prints the
report as the API answers it (GET /v1/usage), costs in micro-dollars and dollars.

Exit status: 0 reported; 2 refused (a bad date, --by or token); 3 the host could
not be reached or failed.`,
		Example: `  agent-sdk usage --url http://127.0.0.1:3000/myagent
  agent-sdk usage --url http://127.0.0.1:3000/myagent --by model --from 2026-03-01 --to 2026-04-01
  agent-sdk usage --url http://127.0.0.1:3000/myagent --by principal --from 2026-03-14T09:00:00Z --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts client.UsageOptions
			var err error
			if opts.From, err = usageTime("--from", from); err != nil {
				return err
			}
			if opts.To, err = usageTime("--to", to); err != nil {
				return err
			}
			opts.By = by
			c, err := f.client()
			if err != nil {
				return err
			}
			rep, err := c.Usage(cmd.Context(), &opts)
			if err != nil {
				return remoteError(err)
			}
			if asJSON {
				return printListing(os.Stdout, rep)
			}
			printUsage(os.Stdout, rep)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&from, "from", "", "count model calls from this date (YYYY-MM-DD, UTC) or RFC 3339 time (default: the beginning)")
	cmd.Flags().StringVar(&to, "to", "", "count them up to this date or time, not included (default: now)")
	cmd.Flags().StringVar(&by, "by", "", "a line per principal, channel, model or session (default: the total only)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON for machines")
	return cmd
}

// usageTime reads --from or --to: a date (its start, UTC) or an RFC 3339
// time; "" is the zero time (no bound).
func usageTime(flag, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, exitWith(command.ExitRefused, "%s %q: want a date (2026-03-01) or an RFC 3339 time (2026-03-01T09:00:00Z)", flag, s)
}

// printUsage writes a usage report as a table: a line per group, the
// total, and the period.
func printUsage(w io.Writer, rep api.UsageReport) {
	first := "" // the total only
	if rep.By != "" {
		first = strings.ToUpper(clean(rep.By))
	}
	rows := [][]string{{first, "CALLS", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "REASONING", "COST"}}
	line := func(key string, u api.Usage) []string {
		return []string{key, count(u.ModelCalls), count(u.InputTokens), count(u.OutputTokens), count(u.CacheReadTokens),
			count(u.CacheWriteTokens), count(u.ReasoningTokens), costText(u.CostMicroUsd)}
	}
	unpriced := rep.Total.CostMicroUsd == nil
	for _, g := range rep.Groups {
		rows = append(rows, line(orDash(fit(clean(g.Key), 60)), g.Usage))
		unpriced = unpriced || g.Usage.CostMicroUsd == nil
	}
	rows = append(rows, line("TOTAL", rep.Total))
	printColumns(w, rows, func(i int) bool { return i > 0 })
	period := "model calls from the beginning"
	if rep.From.After(time.Unix(0, 0)) { // the host's beginning is the epoch's
		period = "model calls from " + rep.From.UTC().Format(time.RFC3339)
	}
	if rep.To != nil {
		period += " to " + rep.To.UTC().Format(time.RFC3339)
	} else {
		period += " until now"
	}
	fmt.Fprintf(w, "\n%s\n", period)
	if unpriced {
		fmt.Fprintln(w, noCost+" no price for a model of these calls: add it under pricing: in agent.yaml")
	}
}

// printColumns writes rows as columns two spaces apart, padded by their
// width; the columns right says are aligned to the right (figures).
func printColumns(w io.Writer, rows [][]string, right func(int) bool) {
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
		var line strings.Builder
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-textWidth(cell))
			if i > 0 {
				line.WriteString("  ")
			}
			if right(i) {
				line.WriteString(pad + cell)
			} else {
				line.WriteString(cell + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	io.WriteString(w, b.String())
}

// costText shows a cost in micro-dollars in dollars ("$0.011475",
// "$5.00"), or noCost when it is null.
func costText(micros *int64) string {
	if micros == nil {
		return noCost
	}
	return model.Micros(*micros).String()
}

// count shows n with its thousands apart: 1,234,567.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if n < 0 {
		sign, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return sign + s
}

// allTokens is every token of u: input, output (with reasoning), and the
// cached input read and written.
func allTokens(u api.Usage) int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// usageText says what model calls consumed, on one line: "2 model calls ·
// tokens 996 in, 15 out (40 reasoning), 3,000 cache read · cost $0.011475".
func usageText(u api.Usage) string {
	if u.ModelCalls == 0 && allTokens(u) == 0 {
		return "no model calls"
	}
	calls := "1 model call"
	if u.ModelCalls != 1 {
		calls = count(u.ModelCalls) + " model calls"
	}
	tokens := "tokens " + count(u.InputTokens) + " in, " + count(u.OutputTokens) + " out"
	if u.ReasoningTokens > 0 {
		tokens += " (" + count(u.ReasoningTokens) + " reasoning)"
	}
	if u.CacheReadTokens > 0 {
		tokens += ", " + count(u.CacheReadTokens) + " cache read"
	}
	if u.CacheWriteTokens > 0 {
		tokens += ", " + count(u.CacheWriteTokens) + " cache write"
	}
	cost := "cost " + costText(u.CostMicroUsd)
	if u.CostMicroUsd == nil {
		cost += " (no price for the model)"
	}
	return calls + " · " + tokens + " · " + cost
}

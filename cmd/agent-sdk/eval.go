package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/client"
	"github.com/agentsdk/agentsdk/internal/command"
)

// exitEvalFailed is eval run's exit status when the batch ran but did not
// pass: its score is below --min-score, or a case could not be run.
const exitEvalFailed = 1

// maxEvalFile bounds an eval file.
const maxEvalFile = 16 << 20

// evalPoll is how often eval run asks how far its batch got.
const evalPoll = 500 * time.Millisecond

// failedColumn is how many columns of a case's failed checks the table
// shows.
const failedColumn = 120

func newEval() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Run an eval file's cases against a running host and score them (eval run FILE), list batches, show one",
		Long: `eval runs evals against the agent a running host serves: each case of an eval file
sends a message (or a conversation) to the agent's model in a session of its own, on
the channel "eval", and checks what happened — the tools called and with which
arguments, the final answer, the steps taken, errors — and optionally asks a scorer
tool of the agent's. A batch runs in the background on the host as durable jobs
(SQLite or PostgreSQL; it survives the host's restart), at most 4 cases at once.

  agent-sdk eval run FILE    run the file's cases, wait, print the table and the score
  agent-sdk eval list        the batches, newest first
  agent-sdk eval show ID     one batch's table`,
		Example: `  agent-sdk eval run evals/weather.yaml --url http://127.0.0.1:3000/myagent --min-score 0.8
  agent-sdk eval list --url http://127.0.0.1:3000/myagent
  agent-sdk eval show eval_abc123 --url http://127.0.0.1:3000/myagent --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newEvalRun(), newEvalList(), newEvalShow())
	return cmd
}

func newEvalRun() *cobra.Command {
	var (
		f           urlFlags
		name        string
		minScore    float64
		concurrency int
		asJSON      bool
	)
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run an eval file's cases as a batch on a running host, wait for it, and print each case's score",
		Long: `eval run reads the eval file FILE (YAML or JSON; - for standard input), runs its cases
as a batch on the host at --url, waits until every case has run, and prints a table:

  CASE      the case's name (default case-<n>)
  STATUS    completed (every check ran, passed or not), or failed (the case could
            not be run to the end: its turn failed, it timed out after 10 minutes,
            or its host died while it ran — it is never run twice)
  SCORE     the share of its checks that passed, 0 to 1 (1 with no checks)
  CHECKS    checks passed / checks
  SESSION   its session (agent-sdk events SESSION shows what happened)
  TOKENS    the tokens its session's model calls consumed (input, output, cached)
  COST      what they cost, in dollars (— when the model has no price: pricing:
            in agent.yaml)
  FAILED    each failed check and why, or why the case failed

then the batch's score, the mean of its cases' scores, and its tokens and cost, the
sum of its cases'. --json prints the batch as the API answers it instead (each
case's usage and the batch's, costs in micro-dollars and dollars).

The file is a list of cases, or a mapping with the batch's name (default: the
file's name), its cases, and optionally its concurrency and stubs:

  name: weather
  cases:
    - name: paris
      message: What is the weather in Paris?
      checks:
        - called: lookup          # the model called the tool…
          args: {city: Paris}     # …with these fields in its input (a subset)
        - notCalled: delete_city
        - contains: sunny         # the final answer contains the text
        - matches: "(?i)paris"    # …or matches the regular expression (RE2)
        - maxSteps: 3             # at most 3 model calls over the case's turns
        - noError: true           # no tool call had an error, no turn failed
    - conversation: [Hi, What about Lima?]   # each sent once the last turn ended
      scorer: judge               # a tool of the agent's: one more check

A check is exactly one of called (with args, and result: the call's result holds
it), notCalled, contains, matches, maxSteps, noError.

stubs: (on the file, for every case, or on a case, replacing the file's of the tools
it names) answer the calls of a tool instead of running it: the first stub whose
match the call's input holds answers with its result, its error, or the next answer
of its sequence (the last repeats). A stubbed tool never runs, a stubbed gated call
is not parked, and a call no stub matches is an error the model reads that fails
the case (check "stub"):

  stubs:
    send_email:
      - match: {to: ana@example.com}
        sequence: [{result: {id: m_1}}, {error: mailbox full}]
      - error: unknown address    # no match: any other call

replay: (on a case; agent-sdk session export writes it) answers the case's model
calls in turn with recorded answers, [{text: …, calls: [{tool: …, input: {…}}]}, …],
instead of the host's model; a model call past the last fails the case. A scorer tool is called with {"case": …, "events": […]} and
answers {"pass": bool, "score": 0..1, "reason": "…"}. An eval has at most 500 cases,
a case at most 20 checks; the host refuses an invalid eval listing every problem.

Exit status: 0 the batch ran and passed: its score is at least --min-score (1:
every check of every case) and every case ran to the end; 1 it ran but did not
pass (the score is below --min-score, or a case failed to run); 2 refused (an
unreadable or invalid eval file, a bad flag or token); 3 the host could not be
reached or failed, its store runs no durable jobs (503 no_jobs), or the wait was
interrupted (the batch goes on: agent-sdk eval show ID).`,
		Example: `  agent-sdk eval run evals/weather.yaml --url http://127.0.0.1:3000/myagent
  agent-sdk eval run evals/weather.yaml --url http://127.0.0.1:3000/myagent --min-score 0.8 --json
  agent-sdk eval run - --url https://agents.example.com/myagent --token "$AGENT_SDK_TOKEN" < evals/smoke.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if minScore < 0 || minScore > 1 {
				return exitWith(command.ExitRefused, "--min-score must be between 0 and 1, not %g", minScore)
			}
			if concurrency < 0 {
				return exitWith(command.ExitRefused, "--concurrency must not be negative, not %d", concurrency)
			}
			req, err := readEvalFile(args[0], os.Stdin)
			if err != nil {
				return exitWith(command.ExitRefused, "%v", err)
			}
			if name != "" {
				req.Name = name
			}
			if cmd.Flags().Changed("concurrency") {
				req.Concurrency = concurrency
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			started, err := c.RunEval(cmd.Context(), req)
			if err != nil {
				return remoteError(err)
			}
			fmt.Fprintf(os.Stderr, "running eval batch %s (%s, %d cases); agent-sdk eval show %s --url %s shows it\n",
				started.ID, clean(started.Name), started.Total, started.ID, f.url)
			b, err := waitEval(cmd.Context(), c, started)
			if err != nil {
				return err
			}
			if asJSON {
				if err := printListing(os.Stdout, b); err != nil {
					return err
				}
			} else {
				printEvalBatch(os.Stdout, b)
			}
			return evalVerdict(b, minScore)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&name, "name", "", "the batch's name (default: the file's name:, else its base name)")
	cmd.Flags().Float64Var(&minScore, "min-score", 1, "the least batch score (0 to 1) that passes")
	cmd.Flags().IntVar(&concurrency, "concurrency", 0, "cases run at once (default: the file's concurrency:, else the host's default, 4)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the batch as JSON for machines")
	return cmd
}

// waitEval polls a batch until it is completed, showing on a terminal how
// many cases are done.
func waitEval(ctx context.Context, c *client.Client, started api.EvalBatch) (api.EvalBatch, error) {
	tty := isTerminal(os.Stderr)
	shown := -1
	b, err := c.WaitEval(ctx, started.ID, evalPoll, func(b api.EvalBatch) {
		if !tty {
			return
		}
		done := 0
		for _, cr := range b.Cases {
			if cr.Status == api.EvalCompleted || cr.Status == api.EvalFailed {
				done++
			}
		}
		if done != shown {
			fmt.Fprintf(os.Stderr, "\r%d/%d cases done", done, b.Total)
			shown = done
		}
	})
	if tty && shown >= 0 {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	if err != nil && ctx.Err() != nil {
		return api.EvalBatch{}, exitWith(command.ExitFailure, "stopped waiting for eval batch %s; it goes on: agent-sdk eval show %s", started.ID, started.ID)
	}
	if err != nil {
		return api.EvalBatch{}, remoteError(err)
	}
	return b, nil
}

// evalVerdict is eval run's exit: nil if the batch passed.
func evalVerdict(b api.EvalBatch, minScore float64) error {
	failed := 0
	for _, c := range b.Cases {
		if c.Status == api.EvalFailed {
			failed++
		}
	}
	var why []string
	if b.Score+1e-9 < minScore {
		why = append(why, fmt.Sprintf("the score %.2f is below --min-score %g", b.Score, minScore))
	}
	if failed > 0 {
		why = append(why, fmt.Sprintf("%d of %d cases failed to run", failed, b.Total))
	}
	if len(why) == 0 {
		return nil
	}
	return exitWith(exitEvalFailed, "eval batch %s did not pass: %s", b.ID, strings.Join(why, "; "))
}

// evalFile is an eval file that is a mapping.
type evalFile struct {
	Name        string                    `yaml:"name"`
	Cases       []api.EvalCase            `yaml:"cases"`
	Concurrency int                       `yaml:"concurrency"`
	Stubs       map[string][]api.EvalStub `yaml:"stubs"` // every case's
}

// readEvalFile reads an eval file (- for stdin): a list of cases, or a
// mapping with name, cases, concurrency and stubs. Unknown fields are refused
// (a misspelt check would otherwise check nothing).
func readEvalFile(path string, stdin io.Reader) (api.EvalRunRequest, error) {
	var (
		data []byte
		err  error
	)
	if path == "-" {
		data, err = io.ReadAll(io.LimitReader(stdin, maxEvalFile+1))
	} else {
		var f *os.File
		if f, err = os.Open(path); err == nil {
			data, err = io.ReadAll(io.LimitReader(f, maxEvalFile+1))
			f.Close()
		}
	}
	if err != nil {
		return api.EvalRunRequest{}, fmt.Errorf("reading the eval file: %w", err)
	}
	where := path
	if path == "-" {
		where = "standard input"
	}
	if len(data) > maxEvalFile {
		return api.EvalRunRequest{}, fmt.Errorf("the eval file %s is larger than %d bytes", where, maxEvalFile)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return api.EvalRunRequest{}, fmt.Errorf("the eval file %s: %v", where, err)
	}
	if len(doc.Content) == 0 {
		return api.EvalRunRequest{}, fmt.Errorf("the eval file %s is empty", where)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var req api.EvalRunRequest
	switch doc.Content[0].Kind {
	case yaml.SequenceNode:
		err = dec.Decode(&req.Cases)
	case yaml.MappingNode:
		var f evalFile
		err = dec.Decode(&f)
		req = api.EvalRunRequest{Name: f.Name, Cases: f.Cases, Concurrency: f.Concurrency, Stubs: f.Stubs}
	default:
		return api.EvalRunRequest{}, fmt.Errorf("the eval file %s is neither a list of cases nor a mapping of name and cases", where)
	}
	if err != nil {
		return api.EvalRunRequest{}, fmt.Errorf("the eval file %s: %v", where, err)
	}
	if req.Name == "" && path != "-" {
		req.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return req, nil
}

func newEvalList() *cobra.Command {
	var (
		f      urlFlags
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List a running host's eval batches, newest first",
		Long: `eval list lists the eval batches of the host at --url, newest first, one a line:
ID, NAME, STATUS (queued, running, completed), SCORE (the mean of its cases' scores,
once completed), PASSED (cases whose every check passed / cases), CREATED and COST
(what its cases' model calls cost; — when the model has no price).
--json prints {"batches": […]} as the API answers it (without the cases).

Exit status: 0 listed; 2 refused (a bad flag or token); 3 the host could not be
reached or failed, or its store runs no durable jobs (503 no_jobs).`,
		Example: `  agent-sdk eval list --url http://127.0.0.1:3000/myagent
  agent-sdk eval list --url http://127.0.0.1:3000/myagent --limit 5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return exitWith(command.ExitRefused, "--limit must be at least 1, not %d", limit)
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			all := []api.EvalBatch{}
			for cursor := ""; len(all) < limit; {
				page, next, err := c.Evals(cmd.Context(), &client.EvalsOptions{Limit: min(limit-len(all), 1000), Cursor: cursor})
				if err != nil {
					return remoteError(err)
				}
				all = append(all, page...)
				if cursor = next; next == "" {
					break
				}
			}
			if asJSON {
				return printListing(os.Stdout, map[string][]api.EvalBatch{"batches": all})
			}
			if len(all) == 0 {
				fmt.Println("no eval batches (run one with agent-sdk eval run FILE)")
				return nil
			}
			rows := [][]string{{"ID", "NAME", "STATUS", "SCORE", "PASSED", "CREATED", "COST"}}
			for _, b := range all {
				score := "-"
				if b.Status == api.EvalCompleted {
					score = strconv.FormatFloat(b.Score, 'f', 2, 64)
				}
				cost := "-"
				if b.Usage != nil {
					cost = costText(b.Usage.CostMicroUsd)
				}
				rows = append(rows, []string{clean(b.ID), orDash(fit(clean(b.Name), 40)), string(b.Status), score,
					fmt.Sprintf("%d/%d", b.Passed, b.Total), b.Created.UTC().Format(time.RFC3339), cost})
			}
			printTable(os.Stdout, rows)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().IntVar(&limit, "limit", 20, "how many batches at most")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for machines")
	return cmd
}

func newEvalShow() *cobra.Command {
	var (
		f      urlFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show an eval batch: each case's status, score and failed checks",
		Long: `eval show prints the eval batch ID of the host at --url as eval run does: a line per
case (CASE, STATUS, SCORE, CHECKS, SESSION, TOKENS, COST, FAILED; see agent-sdk eval
run --help) and the batch's score and cost, or, while it runs, how many cases are
done. --json prints the batch as the API answers it, with every check's result.

Exit status: 0 shown; 2 refused (no batch has that id: 404 eval_not_found; a bad
flag or token); 3 the host could not be reached or failed, or its store runs no
durable jobs (503 no_jobs).`,
		Example: `  agent-sdk eval show eval_abc123 --url http://127.0.0.1:3000/myagent
  agent-sdk eval show eval_abc123 --url http://127.0.0.1:3000/myagent --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			b, err := c.Eval(cmd.Context(), args[0])
			if err != nil {
				return remoteError(err)
			}
			if asJSON {
				return printListing(os.Stdout, b)
			}
			printEvalBatch(os.Stdout, b)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for machines")
	return cmd
}

// printEvalBatch writes a batch's cases as a table, and its score.
func printEvalBatch(w io.Writer, b api.EvalBatch) {
	rows := [][]string{{"CASE", "STATUS", "SCORE", "CHECKS", "SESSION", "TOKENS", "COST", "FAILED"}}
	done, failed := 0, 0
	for _, c := range b.Cases {
		score, checks, why := "-", "-", "-"
		switch c.Status {
		case api.EvalCompleted:
			done++
			passed := 0
			var fails []string
			for _, r := range c.Checks {
				if r.Pass {
					passed++
				} else {
					fails = append(fails, describeFailure(r))
				}
			}
			score, checks = strconv.FormatFloat(c.Score, 'f', 2, 64), fmt.Sprintf("%d/%d", passed, len(c.Checks))
			if len(fails) > 0 {
				why = strings.Join(fails, "; ")
			}
		case api.EvalFailed:
			done++
			failed++
			score, why = strconv.FormatFloat(c.Score, 'f', 2, 64), "error: "+c.Error
		}
		tokens, cost := "-", "-"
		if u := c.Usage; u != nil {
			tokens, cost = count(allTokens(*u)), costText(u.CostMicroUsd)
		}
		rows = append(rows, []string{orDash(fit(clean(c.Case.Name), 40)), string(c.Status), score, checks, orDash(clean(c.SessionID)),
			tokens, cost, fit(strings.Join(strings.Fields(clean(why)), " "), failedColumn)})
	}
	printTable(w, rows)
	spent := ""
	if u := b.Usage; u != nil {
		spent = "; " + count(allTokens(*u)) + " tokens, cost " + costText(u.CostMicroUsd)
	}
	if b.Status != api.EvalCompleted {
		fmt.Fprintf(w, "\nbatch %s (%s): %s, %d of %d cases done%s\n", b.ID, clean(b.Name), b.Status, done, b.Total, spent)
		return
	}
	fmt.Fprintf(w, "\nbatch %s (%s): score %.2f, %d of %d cases passed", b.ID, clean(b.Name), b.Score, b.Passed, b.Total)
	if failed > 0 {
		fmt.Fprintf(w, ", %d failed to run", failed)
	}
	fmt.Fprintln(w, spent)
}

// describeFailure says which check failed and why.
func describeFailure(r api.EvalCheckResult) string {
	c := r.Check
	var what string
	switch {
	case c.Called != "":
		what = "called " + c.Called
		if len(c.Args) > 0 {
			args, _ := json.Marshal(c.Args)
			what += " " + string(args)
		}
	case c.NotCalled != "":
		what = "notCalled " + c.NotCalled
	case c.Contains != "":
		what = "contains " + strconv.Quote(c.Contains)
	case c.Matches != "":
		what = "matches " + strconv.Quote(c.Matches)
	case c.MaxSteps > 0:
		what = "maxSteps " + strconv.Itoa(c.MaxSteps)
	case c.NoError:
		what = "noError"
	case c.Stub != "":
		what = "stub " + c.Stub // a call of a stubbed tool no stub matched
	default:
		return orDash(r.Detail) // a scorer's verdict says whose it is
	}
	if r.Detail == "" {
		return what
	}
	return what + ": " + r.Detail
}

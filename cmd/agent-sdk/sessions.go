package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/client"
	"github.com/agentsdk/agentsdk/internal/command"
)

// urlFlags are the flags of the commands that talk to a running host.
type urlFlags struct {
	agentFlags
	url   string
	token string
}

func (f *urlFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.url, "url", "", "the running host: http://127.0.0.1:3000/<slug> (required)")
	cmd.Flags().StringVar(&f.token, "token", "", "bearer token (default $AGENT_SDK_TOKEN, else <state>/token)")
	cmd.Flags().StringVar(&f.dir, "dir", ".", "the agent directory, whose state holds the token")
	cmd.Flags().StringVar(&f.state, "state", "", "state directory (default DIR/.agent-sdk)")
	cmd.MarkFlagRequired("url")
}

func (f *urlFlags) client() (*client.Client, error) { return f.remote(f.url, f.token) }

func newSessions() *cobra.Command {
	var (
		f      urlFlags
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:     "sessions",
		Aliases: []string{"session"},
		Short:   "List a running host's sessions, newest first (session export SESSION: a session as an eval case)",
		Long: `sessions lists the sessions of the host at --url, newest first, one a line: its id,
channel, events, when it was created, the tokens its model calls consumed (input,
output, and cache reads and writes) and their cost (— when the model has no
price), and the turn it is running, if any. --json prints {"sessions": […]} as the API
answers it, each with its usage.

  agent-sdk session export SESSION   writes an eval case that replays SESSION's model
                                     answers and checks its tool calls (see --help)`,
		Example: "  agent-sdk sessions --url http://127.0.0.1:3000/quickstart",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			if limit < 1 {
				return exitWith(command.ExitRefused, "--limit must be at least 1, not %d", limit)
			}
			var all []api.Session
			for s, err := range c.AllSessions(cmd.Context(), min(limit, 1000)) {
				if err != nil {
					return remoteError(err)
				}
				if all = append(all, s); len(all) == limit {
					break
				}
			}
			if asJSON {
				return printListing(os.Stdout, map[string][]api.Session{"sessions": all})
			}
			if len(all) == 0 {
				fmt.Println("no sessions")
			}
			for _, s := range all {
				running := ""
				if s.RunningTurn != "" {
					running = "  running " + s.RunningTurn
				}
				usage := ""
				if u := s.Usage; u != nil {
					usage = "  " + count(allTokens(*u)) + " tokens  cost " + costText(u.CostMicroUsd)
				}
				fmt.Printf("%s  %s  %d events  created %s%s%s\n", s.ID, s.Channel, s.LastSeq, s.CreatedAt.Format(time.RFC3339Nano), usage, running)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().IntVar(&limit, "limit", 50, "how many sessions at most")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for machines")
	cmd.AddCommand(newSessionExport())
	return cmd
}

func newSend() *cobra.Command {
	var (
		f       urlFlags
		channel string
		follow  bool
		asJSON  bool
		cloud   bool
		runtime string
	)
	cmd := &cobra.Command{
		Use:   "send SESSION MESSAGE",
		Short: "Send a message to a session (or \"new\" to open one); the model turn starts",
		Long: `send starts a model turn with MESSAGE in SESSION, or in a new session when SESSION
is "new", and prints the session and turn ids. With --follow it then shows the
turn as it runs (as events does) until it ends, exiting 1 if it failed. A session whose turn is
still running answers 409 session_busy (exit 2). A new session with --cloud runs
its turns on a runner (agent-sdk runner) instead of in the host. A new session with
--runtime has its turns run by a coding-agent harness the agent configures
(claude-code, codex, gemini, an ACP agent under harnesses: in agent.yaml) instead of
the host's model loop; "native" is the host's loop.`,
		Example: `  agent-sdk send new "Inspect https://github.com/acme/checkout/pull/42" --url http://127.0.0.1:3000/quickstart --follow
  agent-sdk send new "Fix the failing test" --runtime claude-code --url http://127.0.0.1:3000/quickstart --follow
  agent-sdk send sess_abc "And the tests?" --url http://127.0.0.1:3000/quickstart`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			var ans api.TurnStartedResponse
			if args[0] == "new" {
				req := api.CreateSessionRequest{Channel: channel, Message: args[1]}
				if cloud {
					req.Mode = api.ModeCloud
				}
				req.Runtime = runtime
				ans, err = c.CreateSession(cmd.Context(), req)
			} else {
				ans, err = c.Send(cmd.Context(), args[0], args[1])
			}
			if err != nil {
				return remoteError(err)
			}
			fmt.Fprintf(os.Stderr, "session %s, turn %s\n", ans.SessionID, ans.TurnID)
			if !follow {
				fmt.Println(ans.SessionID)
				return nil
			}
			return tail(cmd.Context(), c, ans.SessionID, 0, ans.TurnID, newEventPrinter(asJSON, f.url))
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&channel, "channel", "http", "the channel of a new session")
	cmd.Flags().BoolVar(&follow, "follow", false, "print the turn's events until it ends")
	cmd.Flags().BoolVar(&asJSON, "json", false, "with --follow, print events as JSON lines")
	cmd.Flags().BoolVar(&cloud, "cloud", false, "a new session whose turns run on a runner (agent-sdk runner), not in the host")
	cmd.Flags().StringVar(&runtime, "runtime", "", "a new session's runtime: native, or a harness (claude-code, codex, gemini, one under harnesses: in agent.yaml); default: the agent's runtime:")
	return cmd
}

func newEvents() *cobra.Command {
	var (
		f        urlFlags
		after    int64
		noFollow bool
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "events SESSION",
		Short: "Print a session's event stream, following it as it grows",
		Long: `events prints SESSION's events from the start (or after --after N) and keeps
following the live stream until interrupted; --no-follow stops at the last
stored event. By default it shows the conversation for people: first what the
session's model calls have consumed so far (Σ: calls, tokens, cost), then the
assistant's text as it streams, each tool call on a line that fills in with its
progress and outcome (rewritten in place on a terminal, in colour unless NO_COLOR
is set), a parked call with the commands that decide it, the model's reasoning
folded to one line (∴ thinking… (N chars)), a model call tried again (↻), and
under each turn's end its tokens and cost (— when the model has no price) and,
for a failed turn, its failure code. --json prints the events as they come, one
JSON object a line.`,
		Example: `  agent-sdk events sess_abc --url http://127.0.0.1:3000/quickstart
  agent-sdk events sess_abc --url http://127.0.0.1:3000/quickstart --json --after 10 --no-follow`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			out := newEventPrinter(asJSON, f.url)
			if !asJSON {
				// The header is an addition: a session the host does not
				// answer for is the stream's error to report, as it was.
				if s, err := c.Session(cmd.Context(), args[0]); err == nil {
					sessionHeader(out, s)
				}
			}
			if !noFollow {
				return tail(cmd.Context(), c, args[0], after, "", out)
			}
			defer out.end()
			for {
				evs, err := c.StoredEvents(cmd.Context(), args[0], after, 10000)
				if err != nil {
					return remoteError(err)
				}
				for _, e := range evs {
					out.event(e)
					after = e.Seq
				}
				if len(evs) < 10000 {
					return nil
				}
			}
		},
	}
	f.register(cmd)
	cmd.Flags().Int64Var(&after, "after", 0, "start after this event's seq")
	cmd.Flags().BoolVar(&noFollow, "no-follow", false, "print the stored events and stop")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object a line")
	return cmd
}

func newCompact() *cobra.Command {
	var (
		f      urlFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "compact SESSION",
		Short: "Summarise a session's older turns now, so that its next turns send less",
		Long: `compact asks the host at --url to compact SESSION now, as it does by itself when a
model call nears the model's context window: the conversation before its last
turns (agent.yaml's compaction.keepTurns, 2) is summarised by a model call, and
from then on the model sees the summary in their place; the stream keeps every
event, and records the summary as context.compacted. It runs as a turn of its
own (kind compact), and prints the tokens of the next request before and after
and the last event summarised; a session with nothing to summarise (its last
turns only) is left as it is, saying why. A session whose turn is running
answers 409 session_busy (exit 2). --json prints the API's answer.`,
		Example: `  agent-sdk compact sess_abc --url http://127.0.0.1:3000/quickstart`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			ans, err := c.Compact(cmd.Context(), args[0])
			if err != nil {
				return remoteError(err)
			}
			if asJSON {
				return printAnswer(os.Stdout, ans)
			}
			if ans.Code != "" {
				return fmt.Errorf("compacting session %s failed (%s): %s", args[0], ans.Code, ans.Reason)
			}
			if !ans.Compacted || ans.Context == nil {
				fmt.Printf("nothing compacted in session %s: %s\n", args[0], ans.Reason)
				return nil
			}
			r := ans.Context
			fmt.Printf("compacted session %s: %s → %s tokens (through event %d)\n", args[0], count(r.TokensBefore), count(r.TokensAfter), r.ThroughSeq)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's answer as JSON")
	return cmd
}

// eventPrinter prints a session's events as they come: the human view
// (*view) or, for machines, JSON lines (jsonEvents). end finishes the
// output once the last event is printed.
type eventPrinter interface {
	event(api.Event)
	end()
}

// newEventPrinter returns the printer of the events commands on standard
// output: JSON lines with --json, else the view (url is the host's --url,
// for the commands it shows).
func newEventPrinter(asJSON bool, url string) eventPrinter {
	if asJSON {
		return jsonEvents{os.Stdout}
	}
	return newView(os.Stdout, url)
}

// jsonEvents prints each event as it came, one JSON object a line, with
// <, > and & as they are.
type jsonEvents struct{ w io.Writer }

func (j jsonEvents) event(e api.Event) {
	enc := json.NewEncoder(j.w)
	enc.SetEscapeHTML(false)
	enc.Encode(e)
}

func (jsonEvents) end() {}

// tail follows a session's event stream, printing events. With untilTurn
// set it returns when that turn ends (exit 1 if it failed).
func tail(ctx context.Context, c *client.Client, sessionID string, after int64, untilTurn string, out eventPrinter) error {
	defer out.end()
	for e, err := range c.Events(ctx, sessionID, after) {
		if errors.Is(err, client.ErrStreamEnded) {
			return nil // the host shut down
		}
		if err != nil {
			var status *client.StatusError
			var reach *url.Error
			if errors.As(err, &reach) || errors.As(err, &status) {
				return remoteError(err)
			}
			return exitWith(command.ExitFailure, "reading the event stream: %v", err)
		}
		out.event(e)
		if untilTurn != "" && e.TurnID == untilTurn {
			switch e.Kind {
			case api.KindTurnCompleted:
				return nil
			case api.KindTurnFailed:
				return &exitError{code: command.ExitToolError}
			}
		}
	}
	return nil
}

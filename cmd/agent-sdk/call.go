package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/client"
	"github.com/agentsdk/agentsdk/internal/command"
	"github.com/agentsdk/agentsdk/internal/serveflags"
	"github.com/agentsdk/agentsdk/tool"
)

func newCall() *cobra.Command {
	var (
		f       agentFlags
		input   string
		rawURL  string
		session string
		tok     string
		noWait  bool
	)
	cmd := &cobra.Command{
		Use:   "call NAME",
		Short: "Call a tool directly, with no model turn",
		Long: `call runs one server tool with the given input and prints the outcome:

  {"ok":true,"toolName":…,"callId":…,"isError":…,"result":…,"durationMs":…}

Without --url it builds the agent in --dir and runs the call on an ephemeral
host (in a scratch workspace under <state>/tool-calls) sharing the store of
serve's: the model of agent/agent.yaml runs the turns the tool starts
(call.Send), and call waits for them to end, saying so. With --url it calls a
running host; the token is --token, $AGENT_SDK_TOKEN, or <state>/token.

Input is JSON text, @FILE for a file's content, or - for standard input.

A tool that needs approval for this input parks the call: call prints at once
how to approve or deny it,

  call tool_promote_build_… is waiting for approval:
    agent-sdk approve tool_promote_build_… --url http://127.0.0.1:3000/quickstart
    agent-sdk deny tool_promote_build_… --reason "…" --url http://127.0.0.1:3000/quickstart

and waits for the decision (--no-wait returns at once, exit 0, with
{"status":"approval_pending","callId":…}). Without --url the lines name the
serve host of the agent at its default address, which shares the call's
store and decides it.

Exit status: 0 the call succeeded; 1 its result is an error (isError); 2 usage
error, unknown tool, invalid input or a refused call; 3 the call could not be
made (build failed, host unreachable).`,
		Example: `  agent-sdk call inspect_pr --dir examples/quickstart \
    --input '{"prUrl":"https://github.com/acme/checkout/pull/42"}'
  agent-sdk call inspect_pr --url http://127.0.0.1:3000/quickstart --input @input.json
  echo '{"prUrl":"https://github.com/acme/checkout/pull/42"}' | agent-sdk call inspect_pr --input -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := command.ReadInput(input, os.Stdin)
			if err != nil {
				return exitWith(command.ExitRefused, "%v", err)
			}
			if rawURL == "" {
				agent, res, state, err := f.buildAgent(cmd)
				if err != nil {
					return err
				}
				argv := []string{"call", args[0], "--input", "-", "--state", state}
				if f.store != "" {
					argv = append(argv, "--store", f.store)
				}
				if session != "" {
					argv = append(argv, "--session", session)
				}
				if noWait {
					argv = append(argv, "--no-wait")
				}
				return runAgent(agent, res.Binary, bytes.NewReader(raw), argv...)
			}
			c, err := f.remote(rawURL, tok)
			if err != nil {
				return err
			}
			return remoteCall{url: rawURL, tool: args[0], input: raw, session: session, noWait: noWait}.run(cmd.Context(), c)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&input, "input", "", "input: JSON, @FILE, or - for stdin (default {})")
	cmd.Flags().StringVar(&rawURL, "url", "", "call a running host: http://127.0.0.1:3000/<slug>")
	cmd.Flags().StringVar(&session, "session", "", "run the call in this session")
	serveflags.RegisterStore(cmd.Flags(), &f.store)
	cmd.Flags().StringVar(&tok, "token", "", "bearer token for --url")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "for a tool that needs approval, return as soon as the call is parked")
	return cmd
}

func newTools() *cobra.Command {
	var (
		f      agentFlags
		rawURL string
		tok    string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List an agent's tools",
		Long: `tools lists the tools of the agent in --dir (built as for serve), or of a running
host with --url: name, description, execution flavour (server or agent),
whether approval can be needed, and the input schema.`,
		Example: `  agent-sdk tools --dir examples/quickstart
  agent-sdk tools --url http://127.0.0.1:3000/quickstart --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if rawURL == "" {
				agent, res, _, err := f.buildAgent(cmd)
				if err != nil {
					return err
				}
				argv := []string{"tools"}
				if asJSON {
					argv = append(argv, "--json")
				}
				return execAgent(agent, res.Binary, argv...)
			}
			c, err := f.remote(rawURL, tok)
			if err != nil {
				return err
			}
			tools, err := c.Tools(cmd.Context())
			if err != nil {
				return remoteError(err)
			}
			if asJSON {
				return command.PrintJSON(os.Stdout, map[string][]tool.Info{"tools": tools})
			}
			command.PrintTools(os.Stdout, tools)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&rawURL, "url", "", "list the tools of a running host: http://127.0.0.1:3000/<slug>")
	cmd.Flags().StringVar(&tok, "token", "", "bearer token for --url")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for machines")
	return cmd
}

// remoteCall is a call of a running host's tool: call --url.
type remoteCall struct {
	url     string // --url, as given
	tool    string
	input   json.RawMessage
	session string
	noWait  bool
}

// run makes the call, prints the outcome and exits as call does: for a
// call parked for approval, it says how to decide it and waits for the
// outcome, unless noWait.
//
// On a terminal, standard error shows the call's progress and live output
// on a line rewritten in place while it runs (the host streams them), and
// cleared before the outcome is printed; elsewhere the call is made as it
// always was, with nothing extra.
func (r remoteCall) run(ctx context.Context, c *client.Client) error {
	// NoWait: the host answers a parked call at once, so that the approve
	// and deny commands are printed at once; then the CLI waits.
	opts := &client.CallOptions{SessionID: r.session, NoWait: true}
	line := r.progressLine(os.Stderr)
	if line != nil {
		opts.Progress = line.update
	}
	out, err := c.CallTool(ctx, r.tool, r.input, opts)
	line.clear()
	var pending *client.PendingError
	if !errors.As(err, &pending) {
		if err != nil {
			return callFailure(err)
		}
		printAnswer(os.Stdout, api.CallResponse{OK: true, Outcome: *out})
		return toolError(out.IsError)
	}
	id := pending.CallID
	command.PrintParked(os.Stderr, id, r.url)
	if r.noWait {
		enc := json.NewEncoder(os.Stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(pending.CallPending)
	}
	done, err := c.WaitCall(ctx, id, client.PollDefault)
	if ctx.Err() != nil {
		return exitWith(command.ExitFailure, "stopped waiting for call %s", id)
	}
	if err != nil {
		return callFailure(err)
	}
	if done.Status == api.CallState(api.ApprovalApproved) {
		// It ran: the outcome in the shape a call that ran prints, as it
		// was when the host held the request until the decision.
		printAnswer(os.Stdout, api.CallResponse{OK: true, Outcome: api.Outcome{
			ToolName: done.ToolName, CallID: done.CallID, IsError: done.IsError,
			Result: done.Result, DurationMs: done.DurationMs,
		}})
		return toolError(done.IsError)
	}
	printAnswer(os.Stdout, done)
	return toolError(done.IsError)
}

// progressLine returns the line that shows the call's progress on f, or
// nil when f is not a terminal (or a dumb one).
func (r remoteCall) progressLine(f *os.File) *callProgress {
	if _, ok := terminalWidth(f); !ok || os.Getenv("TERM") == "dumb" {
		return nil
	}
	return &callProgress{w: f, color: colorWanted(true), tool: r.tool, width: func() int {
		n, _ := terminalWidth(f)
		return n
	}}
}

// callFailure turns a refused call into an exit, printing the host's
// answer first as the outcome would have been.
func callFailure(err error) error {
	var status *client.StatusError
	if errors.As(err, &status) {
		printBody(os.Stdout, status.Body)
	}
	return remoteError(err)
}

// toolError is the exit of a call whose result is an error, or nil.
func toolError(isError bool) error {
	if isError {
		return &exitError{code: command.ExitToolError}
	}
	return nil
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentsdk/agentsdk/internal/command"
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
host (in a scratch workspace under <state>/tool-calls). With --url it calls a
running host; the token is --token, $AGENT_SDK_TOKEN, or <state>/token.

Input is JSON text, @FILE for a file's content, or - for standard input.

A tool that needs approval for this input parks the call: call prints how to
approve or deny it and waits for the decision (--no-wait returns at once, exit 0,
with {"status":"approval_pending","callId":…}).

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
				if session != "" {
					argv = append(argv, "--session", session)
				}
				if noWait {
					argv = append(argv, "--no-wait")
				}
				return runAgent(agent, res.Binary, bytes.NewReader(raw), argv...)
			}
			r, err := f.remote(rawURL, tok)
			if err != nil {
				return err
			}
			status, body, err := r.do(cmd.Context(), http.MethodPost, "/tools/"+args[0], map[string]any{
				"input": json.RawMessage(raw), "sessionId": session,
			})
			if err != nil {
				return err
			}
			if status == http.StatusAccepted {
				var p struct {
					CallID string `json:"callId"`
				}
				json.Unmarshal(body, &p)
				fmt.Fprintf(os.Stderr, "call %s is waiting for approval:\n  agent-sdk approve %s --url %s\n  agent-sdk deny %s --reason \"…\" --url %s\n", p.CallID, p.CallID, rawURL, p.CallID, rawURL)
				if noWait {
					os.Stdout.Write(append(bytes.TrimSpace(body), '\n'))
					return nil
				}
				if status, body, err = waitCall(cmd.Context(), r, p.CallID); err != nil {
					return err
				}
			}
			var pretty bytes.Buffer
			if json.Indent(&pretty, body, "", "  ") != nil {
				pretty.Reset()
				pretty.Write(body)
			}
			if status != http.StatusOK {
				os.Stdout.Write(append(bytes.TrimSpace(pretty.Bytes()), '\n'))
				return apiFailure(status, body)
			}
			os.Stdout.Write(append(bytes.TrimSpace(pretty.Bytes()), '\n'))
			var out struct {
				IsError bool `json:"isError"`
			}
			if err := json.Unmarshal(body, &out); err != nil {
				return exitWith(command.ExitFailure, "the host's answer is not JSON: %v", err)
			}
			if out.IsError {
				return &exitError{code: command.ExitToolError}
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&input, "input", "", "input: JSON, @FILE, or - for stdin (default {})")
	cmd.Flags().StringVar(&rawURL, "url", "", "call a running host: http://127.0.0.1:3000/<slug>")
	cmd.Flags().StringVar(&session, "session", "", "run the call in this session")
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
			r, err := f.remote(rawURL, tok)
			if err != nil {
				return err
			}
			status, body, err := r.do(cmd.Context(), http.MethodGet, "/tools", nil)
			if err != nil {
				return err
			}
			if status != http.StatusOK {
				return apiFailure(status, body)
			}
			var list struct {
				Tools []tool.Info `json:"tools"`
			}
			if err := json.Unmarshal(body, &list); err != nil {
				return exitWith(command.ExitFailure, "the host's answer is not a tool list: %v", err)
			}
			if asJSON {
				return command.PrintJSON(os.Stdout, list)
			}
			command.PrintTools(os.Stdout, list.Tools)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&rawURL, "url", "", "list the tools of a running host: http://127.0.0.1:3000/<slug>")
	cmd.Flags().StringVar(&tok, "token", "", "bearer token for --url")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for machines")
	return cmd
}

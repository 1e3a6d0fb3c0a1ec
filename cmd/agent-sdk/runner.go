package main

import (
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentsdk/agentsdk/internal/command"
	"github.com/agentsdk/agentsdk/internal/runner"
	"github.com/agentsdk/agentsdk/internal/token"

	// The model providers a runner can open, with its own credentials.
	// Not model/gemini: google.golang.org/genai would more than double
	// this binary (its text from 37 to 82 MB) and link gorilla/websocket,
	// which the CLI must not (serve/deps_test.go). A Gemini agent's cloud
	// turns fail on this runner, saying the provider is not built in.
	_ "github.com/agentsdk/agentsdk/model/anthropic"
	_ "github.com/agentsdk/agentsdk/model/openai"
)

func newRunner() *cobra.Command {
	var (
		f    urlFlags
		name string
		work string
		wait time.Duration
	)
	cmd := &cobra.Command{
		Use:   "runner",
		Short: "Run a host's cloud turns here: claim them, run the model loop (or the session's harness) and the agent tools, report back",
		Long: `runner runs the model turns of a host's cloud sessions (sessions created with
"mode": "cloud", agent-sdk send new --cloud, or mode: cloud in agent.yaml). It
claims a turn from the host, materialises the agent tools the claim carries in a
workspace of its own (<work>/sessions/<id>/workspace: .agent-serve/tools/, AGENTS.md),
runs the model with its own credentials (ANTHROPIC_API_KEY, OPENAI_API_KEY and
their _BASE_URL variables, as serve does), runs the agent tools there, calls the
server tools over the host's MCP endpoint (which the host advertises with serve
--public-url or --cloud-tools-url) with a token scoped to the session, and streams
every event back to the host. A session whose runtime is a coding-agent harness
(claude-code, codex, gemini, or agent.yaml's own) runs on this machine's
installation of that harness instead of the model loop: its permission requests
are parked on the host for a person to decide, the runner's harness waiting, and
it reaches the server tools over the same MCP endpoint. It runs one turn at a
time until interrupted; run several for more. A runner that dies mid-turn loses it: the host closes the turn
as interrupted once its lease runs out.`,
		Example: `  agent-sdk runner --url http://127.0.0.1:3000/quickstart --token "$AGENT_SDK_TOKEN"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			state, err := f.stateDir()
			if err != nil {
				return err
			}
			tok, _, err := token.Find(f.token, state)
			if err != nil {
				return exitWith(command.ExitRefused, "%v", err)
			}
			logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
			r, err := runner.New(&runner.Options{URL: f.url, Token: tok, Name: name, Dir: work, Wait: wait, Logger: logger})
			if err != nil {
				return exitWith(command.ExitRefused, "%v", err)
			}
			logger.Info("runner started", "url", f.url)
			return r.Run(cmd.Context())
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&name, "name", "", "the runner's name in leases and logs (default runner-<pid>)")
	cmd.Flags().StringVar(&work, "work", "", "where the turns' workspaces go (default <temp>/agent-sdk-runner)")
	cmd.Flags().DurationVar(&wait, "wait", 20*time.Second, "how long one claim waits for a turn")
	return cmd
}

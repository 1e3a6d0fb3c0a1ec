package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
)

func newServe() *cobra.Command {
	var (
		f               agentFlags
		addr            string
		slug            string
		tok             string
		maxBody         int64
		logFmt          string
		leaseTTL        string
		approvalWait    string
		approvalTimeout string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve an agent's HTTP API",
		Long: `serve builds the agent in --dir (or reuses the cached binary) and serves its API:

  GET  /healthz                              liveness, no token needed
  GET  /<slug>/v1/tools                      the tools
  POST /<slug>/v1/tools/<name>               call a tool: {"input": {…}, "sessionId": "…"}
  POST /<slug>/v1/session                    open a session: {"channel": "http", "message": "…"}
  POST /<slug>/v1/session/<id>/messages      continue it: {"message": "…"}
  GET  /<slug>/v1/session/<id>               a session
  GET  /<slug>/v1/sessions                   sessions, newest first (?limit=&cursor=)
  POST /<slug>/v1/session/<id>/cancel        cancel the running turn
  GET  /<slug>/v1/session/<id>/events        its event stream (SSE; Last-Event-ID or ?after=N;
                                             ?follow=false for stored events as JSON)
  GET  /<slug>/v1/approvals?status=pending   calls waiting for a person
  POST /<slug>/v1/approvals/<callId>         decide: {"approved": true|false, "reason": "…"}
  POST /<slug>/v1/session/<id>/approvals/<callId>   the same, for a call in that session
  GET  /<slug>/v1/calls/<callId>             a gated direct call's outcome (after a 202)

The model comes from agent/agent.yaml (model.provider and model.name) or
--model provider/name, with the provider's usual environment variables
(ANTHROPIC_API_KEY; OPENAI_API_KEY and OPENAI_BASE_URL, which also reaches
Ollama, vLLM and llama.cpp servers). Only that provider is built in.
Sessions, turns and events are kept in <state>/agent.db (SQLite).

Every endpoint but /healthz needs "Authorization: Bearer <token>". The token is
--token, else $AGENT_SDK_TOKEN, else the one generated on first start and
stored in <state>/token (mode 0600). SIGINT or SIGTERM stops the server after
in-flight calls finish.`,
		Example: `  agent-sdk serve --dir examples/quickstart
  agent-sdk serve --dir . --addr 127.0.0.1:8080 --slug myagent`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			agent, res, state, err := f.buildAgent(cmd)
			if err != nil {
				return err
			}
			if slug == "" {
				slug = agent.Slug()
			}
			argv := []string{"serve", "--addr", addr, "--slug", slug, "--state", state,
				"--max-body-bytes", strconv.FormatInt(maxBody, 10), "--log-format", logFmt}
			if tok != "" {
				argv = append(argv, "--token", tok)
			}
			if f.model != "" {
				argv = append(argv, "--model", f.model)
			}
			if leaseTTL != "" {
				argv = append(argv, "--lease-ttl", leaseTTL)
			}
			if approvalWait != "" {
				argv = append(argv, "--approval-wait", approvalWait)
			}
			if approvalTimeout != "" {
				argv = append(argv, "--approval-timeout", approvalTimeout)
			}
			return execAgent(agent, res.Binary, argv...)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:3000", "address to listen on")
	cmd.Flags().StringVar(&slug, "slug", "", "URL prefix of the API (default: the agent directory's name)")
	cmd.Flags().StringVar(&tok, "token", "", "bearer token (default $AGENT_SDK_TOKEN, else generated into <state>/token)")
	cmd.Flags().Int64Var(&maxBody, "max-body-bytes", 4<<20, "largest request body accepted")
	cmd.Flags().StringVar(&logFmt, "log-format", "text", "request log format: text or json")
	cmd.Flags().StringVar(&f.model, "model", "", "model as provider/name (anthropic/…, openai/…), overriding agent/agent.yaml")
	cmd.Flags().StringVar(&approvalWait, "approval-wait", "", "how long a direct call of a gated tool waits for a decision before answering 202 (default 30s)")
	cmd.Flags().StringVar(&approvalTimeout, "approval-timeout", "", "how long a gated call stays pending before it expires, unless its tool says otherwise (default 24h)")
	cmd.Flags().StringVar(&leaseTTL, "lease-ttl", "", "how long a turn holds its session between renewals (default 15s); a dead host's turns are closed after it")
	return cmd
}

func newBuild() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build an agent's binary (cached) and print its path",
		Long: `build checks that every file in agent/tools defines exactly one tool, then builds
the agent with a generated main package, using the agent's go.mod. The binary
is cached in <state>/build by a hash of the sources, go.mod, go.sum, the SDK
and Go versions; it is rebuilt only when one of them changes.`,
		Example: "  agent-sdk build --dir examples/quickstart\n  agent-sdk build --dir . --model openai/gpt-4o",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, res, _, err := f.buildAgent(cmd)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), res.Binary)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&f.model, "model", "", "build in this model provider (provider/name), overriding agent/agent.yaml")
	return cmd
}

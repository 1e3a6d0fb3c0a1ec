package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentsdk/agentsdk/internal/build"
	"github.com/agentsdk/agentsdk/internal/serveflags"
)

func newServe() *cobra.Command {
	var (
		f     agentFlags
		sf    serveflags.Serve
		watch bool
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve an agent's HTTP API",
		Long: `serve builds the agent in --dir (or reuses the cached binary) and serves its API:

` + apiTable + `
The API is described by an OpenAPI 3.1 document at /<slug>/v1/openapi.json
(also: agent-sdk openapi --dir DIR). Errors are {"ok": false, "error":
{"code": …, "message": …}}; the codes are listed in the README.

The model comes from agent/agent.yaml (model.provider and model.name) or
--model provider/name, with the provider's usual environment variables
(ANTHROPIC_API_KEY; OPENAI_API_KEY and OPENAI_BASE_URL, which also reaches
Ollama, vLLM and llama.cpp servers; GEMINI_API_KEY or GOOGLE_API_KEY). Only
that provider is built in.
Sessions, turns, events and approvals are kept in <state>/agent.db (SQLite),
or where --store (else $AGENT_SDK_STORE) says: a SQLite file, or a postgres://
URL — then the PostgreSQL driver is built into the agent.

Every endpoint but /healthz and /readyz needs "Authorization: Bearer <token>". The token is
--token, else $AGENT_SDK_TOKEN, else the one generated on first start and
stored in <state>/token (mode 0600). SIGINT or SIGTERM stops the server after
in-flight calls finish.

With --watch, this process stays, holds the listening socket and runs the
host as its child: when a Go file of the module or a file under agent/
changes, it rebuilds the agent, starts the new build on the same socket and,
once that serves, lets the old host drain (as on SIGTERM). Sessions, parked
approvals and schedules are in the store, so none is lost. A failed build is
printed and the running host keeps serving the last build.`,
		Example: `  agent-sdk serve --dir examples/quickstart
  agent-sdk serve --dir . --watch                      # rebuild and swap the host as you edit
  agent-sdk serve --dir . --addr 127.0.0.1:8080 --slug myagent`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.model, f.store = sf.Model, sf.Store
			agent, res, state, err := f.buildAgent(cmd)
			if err != nil {
				return err
			}
			argv := []string{"serve", "--state", state}
			if !cmd.Flags().Changed("slug") {
				argv = append(argv, "--slug", agent.Slug())
			}
			argv = append(argv, serveflags.Args(cmd.Flags())...)
			if !watch {
				return execAgent(agent, res.Binary, argv...)
			}
			w := &watcher{argv: argv, out: cmd.ErrOrStderr(), skip: []string{state}, build: func(context.Context) (*build.Agent, *build.Result, error) {
				agent, res, _, err := f.buildAgent(cmd)
				return agent, res, err
			}}
			if sf.Record != "" {
				w.skip = append(w.skip, sf.Record)
			}
			return w.run(cmd.Context(), sf.Addr, agent, res)
		},
	}
	f.register(cmd)
	sf.Register(cmd.Flags(), "")
	cmd.Flags().BoolVar(&watch, "watch", false, "rebuild the agent when its files change and swap the host on the same port; a failed build keeps the running host")
	return cmd
}

func newOpenAPI() *cobra.Command {
	var (
		f    agentFlags
		slug string
	)
	cmd := &cobra.Command{
		Use:   "openapi",
		Short: "Print the OpenAPI 3.1 document of an agent's HTTP API",
		Long: `openapi builds the agent in --dir (as for serve) and prints the OpenAPI 3.1
document its host serves at /<slug>/v1/openapi.json: every endpoint, its bodies
and error codes, and each server tool's own input schema under its call route.
Generate a client in any language from it, or browse it in the tools you use.`,
		Example: "  agent-sdk openapi --dir examples/quickstart > openapi.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			agent, res, _, err := f.buildAgent(cmd)
			if err != nil {
				return err
			}
			if slug == "" {
				slug = agent.Slug()
			}
			return runAgent(agent, res.Binary, nil, "openapi", "--slug", slug)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&slug, "slug", "", "the API's slug (default: the agent directory's name)")
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

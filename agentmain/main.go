// Package agentmain is the entry point of an agent binary: the program
// agent-sdk builds from an agent directory. Its generated main is
//
//	func main() {
//		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//		code := agentmain.Main(ctx, os.Args[1:], agentmain.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, &agentmain.Options{…})
//		stop()
//		os.Exit(code)
//	}
//
// with the agent's tools (and its model provider) imported for their
// registration, and in Options the optional parts the agent uses: the MCP
// client (mcpconn.Open), the OTLP exporter (otlp.Setup) and the PostgreSQL
// store (postgres.Open). Main reads agent/agent.yaml, opens the store
// (SQLite under the state directory unless --store or $AGENT_SDK_STORE
// says otherwise),
// builds the host and serves it with package serve, or lists or calls the
// tools, per args:
//
//	serve [--addr 127.0.0.1:3000] [--slug NAME] [--state DIR] [--store URL] [--token T] [--max-body-bytes N] [--model provider/name] [--config agent/agent.yaml] …
//	call NAME [--input JSON|@FILE|-] [--state DIR] [--store URL] [--session ID] [--no-wait]
//	tools [--json]
//	openapi [--slug NAME]
package agentmain

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/agentsdk/agentsdk/agentconfig"
	"github.com/agentsdk/agentsdk/channel"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/command"
	"github.com/agentsdk/agentsdk/schedule"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// Stdio is the standard streams [Main] uses.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// Options are the optional parts built into an agent binary. Nil means
// none.
type Options struct {
	// OpenMCP connects call.Host.MCP to the servers of agent.yaml
	// (mcpconn.Open). Nil: an agent.yaml with mcp: servers is refused,
	// saying the agent was built without MCP support.
	OpenMCP func(servers map[string]agentconfig.MCPServer, logger *slog.Logger) (tool.MCP, error)
	// Export sets up telemetry export for the host (otlp.Setup), returning
	// how to flush and stop it. Nil: no export.
	Export func(ctx context.Context, service string, opts *host.Options) (func(context.Context) error, error)
	// OpenStore opens a PostgreSQL store by URL (postgres.Open). Nil: a
	// postgres:// --store is refused, saying the agent was built without
	// PostgreSQL support.
	OpenStore func(ctx context.Context, url string) (store.Store, error)

	channels  []*channel.Channel   // the agent's, registered
	schedules []*schedule.Schedule // the agent's, registered
}

// openStore opens the agent's store: --store (else $AGENT_SDK_STORE) as a
// postgres:// URL or a SQLite file, else SQLite under the state directory.
func (o Options) openStore(ctx context.Context, flag, stateDir string) (store.Store, error) {
	where := agentconfig.Store(flag)
	switch {
	case where == "":
		return sqlite.Open(ctx, filepath.Join(stateDir, dbFile))
	case agentconfig.IsPostgresURL(where):
		if o.OpenStore == nil {
			return nil, fmt.Errorf("the store is a PostgreSQL URL, but this agent was built without PostgreSQL support (agent-sdk builds it in when --store or $%s names a postgres:// URL as it builds the agent)", agentconfig.StoreEnvVar)
		}
		return o.OpenStore(ctx, where)
	}
	return sqlite.Open(ctx, where)
}

// Main runs the agent binary's command in args and returns the process
// exit code; for call, see the agent-sdk CLI's.
func Main(ctx context.Context, args []string, stdio Stdio, opts *Options) int {
	var o Options
	if opts != nil {
		o = *opts
	}
	if len(args) == 0 {
		fmt.Fprintln(stdio.Err, "usage: agent serve|call|tools|openapi [flags]")
		return command.ExitRefused
	}
	set, err := tool.Registered()
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	if o.channels, err = channel.Registered(); err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	if o.schedules, err = schedule.Registered(); err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	switch args[0] {
	case "serve":
		return mainServe(ctx, set, args[1:], stdio, o)
	case "call":
		return mainCall(ctx, set, args[1:], stdio, o)
	case "tools":
		return mainTools(set, args[1:], stdio)
	case "openapi":
		return mainOpenAPI(set, args[1:], stdio)
	}
	fmt.Fprintf(stdio.Err, "unknown command %q: use serve, call, tools or openapi\n", args[0])
	return command.ExitRefused
}

// mcp connects call.Host.MCP to the servers of agent.yaml, if any.
func (o Options) mcp(cfg agentconfig.Config, configPath string, logger *slog.Logger) (tool.MCP, error) {
	if len(cfg.MCP) == 0 {
		return nil, nil
	}
	if o.OpenMCP == nil {
		return nil, fmt.Errorf("%s has mcp: servers, but this agent was built without MCP support (agent-sdk builds it in when agent.yaml has them)", configPath)
	}
	conns, err := o.OpenMCP(cfg.MCP, logger)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", configPath, err)
	}
	return conns, nil
}

// export sets up telemetry export, if built in.
func (o Options) export(ctx context.Context, service string, opts *host.Options, stdio Stdio) (func(context.Context) error, error) {
	if o.Export == nil {
		if agentconfig.OTLPEndpointSet() {
			fmt.Fprintln(stdio.Err, "OTEL_EXPORTER_OTLP_* is set, but this agent was built without the OTLP exporter: set telemetry: {otlp: true} in agent/agent.yaml (or the variable when agent-sdk builds it)")
		}
		return func(context.Context) error { return nil }, nil
	}
	return o.Export(ctx, service, opts)
}

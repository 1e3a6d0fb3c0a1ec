package serve

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/agentconfig"
	"github.com/agentsdk/agentsdk/internal/command"
	"github.com/agentsdk/agentsdk/internal/token"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// Stdio is the standard streams [Main] uses.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// Main is the entry point of an agent binary: the program agent-sdk builds
// from an agent directory, whose generated main is
//
//	func main() {
//		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//		defer stop()
//		os.Exit(serve.Main(ctx, os.Args[1:], serve.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
//	}
//
// It serves, lists or calls the tools registered with [tool.Define] and
// [tool.DefineScript] (see [tool.Registered]), per args:
//
//	serve [--addr 127.0.0.1:3000] [--slug NAME] [--state DIR] [--token T] [--max-body-bytes N] [--model provider/name] [--config agent/agent.yaml]
//	call NAME [--input JSON|@FILE|-] [--state DIR] [--session ID]
//	tools [--json]
//
// It returns the process exit code; for call, see the agent-sdk CLI's.
func Main(ctx context.Context, args []string, stdio Stdio) int {
	if len(args) == 0 {
		fmt.Fprintln(stdio.Err, "usage: agent serve|call|tools [flags]")
		return command.ExitRefused
	}
	set, err := tool.Registered()
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	switch args[0] {
	case "serve":
		return mainServe(ctx, set, args[1:], stdio)
	case "call":
		return mainCall(ctx, set, args[1:], stdio)
	case "tools":
		return mainTools(set, args[1:], stdio)
	}
	fmt.Fprintf(stdio.Err, "unknown command %q: use serve, call or tools\n", args[0])
	return command.ExitRefused
}

func mainServe(ctx context.Context, set *tool.Set, args []string, stdio Stdio) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	cwd, _ := os.Getwd()
	addr := fs.String("addr", "127.0.0.1:3000", "address to listen on")
	slug := fs.String("slug", filepath.Base(cwd), "URL prefix of the API: /<slug>/v1/…")
	state := fs.String("state", ".agent-sdk", "state directory")
	tok := fs.String("token", "", "bearer token (default $"+token.EnvVar+", else generated into <state>/token)")
	maxBody := fs.Int64("max-body-bytes", MaxBodyBytesDefault, "largest request body accepted")
	drain := fs.Duration("drain-timeout", DrainTimeoutDefault, "how long shutdown waits for in-flight calls")
	logFormat := fs.String("log-format", "text", "request log format: text or json")
	modelFlag := fs.String("model", "", "model as provider/name, overriding agent.yaml (the provider must be built in)")
	configPath := fs.String("config", filepath.Join("agent", "agent.yaml"), "agent configuration file")
	leaseTTL := fs.Duration("lease-ttl", host.LeaseTTLDefault, "how long a turn holds its session without renewal; turns of a host that died are closed after it")
	approvalWait := fs.Duration("approval-wait", ApprovalWaitDefault, "how long a direct call of a gated tool waits for a decision before answering 202")
	approvalTimeout := fs.Duration("approval-timeout", host.ApprovalTimeoutDefault, "how long a gated call stays pending before it expires (unless its tool says otherwise)")
	if err := fs.Parse(args); err != nil {
		return command.ExitRefused
	}
	var handler slog.Handler
	switch *logFormat {
	case "text":
		handler = slog.NewTextHandler(stdio.Err, nil)
	case "json":
		handler = slog.NewJSONHandler(stdio.Err, nil)
	default:
		fmt.Fprintf(stdio.Err, "--log-format must be text or json, not %q\n", *logFormat)
		return command.ExitRefused
	}
	logger := slog.New(handler)
	stateDir, err := filepath.Abs(*state)
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	secret, src, err := token.Ensure(*tok, stateDir)
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	if src == token.FromGenerated {
		fmt.Fprintf(stdio.Err, "generated an API token and stored it in %s (mode 0600):\n  %s\nread it again with: cat %s\n", token.File(stateDir), secret, token.File(stateDir))
	}
	st, err := sqlite.Open(ctx, filepath.Join(stateDir, "agent.db"))
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	defer st.Close()
	opts, err := hostOptions(*configPath, *modelFlag, stdio)
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitRefused
	}
	opts.StateRoot, opts.Logger, opts.Store, opts.LeaseTTL, opts.ApprovalTimeout = stateDir, logger, st, *leaseTTL, *approvalTimeout
	stopOTLP, err := setupExporter(ctx, *slug, opts, stdio)
	if err != nil {
		fmt.Fprintln(stdio.Err, "setting up OpenTelemetry export:", err)
		return command.ExitFailure
	}
	defer stopOTLP(context.WithoutCancel(ctx))
	h, err := host.New(set, opts)
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	if err := h.Start(ctx); err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	defer h.Close()
	wait := *approvalWait
	if wait == 0 {
		wait = -1 // answer at once
	}
	srv, err := New(h, &Options{Slug: *slug, Token: secret, MaxBodyBytes: *maxBody, Logger: logger, ApprovalWait: wait})
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitRefused
	}
	err = ListenAndServe(ctx, *addr, srv, &ListenOptions{
		DrainTimeout: *drain,
		Logger:       logger,
		OnListen: func(a net.Addr) {
			fmt.Fprintf(stdio.Err, "serving %s at http://%s/%s/v1 (tools: %s)\n", *slug, a, *slug, strings.Join(set.Names(), ", "))
		},
	})
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	return command.ExitOK
}

// hostOptions reads agent.yaml and the --model flag into host options,
// opening the model provider. A provider that cannot be opened is not fatal:
// the host serves tools, and model turns fail saying why.
func hostOptions(configPath, modelFlag string, stdio Stdio) (*host.Options, error) {
	cfg, err := agentconfig.Load(configPath)
	if err != nil {
		return nil, err
	}
	if modelFlag != "" {
		m, err := model.ParseName(modelFlag)
		if err != nil {
			return nil, err
		}
		cfg.Model.Provider, cfg.Model.Name = m.Provider, m.Name
	}
	opts := &host.Options{
		System: cfg.System, MaxSteps: cfg.MaxSteps, ToolConcurrency: cfg.ToolConcurrency,
		ModelTimeout: time.Duration(cfg.ModelTimeout), MaxTokens: cfg.Model.MaxTokens,
	}
	if opts.MCP, err = mcpFromConfig(cfg, configPath); err != nil {
		return nil, err
	}
	p, err := model.Open(cfg.Model)
	if err != nil {
		if cfg.Model.Provider != "" {
			fmt.Fprintf(stdio.Err, "model turns will fail: %v\n", err)
		}
		opts.ModelError = err
	} else {
		opts.Model = p
	}
	return opts, nil
}

// Exporter sets up telemetry export for a host, returning how to flush and
// stop it. Package serve/otlp registers one.
type Exporter func(ctx context.Context, service string, opts *host.Options) (func(context.Context) error, error)

var exporter Exporter

// RegisterExporter makes serve export telemetry with e; serve/otlp calls it
// from init.
func RegisterExporter(e Exporter) { exporter = e }

func setupExporter(ctx context.Context, service string, opts *host.Options, stdio Stdio) (func(context.Context) error, error) {
	if exporter == nil {
		for _, kv := range os.Environ() {
			if strings.HasPrefix(kv, "OTEL_EXPORTER_OTLP_") && strings.Contains(kv, "ENDPOINT=") {
				fmt.Fprintln(stdio.Err, "OTEL_EXPORTER_OTLP_* is set, but this agent was built without the OTLP exporter: set telemetry: {otlp: true} in agent/agent.yaml (or the variable when agent-sdk builds it)")
				break
			}
		}
		return func(context.Context) error { return nil }, nil
	}
	return exporter(ctx, service, opts)
}

// MCPOpener connects call.Host.MCP to the servers of agent.yaml. Package
// mcpconn registers one.
type MCPOpener func(servers map[string]agentconfig.MCPServer) (tool.MCP, error)

var mcpOpener MCPOpener

// RegisterMCP makes serve reach MCP servers with open; mcpconn calls it
// from init.
func RegisterMCP(open MCPOpener) { mcpOpener = open }

// mcpFromConfig connects call.Host.MCP to the servers of agent.yaml, if any.
func mcpFromConfig(cfg agentconfig.Config, configPath string) (tool.MCP, error) {
	if len(cfg.MCP) == 0 {
		return nil, nil
	}
	if mcpOpener == nil {
		return nil, fmt.Errorf("%s has mcp: servers, but this agent was built without MCP support (agent-sdk builds it in when agent.yaml has them)", configPath)
	}
	conns, err := mcpOpener(cfg.MCP)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", configPath, err)
	}
	return conns, nil
}

func mainCall(ctx context.Context, set *tool.Set, args []string, stdio Stdio) int {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	input := fs.String("input", "", "input as JSON, @FILE, or - for stdin")
	state := fs.String("state", ".agent-sdk", "state directory")
	session := fs.String("session", "", "run the call in this session")
	noWait := fs.Bool("no-wait", false, "for a gated tool, return as soon as the call is parked for approval")
	name, rest := "", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, rest = args[0], args[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return command.ExitRefused
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
	}
	if name == "" {
		fmt.Fprintln(stdio.Err, "usage: call NAME [--input JSON|@FILE|-]")
		return command.ExitRefused
	}
	raw, err := command.ReadInput(*input, stdio.In)
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitRefused
	}
	opts := &host.Options{StateRoot: *state, Logger: slog.New(slog.NewTextHandler(stdio.Err, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	// The store a serve host of this agent shares: sessions live there, and
	// gated calls park there for whoever approves them.
	st, err := sqlite.Open(ctx, filepath.Join(*state, "agent.db"))
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	defer st.Close()
	opts.Store = st
	cfg, err := agentconfig.Load(filepath.Join("agent", "agent.yaml"))
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitRefused
	}
	if opts.MCP, err = mcpFromConfig(cfg, filepath.Join("agent", "agent.yaml")); err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitRefused
	}
	h, err := host.New(set, opts)
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	defer h.Close()
	out, err := h.CallTool(ctx, name, raw, &host.CallOptions{SessionID: *session, Principal: "cli"})
	var pending *host.ApprovalPendingError
	if errors.As(err, &pending) {
		fmt.Fprintf(stdio.Err, "call %s of %s is waiting for approval. Answer it against the serve host of this agent:\n  agent-sdk approve %s --url http://127.0.0.1:3000/<slug>\n  agent-sdk deny %s --reason \"…\" --url http://127.0.0.1:3000/<slug>\n",
			pending.CallID, name, pending.CallID, pending.CallID)
		if *noWait {
			command.PrintJSON(stdio.Out, map[string]any{"ok": true, "status": "approval_pending", "callId": pending.CallID})
			return command.ExitOK
		}
		out, err = waitDecided(ctx, h, pending.CallID)
	}
	if err != nil {
		apiErr := callError(err)
		command.PrintJSON(stdio.Out, errorBody{Error: apiErr})
		fmt.Fprintln(stdio.Err, err)
		if apiErr.Status >= 500 {
			return command.ExitFailure
		}
		return command.ExitRefused
	}
	command.PrintJSON(stdio.Out, CallResponse{OK: true, Outcome: *out})
	if out.IsError {
		return command.ExitToolError
	}
	return command.ExitOK
}

// waitDecided polls the store until a parked call has its outcome.
func waitDecided(ctx context.Context, h *host.Host, callID string) (*host.Outcome, error) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		a, err := h.CallOutcome(ctx, callID)
		if err != nil {
			return nil, err
		}
		if a.Outcome != nil {
			var out host.Outcome
			if err := json.Unmarshal(a.Outcome, &out); err != nil {
				return nil, err
			}
			return &out, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

func mainTools(set *tool.Set, args []string, stdio Stdio) int {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	asJSON := fs.Bool("json", false, "print JSON for machines")
	if err := fs.Parse(args); err != nil {
		return command.ExitRefused
	}
	if *asJSON {
		command.PrintJSON(stdio.Out, toolList{OK: true, Tools: set.Infos()})
		return command.ExitOK
	}
	command.PrintTools(stdio.Out, set.Infos())
	return command.ExitOK
}

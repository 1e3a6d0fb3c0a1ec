package agentmain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentsdk/agentsdk/agentconfig"
	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/evals"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/command"
	"github.com/agentsdk/agentsdk/internal/serveflags"
	"github.com/agentsdk/agentsdk/tool"
)

// mainCall runs one call on an ephemeral host sharing the serve host's
// store, so that sessions are there and gated calls park where approvers
// see them.
func mainCall(ctx context.Context, set *tool.Set, args []string, stdio Stdio, o Options) int {
	fs := pflag.NewFlagSet("call", pflag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	input := fs.String("input", "", "input as JSON, @FILE, or - for stdin")
	state := fs.String("state", stateDefault, "state directory")
	session := fs.String("session", "", "run the call in this session")
	var storeFlag string
	serveflags.RegisterStore(fs, &storeFlag)
	noWait := fs.Bool("no-wait", false, "for a gated tool, return as soon as the call is parked for approval")
	if err := fs.Parse(args); err != nil {
		return command.ExitRefused
	}
	name := fs.Arg(0)
	if name == "" || fs.NArg() > 1 {
		fmt.Fprintln(stdio.Err, "usage: call NAME [--input JSON|@FILE|-]")
		return command.ExitRefused
	}
	raw, err := command.ReadInput(*input, stdio.In)
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitRefused
	}
	logger := slog.New(slog.NewTextHandler(stdio.Err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := o.openStore(ctx, storeFlag, *state)
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	defer st.Close()
	configPath := filepath.Join("agent", "agent.yaml")
	cfg, err := agentconfig.Load(configPath)
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitRefused
	}
	opts := &host.Options{StateRoot: *state, Logger: logger, Store: st, Channels: o.channels}
	if opts.MCP, err = o.mcp(cfg, configPath, logger); err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitRefused
	}
	// The GitHub and Slack clients; the slack channel is not served.
	if _, err := platformsFor(cfg, configPath, opts, logger, false); err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitRefused
	}
	h, err := host.New(set, opts)
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	defer h.Close()
	// call.Host.Evals, as in serve.
	if _, err := evals.New(h, &evals.Options{Logger: logger}); err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	out, err := h.CallTool(ctx, name, raw, &host.CallOptions{SessionID: *session, Principal: "cli"})
	var pending *host.ApprovalPendingError
	if errors.As(err, &pending) {
		fmt.Fprintf(stdio.Err, "call %s of %s is waiting for approval. Answer it against the serve host of this agent:\n  agent-sdk approve %s --url http://127.0.0.1:3000/<slug>\n  agent-sdk deny %s --reason \"…\" --url http://127.0.0.1:3000/<slug>\n",
			pending.CallID, name, pending.CallID, pending.CallID)
		if *noWait {
			command.PrintJSON(stdio.Out, callParked{OK: true, Status: api.CallAwaitingApproval, CallID: pending.CallID})
			return command.ExitOK
		}
		out, err = waitDecided(ctx, h, pending.CallID)
	}
	if err != nil {
		apiErr := api.AsError(err)
		command.PrintJSON(stdio.Out, api.ErrorResponse{Error: apiErr})
		fmt.Fprintln(stdio.Err, err)
		if apiErr.Status() >= 500 {
			return command.ExitFailure
		}
		return command.ExitRefused
	}
	command.PrintJSON(stdio.Out, api.CallResponse{OK: true, Outcome: *out})
	if out.IsError {
		return command.ExitToolError
	}
	return command.ExitOK
}

// callParked is what call --no-wait prints for a parked call.
type callParked struct {
	CallID string        `json:"callId"`
	OK     bool          `json:"ok"`
	Status api.CallState `json:"status"`
}

// waitDecided polls the store until a parked call has its outcome.
func waitDecided(ctx context.Context, h *host.Host, callID string) (*api.Outcome, error) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		a, err := h.Approvals().Get(ctx, callID)
		if err != nil {
			return nil, err
		}
		if a.Outcome != nil {
			return a.Outcome, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

func mainTools(set *tool.Set, args []string, stdio Stdio) int {
	fs := pflag.NewFlagSet("tools", pflag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	asJSON := fs.Bool("json", false, "print JSON for machines")
	if err := fs.Parse(args); err != nil {
		return command.ExitRefused
	}
	if *asJSON {
		command.PrintJSON(stdio.Out, api.ToolList{OK: true, Tools: set.Infos()})
		return command.ExitOK
	}
	command.PrintTools(stdio.Out, set.Infos())
	return command.ExitOK
}

// mainOpenAPI prints the OpenAPI document of the agent's HTTP API.
func mainOpenAPI(set *tool.Set, args []string, stdio Stdio) int {
	fs := pflag.NewFlagSet("openapi", pflag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	slug := fs.String("slug", "", "the API's slug (default: the agent directory's name)")
	if err := fs.Parse(args); err != nil {
		return command.ExitRefused
	}
	if *slug == "" {
		cwd, _ := os.Getwd()
		*slug = filepath.Base(cwd)
	}
	doc, err := api.OpenAPI(*slug, set.Infos())
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	stdio.Out.Write(append([]byte(strings.TrimRight(string(doc), "\n")), '\n'))
	return command.ExitOK
}

package agentmain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

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
	// The host serve would make, but the slack channel (not served) and
	// its warnings: the model, so that call.Send's turns run; agent.yaml's
	// limits, MCP servers, GitHub and Slack clients.
	opts, _, err := hostOptionsFor(filepath.Join("agent", "agent.yaml"), "", logger, Stdio{Out: io.Discard, Err: io.Discard}, o, hostUse{})
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitRefused
	}
	opts.StateRoot, opts.Logger, opts.Store = *state, logger, st
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
	// Turns the call started (call.Send) run on this host, which closing
	// would interrupt.
	defer waitTurns(ctx, h, stdio.Err)
	var pending *host.ApprovalPendingError
	if errors.As(err, &pending) {
		// The lines call --url prints, against the serve host of this
		// agent (which shares this store) at its default address.
		command.PrintParked(stdio.Err, pending.CallID, serveURL())
		fmt.Fprintln(stdio.Err, "  (through this agent's serve host, agent-sdk serve, which shares this call's store)")
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

// serveURL is the URL agent-sdk serve gives this agent by default: its
// default address, and the agent directory's name as the slug.
func serveURL() string {
	cwd, _ := os.Getwd()
	return "http://" + serveflags.AddrDefault + "/" + filepath.Base(cwd)
}

// waitTurns waits, before the call's host closes, for the turns it runs
// (those the call started with call.Send, and theirs) to end or park, and
// says how each ended: closing the host would interrupt them. ctx's end
// (Ctrl-C) stops the wait.
func waitTurns(ctx context.Context, h *host.Host, errOut io.Writer) {
	turns := map[string]string{} // session → its turn
	var order []string
	note := func() int {
		running := h.RunningTurns()
		for _, id := range running {
			if _, ok := turns[id]; ok {
				continue
			}
			sess, err := h.Sessions().Get(ctx, id)
			if err != nil || sess.RunningTurn == "" {
				continue
			}
			turns[id] = sess.RunningTurn
			order = append(order, id)
			fmt.Fprintf(errOut, "the call started a model turn in session %s: waiting for it to end (Ctrl-C interrupts it)\n", id)
		}
		return len(running)
	}
	if note() == 0 {
		return
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for note() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	for _, id := range order {
		fmt.Fprintf(errOut, "session %s: %s\n", id, turnEnd(ctx, h, id, turns[id]))
	}
}

// turnEnd says how a session's turn ended (or that it parked), from its
// events.
func turnEnd(ctx context.Context, h *host.Host, sessionID, turnID string) string {
	end := "the turn ended"
	for after := int64(0); ; {
		evs, err := h.Sessions().Events(ctx, sessionID, after, 1000)
		if err != nil {
			return fmt.Sprintf("reading its events: %v", err)
		}
		for _, e := range evs {
			after = e.Seq
			if e.TurnID != turnID {
				continue
			}
			switch e.Kind {
			case api.KindTurnCompleted:
				end = "the turn completed"
			case api.KindTurnFailed:
				if f, err := api.Decode[api.TurnFailed](e); err == nil {
					end = fmt.Sprintf("the turn failed (%s): %s", f.Code, f.Reason)
				}
			case api.KindApprovalRequested:
				if a, err := api.Decode[api.ApprovalRequested](e); err == nil {
					end = fmt.Sprintf("the turn is parked: call %s of %s waits for approval (agent-sdk approve %s --url %s)", a.CallID, a.Tool, a.CallID, serveURL())
				}
			}
		}
		if len(evs) < 1000 {
			return end
		}
	}
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

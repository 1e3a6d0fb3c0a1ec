package harnessturn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/agenttool"
	"github.com/agentsdk/agentsdk/internal/harness"
)

// ServerName is the name the agent's MCP server has in a harness: its
// tools reach the model as mcp__agent__<tool> (Claude), mcp_agent_<tool>
// (Gemini), in the namespace mcp__agent (Codex).
const ServerName = "agent"

// Config is one harness turn.
type Config struct {
	Spec harness.Spec
	// Workspace is where the harness works (its cwd); Home its HOME, where
	// its own session store persists from turn to turn.
	Workspace, Home string
	// MCP are the MCP servers the harness is given: the agent's server
	// tools (named ServerName), if it can reach them.
	MCP []harness.MCPServer
	// Context is what the session's stream says (Context).
	Context Context
	// Sink takes the turn's events and permission requests.
	Sink Sink
	// StartProcess starts the harness's process (harness.Options).
	StartProcess func(*exec.Cmd) (func(), error)
	// Busy, if set, reports whether the harness waits on the caller (its
	// calls of the agent's tools in flight), beside what its stream says:
	// such time does not count towards its hang timeout.
	Busy   func() bool
	Logger *slog.Logger
}

// Failure is a harness turn's failure of the harness's own (it exited,
// could not start, refused): the turn fails harness_failed.
type Failure struct{ Err error }

func (e *Failure) Error() string { return e.Err.Error() }
func (e *Failure) Unwrap() error { return e.Err }

// Run runs a turn on the harness: it starts the process, continues the
// harness session the stream names (session/load) or starts a new one
// with the conversation so far in its prompt, records which
// (harness.session), prompts it and maps what it reports until it
// answers, and records what the harness says the prompt consumed
// (model.usage, priced by the host). It returns the number of the harness's answers (its steps)
// and why the turn failed, if it did: ctx's cause when ctx ended, a
// *Failure for the harness's own.
func Run(ctx context.Context, cfg Config) (int, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	spec := cfg.Spec
	PointAtAgents(cfg.Workspace)
	s := &stream{sink: cfg.Sink, spec: spec, ctx: ctx, calls: map[acp.ToolCallId]*harnessCall{}, earlier: cfg.Context.EarlierCalls}
	start := time.Now()
	p, err := harness.Start(ctx, harness.Options{
		Spec: spec, Workspace: cfg.Workspace, Home: cfg.Home, MCP: cfg.MCP, Logger: logger,
		Handler:      harness.Handler{Update: s.update, Permission: s.permission},
		StartProcess: cfg.StartProcess,
		Busy:         func() bool { return s.busy() || cfg.Busy != nil && cfg.Busy() },
	})
	if err != nil {
		return 0, failure(ctx, err)
	}
	defer p.Close()
	initialized := time.Since(start)
	prompt, last := cfg.Context.Prompt, cfg.Context.Last
	rec := api.HarnessSession{Runtime: spec.Name, Agent: p.Info()}
	if last.SessionID != "" && last.Runtime == spec.Name && p.CanLoad() {
		if err := p.LoadSession(ctx, last.SessionID); err == nil {
			rec.SessionID, rec.Loaded = last.SessionID, true
		} else {
			logger.Warn("a harness could not continue its session: starting a new one from the history", "harness", spec.Name, "err", err)
		}
	}
	if rec.SessionID == "" {
		id, err := p.NewSession(ctx)
		if err != nil {
			return 0, failure(ctx, err)
		}
		rec.SessionID = id
		if cfg.Context.Earlier != "" {
			rec.FromHistory = true
			prompt = cfg.Context.Earlier + prompt
		}
	}
	if err := cfg.Sink.Emit(context.WithoutCancel(ctx), rec); err != nil {
		return 0, err
	}
	logger.Debug("harness turn started", "harness", spec.Name, "agent", rec.Agent,
		"initialize", initialized, "session_open", time.Since(start)-initialized, "loaded", rec.Loaded)
	asked := time.Now()
	s.prompted()
	res, perr := p.Prompt(ctx, prompt)
	steps, err := s.finish(perr)
	if err != nil {
		return steps, err
	}
	if perr == nil {
		if err := cfg.Sink.Emit(context.WithoutCancel(ctx), usageOf(spec.Name, spec.Model, res, time.Since(asked))); err != nil {
			return steps, err
		}
	}
	switch {
	case errors.Is(perr, harness.ErrCancelled):
		return steps, context.Cause(ctx)
	case perr != nil:
		return steps, failure(ctx, perr)
	case res.StopReason == acp.StopReasonCancelled && ctx.Err() != nil:
		return steps, context.Cause(ctx)
	case res.StopReason == acp.StopReasonCancelled:
		// The harness ended the turn itself (Codex does when a person
		// rejects a command): the decision is on the stream.
		return steps, nil
	case res.StopReason == acp.StopReasonRefusal:
		return steps, &Failure{fmt.Errorf("harness %s refused to go on (stop reason refusal)", spec.Name)}
	}
	return steps, nil
}

// failure is why a harness turn failed: the turn's context's end when it
// ended (a cancel, a shutdown), else the harness's own failure.
func failure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return &Failure{err}
}

// Context is what a harness turn needs from the session's stream.
type Context struct {
	// Prompt is the turn's message, after what the harness was not told:
	// who denied its requests, and why, since its last turn (ACP's answer
	// carries only "rejected").
	Prompt string
	// Earlier is the conversation before the turn as text, for a harness
	// that cannot continue its own session ("" if there was none).
	Earlier string
	// Last is the latest harness session the session ran.
	Last api.HarnessSession
	// Earlier calls are the harness's own ids of the calls it made in
	// earlier turns: a harness that replays its history (session/load)
	// reports them again, and they are not this turn's.
	EarlierCalls map[string]bool
}

// ReadContext reads a harness turn's Context from the session's stream.
func ReadContext(turnID string, events iter.Seq[api.Event]) Context {
	var c Context
	var b strings.Builder
	titles := map[string]string{} // a parked harness call's title, by call id
	var denials []string
	for e := range events {
		switch e.Kind {
		case api.KindMessage:
			m, _ := api.Decode[api.Message](e)
			if e.TurnID == turnID && m.Role == api.RoleUser {
				c.Prompt = m.Text
				continue
			}
			fmt.Fprintf(&b, "%s: %s\n\n", m.Role, m.Text)
		case api.KindActionsRequested:
			a, _ := api.Decode[api.ActionsRequested](e)
			for _, act := range a.Actions {
				if e.TurnID != turnID && act.ModelCallID != "" && strings.HasPrefix(act.Tool, "harness_") {
					if c.EarlierCalls == nil {
						c.EarlierCalls = map[string]bool{}
					}
					c.EarlierCalls[act.ModelCallID] = true
				}
			}
		case api.KindHarnessSession:
			c.Last, _ = api.Decode[api.HarnessSession](e)
			denials = nil
		case api.KindApprovalRequested:
			r, _ := api.Decode[api.ApprovalRequested](e)
			var in struct{ Title string }
			if strings.HasPrefix(r.Tool, "harness_") && json.Unmarshal(r.Input, &in) == nil {
				titles[r.CallID] = in.Title
			}
		case api.KindApprovalResolved:
			r, _ := api.Decode[api.ApprovalResolved](e)
			if title, ok := titles[r.CallID]; ok && r.Status == api.ApprovalDenied && r.By != "host" {
				d := fmt.Sprintf("%s denied your request to run %q", r.By, title)
				if r.Reason != "" {
					d += ": " + r.Reason
				}
				denials = append(denials, d)
			}
		}
	}
	if len(denials) > 0 {
		c.Prompt = "(Since your last turn: " + strings.Join(denials, "; ") + ".)\n\n" + c.Prompt
	}
	if b.Len() > 0 {
		c.Earlier = "The conversation so far (you are continuing it):\n\n" + b.String() + "Now: "
	}
	return c
}

// PointAtAgents writes CLAUDE.md and GEMINI.md into a workspace that has
// an AGENTS.md (the agent tools' catalog) and not them: Claude Code and
// Gemini CLI read those, and each imports AGENTS.md with @. Codex reads
// AGENTS.md itself.
func PointAtAgents(ws string) {
	if _, err := os.Stat(filepath.Join(ws, "AGENTS.md")); err != nil {
		return
	}
	for _, name := range []string{"CLAUDE.md", "GEMINI.md"} {
		path := filepath.Join(ws, name)
		if _, err := os.Stat(path); err == nil {
			continue
		}
		_ = os.WriteFile(path, []byte("@AGENTS.md\n"), 0o644)
	}
}

// Contained is a Config.StartProcess that starts the harness contained
// (agenttool.StartProcess: its process group, and a cgroup or a mark for
// everything it starts), recorded under records, so that a host or runner
// started after this one died reaps what it left.
func Contained(records string, logger *slog.Logger) func(*exec.Cmd) (func(), error) {
	return func(cmd *exec.Cmd) (func(), error) {
		cmd.WaitDelay = 5 * time.Second
		p, err := agenttool.StartProcess(cmd, agenttool.ProcessOptions{Records: records})
		if err != nil {
			return nil, err
		}
		return func() {
			if err := p.Kill(); err != nil && logger != nil {
				logger.Warn("killing a harness's processes", "pid", p.Pid(), "err", err)
			}
		}, nil
	}
}

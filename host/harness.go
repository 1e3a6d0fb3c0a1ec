package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/agenttool"
	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/tool"
)

// A harness turn (a session whose runtime is not native) is run by a
// coding-agent harness over ACP instead of the host's model loop
// (internal/harness): one process per running turn, started in the
// session's workspace with a HOME of its own under the session's state
// directory (<state>/sessions/<id>/harness-home), so that the harness's
// own session store persists there and the next turn continues it
// (session/load) — or, where the harness cannot, starts a new one with the
// conversation so far in its first prompt. What the harness reports
// becomes the session's stream (harness_stream.go); its permission
// requests become parked calls that a person decides as any other
// (harness_permission.go); the agent's server tools reach it over the
// host's MCP endpoint with a token good for the running turn only
// (Options.HarnessMCP, CallInTurn with InTurn.Harness). Cancel sends
// session/cancel, then kills the process group; a host that dies takes its
// harness processes with it (the next start reaps them), and the sweep
// ends its harness turns failed rather than resuming them.

// HarnessMCPServer is how a harness turn reaches the agent's server tools:
// the MCP endpoint's URL and the headers that authorise the turn's calls.
type HarnessMCPServer struct {
	URL     string
	Headers map[string]string
}

// harnessMCPFunc gives a harness turn the MCP server of the agent's
// tools.
type harnessMCPFunc = func(sessionID, turnID string) (HarnessMCPServer, bool)

// SetHarnessMCP sets how harness turns reach the agent's server tools:
// f gives the MCP endpoint's URL and the headers that authorise one
// turn's calls (serve's: a token good while the turn runs on this host).
// Until it is set, harness turns run without the agent's server tools.
func (h *Host) SetHarnessMCP(f func(sessionID, turnID string) (HarnessMCPServer, bool)) {
	h.harnessMCP.Store(&f)
}

// harnessServerName is the name the agent's MCP server has in a harness:
// its tools reach the model as mcp__agent__<tool> (Claude),
// mcp_agent_<tool> (Gemini), in the namespace mcp__agent (Codex).
const harnessServerName = "agent"

// harnessHome is the HOME of a session's harness.
func (h *Host) harnessHome(sessionID string) string {
	return filepath.Join(h.opts.StateRoot, "sessions", sessionID, "harness-home")
}

// harnessTurn runs a turn of sess with its harness. It returns the number
// of the harness's answers (its steps) and why the turn failed, if it did.
func (h *Host) harnessTurn(ctx context.Context, sess api.Session, turnID string) (int, error) {
	spec, ok := h.Harness(sess.Runtime)
	if !ok {
		return 0, &harnessError{fmt.Errorf("session %s runs on %q, which this host does not know (known: %s)", sess.ID, sess.Runtime, strings.Join(harness.Names(h.opts.Harnesses), ", "))}
	}
	prompt, earlier, last, err := h.harnessContext(ctx, sess, turnID)
	if err != nil {
		return 0, err
	}
	ws, err := h.sessionWorkspace(sess.ID).open()
	if err != nil {
		return 0, err
	}
	pointHarnessesAtAgents(ws)
	run := &harnessRun{h: h, sess: sess, turnID: turnID, spec: spec, ctx: ctx, calls: map[acp.ToolCallId]*harnessCall{}}
	var servers []harness.MCPServer
	if f := h.harnessMCP.Load(); f != nil && h.tools.Len() > 0 {
		if s, ok := (*f)(sess.ID, turnID); ok {
			servers = append(servers, harness.MCPServer{Name: harnessServerName, URL: s.URL, Headers: s.Headers})
		}
	}
	h.harnessTurns.add(sess.ID, turnID)
	defer h.harnessTurns.remove(sess.ID, turnID)
	start := time.Now()
	p, err := harness.Start(ctx, harness.Options{
		Spec: spec, Workspace: ws, Home: h.harnessHome(sess.ID), MCP: servers, Logger: h.logger,
		Handler:      harness.Handler{Update: run.update, Permission: run.permission},
		StartProcess: h.startHarnessProcess,
	})
	if err != nil {
		return 0, h.harnessFailure(ctx, err)
	}
	defer p.Close()
	initialized := time.Since(start)
	rec := api.HarnessSession{Runtime: spec.Name, Agent: p.Info()}
	if last.SessionID != "" && last.Runtime == spec.Name && p.CanLoad() {
		if err := p.LoadSession(ctx, last.SessionID); err == nil {
			rec.SessionID, rec.Loaded = last.SessionID, true
		} else {
			h.logger.Warn("a harness could not continue its session: starting a new one from the history", "session", sess.ID, "harness", spec.Name, "err", err)
		}
	}
	if rec.SessionID == "" {
		id, err := p.NewSession(ctx)
		if err != nil {
			return 0, h.harnessFailure(ctx, err)
		}
		rec.SessionID = id
		if earlier != "" {
			rec.FromHistory = true
			prompt = earlier + prompt
		}
	}
	if err := h.emit(ctx, sess.ID, turnID, rec); err != nil {
		return 0, err
	}
	h.logger.Debug("harness turn started", "session", sess.ID, "turn", turnID, "harness", spec.Name, "agent", rec.Agent,
		"initialize", initialized, "session_open", time.Since(start)-initialized, "loaded", rec.Loaded)
	res, perr := p.Prompt(ctx, prompt)
	steps, err := run.finish(perr)
	if err != nil {
		return steps, err
	}
	switch {
	case errors.Is(perr, harness.ErrCancelled):
		return steps, context.Cause(ctx)
	case perr != nil:
		return steps, h.harnessFailure(ctx, perr)
	case res.StopReason == acp.StopReasonCancelled && ctx.Err() != nil:
		return steps, context.Cause(ctx)
	case res.StopReason == acp.StopReasonCancelled:
		// The harness ended the turn itself (Codex does when a person
		// rejects a command): the decision is on the stream.
		return steps, nil
	case res.StopReason == acp.StopReasonRefusal:
		return steps, &harnessError{fmt.Errorf("harness %s refused to go on (stop reason refusal)", spec.Name)}
	}
	return steps, nil
}

// harnessError is a harness turn's failure of the harness's own: the turn
// fails harness_failed.
type harnessError struct{ err error }

func (e *harnessError) Error() string { return e.err.Error() }
func (e *harnessError) Unwrap() error { return e.err }

// harnessFailure is why a harness turn failed: the turn's context's end
// when it ended (a cancel, a shutdown), else the harness's own failure.
func (h *Host) harnessFailure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return &harnessError{err}
}

// harnessContext reads what a harness turn needs from the session's
// stream: the turn's message (the prompt, after what the harness was not
// told: who denied its requests, and why, since its last turn — ACP's
// answer carries only "rejected"), the conversation before it as text
// (for a harness that cannot continue its own session), and the latest
// harness session the session ran.
func (h *Host) harnessContext(ctx context.Context, sess api.Session, turnID string) (prompt, earlier string, last api.HarnessSession, err error) {
	var b strings.Builder
	titles := map[string]string{} // a parked harness call's title, by call id
	var denials []string
	err = eachEvent(ctx, h.log, sess.ID, func(e api.Event) {
		switch e.Kind {
		case api.KindMessage:
			m, _ := api.Decode[api.Message](e)
			if e.TurnID == turnID && m.Role == api.RoleUser {
				prompt = m.Text
				return
			}
			fmt.Fprintf(&b, "%s: %s\n\n", m.Role, m.Text)
		case api.KindHarnessSession:
			last, _ = api.Decode[api.HarnessSession](e)
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
	})
	if err != nil {
		return "", "", last, err
	}
	if len(denials) > 0 {
		prompt = "(Since your last turn: " + strings.Join(denials, "; ") + ".)\n\n" + prompt
	}
	if b.Len() > 0 {
		earlier = "The conversation so far (you are continuing it):\n\n" + b.String() + "Now: "
	}
	return prompt, earlier, last, nil
}

// pointHarnessesAtAgents writes CLAUDE.md and GEMINI.md into a workspace
// that has an AGENTS.md (the agent tools' catalog) and not them: Claude
// Code and Gemini CLI read those, and each imports AGENTS.md with @.
// Codex reads AGENTS.md itself.
func pointHarnessesAtAgents(ws string) {
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

// harnessTurns are the harness turns this host runs, which the MCP
// endpoint's harness tokens are good for.
type harnessTurns struct {
	mu  sync.Mutex
	ids map[string]string // session → turn
}

func (t *harnessTurns) add(sessionID, turnID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ids == nil {
		t.ids = map[string]string{}
	}
	t.ids[sessionID] = turnID
}

func (t *harnessTurns) remove(sessionID, turnID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ids[sessionID] == turnID {
		delete(t.ids, sessionID)
	}
}

func (t *harnessTurns) runs(sessionID, turnID string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return turnID != "" && t.ids[sessionID] == turnID
}

// RunsHarnessTurn reports whether this host runs the harness turn: a
// harness token for the MCP endpoint is good while it does.
func (h *Host) RunsHarnessTurn(sessionID, turnID string) bool {
	return h.harnessTurns.runs(sessionID, turnID)
}

// startHarnessProcess starts a harness's process contained
// (agenttool.StartProcess: its process group, and a cgroup or a mark for
// everything it starts), recorded under the host's runs so that a host
// started after this one died reaps what it left.
func (h *Host) startHarnessProcess(cmd *exec.Cmd) (func(), error) {
	cmd.WaitDelay = 5 * time.Second
	p, err := agenttool.StartProcess(cmd, agenttool.ProcessOptions{Records: h.runsDir()})
	if err != nil {
		return nil, err
	}
	return func() {
		if err := p.Kill(); err != nil {
			h.logger.Warn("killing a harness's processes", "pid", p.Pid(), "err", err)
		}
	}, nil
}

// errHarnessTool is what a harness's parked call says when it is run
// without its harness (approved after its turn ended).
var errHarnessTool = errors.New("not run: the harness that asked for this has ended its turn; ask it again")

// harnessTools are the tools a harness's permission requests are parked
// as, one per ACP tool kind (harness_execute, harness_edit, …): what the
// approval record and the approver policies name. They never run: the
// harness runs what it asked for once allowed.
var harnessTools = sync.OnceValue(func() map[string]*tool.Tool {
	m := map[string]*tool.Tool{}
	for _, k := range harness.Kinds {
		name := "harness_" + k
		t, err := tool.New(name, tool.Config{Description: "A harness's own " + k + " tool call, asking permission.", NeedsApproval: tool.Always,
			Approval: &tool.ApprovalPolicy{NoEdit: true}},
			func(ctx context.Context, c *tool.Call, in map[string]any) (string, error) { return "", errHarnessTool })
		if err != nil {
			panic(fmt.Sprintf("defining %s: %v", name, err))
		}
		m[name] = t
	}
	return m
})

// builtinTool returns the host's own tools that calls may be parked as
// but the agent does not define: raise_usage_limit and the harness kinds.
func (h *Host) builtinTool(name string) (*tool.Tool, bool) {
	if name == raiseTool {
		return h.raiser, true
	}
	t, ok := harnessTools()[name]
	return t, ok
}

// Harness returns the spec of the harness a runtime name names.
func (h *Host) Harness(name string) (harness.Spec, bool) {
	s, ok := h.opts.Harnesses[name]
	return s, ok
}

// sessionRuntime is the runtime a new session of mode records ("" for
// native), or unknown_runtime.
func (h *Host) sessionRuntime(name string, mode api.Mode) (string, error) {
	if name == "" {
		name = h.opts.Runtime
	}
	if name == "" || name == harness.Native {
		return "", nil
	}
	if _, ok := h.opts.Harnesses[name]; !ok {
		return "", api.Errorf(api.CodeUnknownRuntime, "unknown_runtime: %q is not a runtime of this host; it runs %s", name, strings.Join(harness.Names(h.opts.Harnesses), ", "))
	}
	if mode == api.ModeCloud {
		return "", api.Errorf(api.CodeBadRequest, "a cloud session runs its turns on a runner, which runs the native loop only: runtime %q needs a local session", name)
	}
	return name, nil
}

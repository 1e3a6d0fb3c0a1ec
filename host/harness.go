package host

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/internal/harnessturn"
	"github.com/agentsdk/agentsdk/tool"
)

// A harness turn (a session whose runtime is not native) is run by a
// coding-agent harness over ACP instead of the host's model loop
// (internal/harness, driven by internal/harnessturn, which a runner uses
// too): one process per running turn, started in the
// session's workspace with a HOME of its own under the session's state
// directory (<state>/sessions/<id>/harness-home), so that the harness's
// own session store persists there and the next turn continues it
// (session/load) — or, where the harness cannot, starts a new one with the
// conversation so far in its first prompt. What the harness reports
// becomes the session's stream; its permission requests become parked
// calls that a person decides as any other (harnessSink,
// harness_permission.go); the agent's server tools reach it over the
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

// harnessHome is the HOME of a session's harness.
func (h *Host) harnessHome(sessionID string) string {
	return filepath.Join(h.opts.StateRoot, "sessions", sessionID, "harness-home")
}

// harnessTurn runs a turn of sess with its harness (internal/harnessturn),
// its events and permission requests going to the session's stream
// (harnessSink). It returns the number of the harness's answers (its
// steps) and why the turn failed, if it did.
func (h *Host) harnessTurn(ctx context.Context, sess api.Session, turnID string) (int, error) {
	spec, ok := h.Harness(sess.Runtime)
	if !ok {
		return 0, &harnessturn.Failure{Err: fmt.Errorf("session %s runs on %q, which this host does not know (known: %s)", sess.ID, sess.Runtime, strings.Join(harness.Names(h.opts.Harnesses), ", "))}
	}
	var evs []api.Event
	if err := eachEvent(ctx, h.log, sess.ID, func(e api.Event) { evs = append(evs, e) }); err != nil {
		return 0, err
	}
	ws, err := h.sessionWorkspace(sess.ID).open()
	if err != nil {
		return 0, err
	}
	var servers []harness.MCPServer
	if f := h.harnessMCP.Load(); f != nil && h.tools.Len() > 0 {
		if s, ok := (*f)(sess.ID, turnID); ok {
			servers = append(servers, harness.MCPServer{Name: harnessturn.ServerName, URL: s.URL, Headers: s.Headers})
		}
	} else if h.tools.Len() > 0 {
		h.logger.Warn("a harness turn runs without the agent's server tools: this host serves no MCP endpoint for it (serve.ListenAndServe gives it one; or Host.SetHarnessMCP)",
			"session", sess.ID, "turn", turnID, "runtime", sess.Runtime)
	}
	h.harnessTurns.add(sess.ID, turnID)
	defer h.harnessTurns.remove(sess.ID, turnID)
	return harnessturn.Run(ctx, harnessturn.Config{
		Spec: spec, Workspace: ws, Home: h.harnessHome(sess.ID), MCP: servers,
		Context: harnessturn.ReadContext(turnID, slices.Values(evs)),
		Sink:    &harnessSink{h: h, sess: sess, turnID: turnID, ctx: ctx}, StartProcess: harnessturn.Contained(h.runsDir(), h.logger),
		Busy:   func() bool { return h.harnessTurns.busy(sess.ID) },
		Logger: h.logger.With("session", sess.ID, "turn", turnID),
	})
}

// harnessTurns are the harness turns this host runs, which the MCP
// endpoint's harness tokens are good for.
type harnessTurns struct {
	mu    sync.Mutex
	ids   map[string]string // session → turn
	calls map[string]int    // session → its harness's calls of server tools in flight
}

// calling counts a harness's call of a server tool in the session's
// turn until the returned func is called.
func (t *harnessTurns) calling(sessionID string) (done func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.calls == nil {
		t.calls = map[string]int{}
	}
	t.calls[sessionID]++
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.calls[sessionID]--; t.calls[sessionID] <= 0 {
			delete(t.calls, sessionID)
		}
	}
}

// busy reports whether the session's harness waits on a call of a
// server tool (not counted towards its hang timeout).
func (t *harnessTurns) busy(sessionID string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls[sessionID] > 0
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

// sessionRuntime is the runtime a new session records ("" for native), or
// unknown_runtime. A cloud session's harness runs on its runner.
func (h *Host) sessionRuntime(name string) (string, error) {
	if name == "" {
		name = h.opts.Runtime
	}
	if name == "" || name == harness.Native {
		return "", nil
	}
	if _, ok := h.opts.Harnesses[name]; !ok {
		return "", api.Errorf(api.CodeUnknownRuntime, "unknown_runtime: %q is not a runtime of this host; it runs %s", name, strings.Join(harness.Names(h.opts.Harnesses), ", "))
	}
	return name, nil
}

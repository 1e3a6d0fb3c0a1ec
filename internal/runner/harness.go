package runner

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/internal/harnessturn"
	"github.com/agentsdk/agentsdk/tool"
)

// runHarness runs a claimed turn of a session whose runtime is a
// coding-agent harness, on this machine's installation of it
// (internal/harnessturn, as the host runs a local harness turn): in the
// session's workspace here, with a HOME of its own beside it (so that a
// later turn claimed here continues the harness's session), the server
// tools over the host's MCP endpoint with the claim's runner token (the
// host records those calls), its events reported, and its permission
// requests asked of the host (runnerSink).
func (t *turn) runHarness(ctx context.Context) (int, error) {
	c := t.claim
	if err := t.prepare(); err != nil {
		return 0, err
	}
	hc := c.Harness
	spec := harness.Spec{Name: hc.Name, Command: hc.Command, Args: hc.Args, Env: hc.Env, Model: hc.Model,
		Permissions: harness.Permissions{Allow: hc.Permissions.Allow, Ask: hc.Permissions.Ask, Deny: hc.Permissions.Deny, Always: hc.Permissions.Always},
		HangTimeout: time.Duration(hc.HangTimeoutMs) * time.Millisecond}
	if err := spec.Check(); err != nil {
		return 0, &harnessturn.Failure{Err: err}
	}
	var servers []harness.MCPServer
	if c.MCPURL != "" && len(t.server) > 0 {
		servers = append(servers, harness.MCPServer{Name: harnessturn.ServerName, URL: c.MCPURL,
			Headers: map[string]string{"Authorization": "Bearer " + c.RunnerToken}})
	}
	return harnessturn.Run(ctx, harnessturn.Config{
		Spec: spec, Workspace: t.ws, Home: filepath.Join(t.r.opts.Dir, "sessions", c.SessionID, "harness-home"), MCP: servers,
		Context: harnessturn.ReadContext(c.TurnID, slices.Values(c.Events)),
		Sink:    &runnerSink{t: t}, StartProcess: harnessturn.Contained(t.r.runsDir(), t.log), Logger: t.log,
	})
}

// permissionWait is how long one ask of the host waits for a decision.
const permissionWait = 20 * time.Second

// runnerSink reports a runner's harness turn to the host: its events as
// reports, its permission requests as runnerPermission asks, repeated
// while nobody has decided (the harness waits, its process alive).
type runnerSink struct {
	t *turn
}

func (s *runnerSink) Emit(ctx context.Context, p ...api.Payload) error { return s.t.Emit(ctx, p...) }

func (s *runnerSink) Ask(ctx context.Context, q harnessturn.Request) (harnessturn.Decision, error) {
	t := s.t
	req := api.RunnerPermission{Token: t.claim.Token, CallID: q.CallID, ModelCallID: q.ModelCallID, Tool: q.Tool, Input: q.Input,
		WaitMs: int(permissionWait.Milliseconds())}
	failures := 0
	for {
		d, err := t.r.c.RunnerPermission(ctx, t.claim.SessionID, t.claim.TurnID, req)
		switch {
		case ctx.Err() != nil:
			// The harness withdrew it, or the turn ended: nobody will run it.
			req.Withdraw, req.WaitMs = true, 0
			if _, err := t.r.c.RunnerPermission(context.WithoutCancel(ctx), t.claim.SessionID, t.claim.TurnID, req); err != nil {
				t.log.Warn("withdrawing a harness's permission request", "call", q.CallID, "err", err)
			}
			return harnessturn.Decision{Verdict: harnessturn.Withdrawn}, nil
		case errors.Is(err, &api.Error{Code: api.CodeLeaseLost}):
			t.cancel(errors.Join(errLost, err))
			return harnessturn.Decision{Verdict: harnessturn.Withdrawn}, nil
		case err != nil:
			if failures++; failures >= 5 {
				return harnessturn.Decision{}, err
			}
			t.log.Warn("asking the host for a harness's permission", "call", q.CallID, "err", err)
			select {
			case <-time.After(time.Duration(failures) * 200 * time.Millisecond):
			case <-ctx.Done():
			}
			continue
		}
		failures = 0
		switch d.Status {
		case api.ApprovalPending:
			continue
		case api.ApprovalApproved:
			t.running.add(q.CallID)
			return harnessturn.Decision{Verdict: harnessturn.Approved, Record: func(out tool.Output, took time.Duration) error {
				defer t.running.remove(q.CallID)
				return t.Emit(context.WithoutCancel(ctx), api.ActionResult{CallID: q.CallID, ModelCallID: q.ModelCallID, Tool: q.Tool,
					IsError: out.IsError, Result: out.Result, DurationMs: took.Milliseconds()})
			}}, nil
		default:
			return harnessturn.Decision{Verdict: harnessturn.Rejected}, nil
		}
	}
}

// callSet is the approved harness calls a turn's harness runs: each
// report renews their executor leases (RunnerReport.Running).
type callSet struct {
	mu  sync.Mutex
	ids []string
}

func (s *callSet) add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = append(s.ids, id)
}

func (s *callSet) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = slices.DeleteFunc(s.ids, func(x string) bool { return x == id })
}

func (s *callSet) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ids)
}

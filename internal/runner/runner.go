// Package runner runs cloud turns away from the host (agent-sdk runner):
// it claims a turn, materialises the agent tools the claim carries in a
// workspace of its own, runs the model loop (internal/turnloop, as the
// host does for a local turn) with its own model credentials — or, for a
// session whose runtime is a harness, the harness (internal/harnessturn,
// harness.go) — runs the agent tools there, calls the server tools over
// the host's MCP endpoint with the claim's runner token, and reports
// every event back under the claim's fence, renewing its lease as it
// goes.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/client"
	"github.com/agentsdk/agentsdk/internal/agenttool"
	"github.com/agentsdk/agentsdk/internal/harnessturn"
	"github.com/agentsdk/agentsdk/internal/progress"
	"github.com/agentsdk/agentsdk/internal/turnloop"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/tool"
)

// Options configure a runner.
type Options struct {
	// URL is the agent's base URL on the host, http://host:port/<slug>;
	// Token the host's bearer token. Required.
	URL, Token string
	// Name names the runner in leases and logs; default runner-<pid>.
	Name string
	// Dir holds the turns' workspaces, one per session; default
	// <temp>/agent-sdk-runner.
	Dir string
	// Wait is how long one claim waits for a turn; default 20 s.
	Wait time.Duration
	// Logger receives the runner's logs; nil discards them.
	Logger *slog.Logger
	// HTTPClient sends the runner's requests; nil means a new one.
	HTTPClient *http.Client
}

// Runner runs cloud turns. Make one with [New].
type Runner struct {
	opts Options
	c    *client.Client
	log  *slog.Logger
}

// New checks the options and returns a runner.
func New(opts *Options) (*Runner, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.URL == "" || o.Token == "" {
		return nil, errors.New("creating runner: the host's URL and token are required")
	}
	if o.Name == "" {
		o.Name = fmt.Sprintf("runner-%d", os.Getpid())
	}
	if err := tool.CheckName(o.Name); err != nil {
		return nil, fmt.Errorf("creating runner: name %q: use 1 to 64 letters, digits, '_' or '-'", o.Name)
	}
	if o.Dir == "" {
		o.Dir = filepath.Join(os.TempDir(), "agent-sdk-runner")
	}
	if o.Wait <= 0 {
		o.Wait = 20 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	c, err := client.New(o.URL, o.Token, &client.Options{HTTPClient: o.HTTPClient, UserAgent: "agent-sdk-runner"})
	if err != nil {
		return nil, fmt.Errorf("creating runner: %w", err)
	}
	return &Runner{opts: o, c: c, log: o.Logger}, nil
}

// Run claims and runs turns, one at a time, until ctx ends. A failing
// claim (the host is down) is retried after a pause.
func (r *Runner) Run(ctx context.Context) error {
	// A runner killed while a script ran left it running: end it.
	if n, err := agenttool.Reap(r.runsDir()); n > 0 || err != nil {
		r.log.Info("ended the agent tool runs a dead runner left running", "runs", n, "err", err)
	}
	if why := agenttool.Isolation(); why != "" {
		r.log.Warn(why)
	}
	pause := 200 * time.Millisecond
	for ctx.Err() == nil {
		claim, err := r.c.RunnerClaim(ctx, api.RunnerClaimRequest{Runner: r.opts.Name, WaitMs: int(r.opts.Wait.Milliseconds())})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			r.log.Warn("claiming a turn", "err", err)
			select {
			case <-time.After(pause):
			case <-ctx.Done():
			}
			pause = min(pause*2, 5*time.Second)
			continue
		}
		pause = 200 * time.Millisecond
		if claim == nil {
			continue
		}
		r.RunTurn(ctx, claim)
	}
	return nil
}

// runsDir is where the runner records the agent tool runs it has running.
func (r *Runner) runsDir() string { return filepath.Join(r.opts.Dir, "agent-tool-runs") }

// RunTurn runs one claimed turn to the end of the claim: completed,
// failed, parked for approval, or lost (the host took it back).
func (r *Runner) RunTurn(ctx context.Context, claim *api.RunnerClaim) {
	log := r.log.With("session", claim.SessionID, "turn", claim.TurnID)
	log.Info("running a cloud turn")
	t := &turn{r: r, claim: claim, log: log}
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	t.cancel = cancel
	stop := t.keepAlive(tctx)
	defer stop()
	steps, err := t.run(tctx)
	stop()
	if lost := context.Cause(tctx); errors.Is(lost, errLost) {
		log.Warn("the host took the turn back", "err", lost)
		return
	}
	rep := api.RunnerReport{Token: claim.Token, Steps: &steps}
	switch {
	case errors.Is(err, turnloop.ErrParked):
		rep.End = api.RunnerEndParked
	case err != nil:
		rep.End, rep.Reason = api.RunnerEndFailed, err.Error()
		if me, ok := errors.AsType[*model.Error](err); ok {
			rep.Code = api.FailureCode(me.Reason)
		} else if errors.Is(err, turnloop.ErrStepLimit) {
			rep.Code = api.FailureStepLimit
		} else if errors.Is(err, api.ErrOverBudget) {
			rep.Code = api.FailureBudgetExceeded
		} else if _, ok := errors.AsType[*harnessturn.Failure](err); ok {
			rep.Code = api.FailureHarness
		}
	default:
		rep.End = api.RunnerEndCompleted
	}
	if err := t.report(context.WithoutCancel(ctx), rep); err != nil {
		log.Warn("ending the turn's claim", "err", err)
		return
	}
	log.Info("ended a cloud turn's claim", "end", rep.End, "steps", steps)
}

// errLost cancels a turn whose claim the host no longer honours.
var errLost = errors.New("lost the turn's lease")

// turn is one claimed turn.
type turn struct {
	r      *Runner
	claim  *api.RunnerClaim
	log    *slog.Logger
	cancel context.CancelCauseFunc

	mu     sync.Mutex // serialises reports: the stream's order is theirs
	tools  *tool.Set  // the agent tools
	server map[string]bool
	ws     string
	mcp    *mcp.ClientSession
	// running are the approved harness calls its harness runs.
	running callSet
}

// run prepares the workspace, the model and the tools, and runs the loop.
func (t *turn) run(ctx context.Context) (int, error) {
	c := t.claim
	if c.Harness != nil {
		return t.runHarness(ctx)
	}
	if err := t.prepare(); err != nil {
		return 0, err
	}
	p, err := model.Open(c.Model)
	if err != nil {
		return 0, fmt.Errorf("opening the model on the runner: %w", err)
	}
	if c.MCPURL != "" && len(t.server) > 0 {
		s, err := t.connect(ctx)
		if err != nil {
			return 0, fmt.Errorf("connecting to the host's MCP endpoint %s: %w", c.MCPURL, err)
		}
		t.mcp = s
		defer s.Close()
	}
	hist := turnloop.NewHistory()
	for _, e := range c.Events {
		hist.Add(e)
	}
	specs := make([]model.Tool, 0, len(c.Tools))
	for _, rt := range c.Tools {
		specs = append(specs, model.Tool{Name: rt.Name, Description: rt.Description, InputSchema: rt.InputSchema})
	}
	// The usage is reported unpriced: the host prices it with its table.
	cfg := turnloop.Config{Model: p, System: c.System, Tools: specs, MaxSteps: max(c.MaxSteps, 1), MaxTokens: c.MaxTokens,
		ModelTimeout: time.Duration(c.ModelTimeoutMs) * time.Millisecond, ToolConcurrency: c.ToolConcurrency, Retries: max(c.ModelRetries, 0), Logger: t.log,
		Provider: c.Model.Provider, ModelName: c.Model.Name, CacheKey: c.SessionID}
	if cc := c.Context; cc != nil {
		cfg.Context = turnloop.ContextConfig{Window: cc.Window, Threshold: cc.Threshold, KeepTurns: cc.KeepTurns, ClearBytes: cc.ClearBytes,
			Prompt: cc.Prompt, SummaryTokens: cc.SummaryTokens}
	}
	if cfg.ModelTimeout <= 0 {
		cfg.ModelTimeout = 5 * time.Minute
	}
	return turnloop.Run(ctx, cfg, t, hist)
}

// prepare makes the session's workspace with the agent tools in it
// (.agent-serve/tools/<name>, and their catalog in AGENTS.md).
func (t *turn) prepare() error {
	c := t.claim
	if err := tool.CheckName(strings.TrimPrefix(c.SessionID, "sess_")); err != nil || !strings.HasPrefix(c.SessionID, "sess_") {
		return fmt.Errorf("the claim's session id %q is not one the host makes", c.SessionID)
	}
	var agents []*tool.Tool
	t.server = map[string]bool{}
	for _, rt := range c.Tools {
		switch rt.Execution {
		case string(tool.Agent):
			var schema tool.Schema
			if len(rt.InputSchema) > 0 {
				schema = tool.RawSchema(string(rt.InputSchema))
			}
			at, err := tool.NewScript(rt.Name, tool.Config{Description: rt.Description, InputSchema: schema, Timeout: time.Duration(rt.TimeoutMs) * time.Millisecond}, rt.Script)
			if err != nil {
				return fmt.Errorf("the claim's agent tool: %w", err)
			}
			agents = append(agents, at)
		case string(tool.Server):
			t.server[rt.Name] = true
		default:
			return fmt.Errorf("the claim's tool %s: execution %q", rt.Name, rt.Execution)
		}
	}
	set, err := tool.NewSet(agents...)
	if err != nil {
		return fmt.Errorf("the claim's agent tools: %w", err)
	}
	t.tools = set
	t.ws = filepath.Join(t.r.opts.Dir, "sessions", c.SessionID, "workspace")
	if err := os.MkdirAll(t.ws, 0o700); err != nil {
		return fmt.Errorf("creating the workspace: %w", err)
	}
	return agenttool.Materialize(t.ws, set)
}

// connect opens an MCP session with the host's endpoint, as the turn.
func (t *turn) connect(ctx context.Context) (*mcp.ClientSession, error) {
	hc := &http.Client{Transport: runnerTransport{token: t.claim.RunnerToken, base: t.r.opts.HTTPClient.Transport}}
	c := mcp.NewClient(&mcp.Implementation{Name: "agent-sdk-runner", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: t.claim.MCPURL, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
}

// Admit asks the host whether the next model call is within the usage
// limits: budget_exceeded ends the turn (the host's error, classified as
// such in the report); Parked, the turn waits for a person to raise a
// limit, and the claim ends parked. A host without the route (older) lets
// every call through.
func (t *turn) Admit(ctx context.Context, req *model.Request) (func(), error) {
	ans, err := t.r.c.RunnerAdmit(ctx, t.claim.SessionID, t.claim.TurnID, api.RunnerAdmit{
		Token: t.claim.Token, InputBytes: turnloop.RequestBytes(req), MaxTokens: model.MaxTokensFor(req, model.Config{MaxTokens: t.claim.MaxTokens}),
	})
	if apiErr, ok := errors.AsType[*api.Error](err); ok && apiErr.Status() == http.StatusNotFound && apiErr.Code != api.CodeSessionNotFound {
		return func() {}, nil
	}
	switch {
	case err != nil:
		return nil, err
	case ans.Parked:
		return nil, turnloop.ErrParked
	}
	return func() {}, nil
}

// Emit reports payloads to the host, in order. Text deltas come batched
// from the loop (turnloop.DeltaBatch), as on the host.
func (t *turn) Emit(ctx context.Context, payloads ...api.Payload) error {
	evs := make([]api.Event, len(payloads))
	for i, p := range payloads {
		evs[i] = api.NewEvent(p)
	}
	return t.report(ctx, api.RunnerReport{Token: t.claim.Token, Events: evs})
}

// report sends a report; lease_lost cancels the turn.
func (t *turn) report(ctx context.Context, rep api.RunnerReport) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	err := t.r.c.RunnerReport(ctx, t.claim.SessionID, t.claim.TurnID, rep)
	if err != nil && errors.Is(err, &api.Error{Code: api.CodeLeaseLost}) {
		t.cancel(fmt.Errorf("%w: %v", errLost, err))
	}
	return err
}

// keepAlive renews the lease every third of it until stopped.
func (t *turn) keepAlive(ctx context.Context) (stop func()) {
	every := max(time.Duration(t.claim.LeaseMs)*time.Millisecond/3, 50*time.Millisecond)
	done := make(chan struct{})
	var once sync.Once
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := t.report(ctx, api.RunnerReport{Token: t.claim.Token, Running: t.running.list()}); err != nil && ctx.Err() == nil {
					t.log.Warn("renewing the turn's lease", "err", err)
				}
			}
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}

// Execute runs one of the model's calls: an agent tool here, a server
// tool over MCP.
func (t *turn) Execute(ctx context.Context, callID string, c model.ToolCall) (tool.Output, bool) {
	if at, ok := t.tools.Lookup(c.Name); ok {
		in, err := at.Validate(c.Input)
		if err != nil {
			return tool.ErrorOutput(err.Error()), false
		}
		// Its stderr lines are live output, reported to the host as they
		// come (coalesced), ahead of its result.
		rep := progress.New(callID, at.Name(), func(p ...api.Payload) {
			if err := t.Emit(ctx, p...); err != nil {
				t.log.Warn("reporting a call's output", "call", callID, "err", err)
			}
		})
		out := agenttool.Run(ctx, at, in, agenttool.RunOptions{
			Workspace: t.ws, CallID: callID, SessionID: t.claim.SessionID, Stderr: rep.Output,
			Records: t.r.runsDir(), Private: []string{t.r.opts.Dir},
		})
		rep.Close()
		return out, false
	}
	if !t.server[c.Name] || t.mcp == nil {
		return tool.ErrorOutput((&tool.UnknownToolError{Name: c.Name, Available: t.names()}).Error()), false
	}
	var args map[string]any
	if err := json.Unmarshal(c.Input, &args); err != nil || args == nil {
		return tool.ErrorOutput("invalid input for tool " + c.Name + ": the input must be a JSON object"), false
	}
	res, err := t.mcp.CallTool(withCall(ctx, callID, c.ID), &mcp.CallToolParams{Name: c.Name, Arguments: json.RawMessage(c.Input)})
	if err != nil {
		return tool.ErrorOutput(fmt.Sprintf("calling %s on the host: %v", c.Name, err)), false
	}
	return fromMCP(res)
}

// names lists the tools the turn has.
func (t *turn) names() []string {
	var out []string
	for _, rt := range t.claim.Tools {
		out = append(out, rt.Name)
	}
	return out
}

// fromMCP turns the host's MCP answer back into the call's output: a
// parked call (structured content saying it awaits approval) waits, any
// other is its result, JSON as JSON and text as a string.
func fromMCP(res *mcp.CallToolResult) (tool.Output, bool) {
	if res.IsError && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		var p api.CallPending
		if json.Unmarshal(b, &p) == nil && p.Status == api.CallAwaitingApproval {
			return tool.Output{}, true
		}
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	result := json.RawMessage(text.String())
	if !json.Valid(result) {
		result, _ = json.Marshal(text.String())
	}
	return tool.Output{Result: result, IsError: res.IsError}, false
}

type callKey struct{}

type callIDs struct{ call, model string }

// withCall carries a call's ids to the request that makes it.
func withCall(ctx context.Context, callID, modelCallID string) context.Context {
	return context.WithValue(ctx, callKey{}, callIDs{callID, modelCallID})
}

// runnerTransport sends the runner token, and a call's ids, with every
// MCP request.
type runnerTransport struct {
	token string
	base  http.RoundTripper
}

func (rt runnerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+rt.token)
	if ids, ok := r.Context().Value(callKey{}).(callIDs); ok {
		r.Header.Set("X-Agent-Call-Id", ids.call)
		r.Header.Set("X-Agent-Model-Call-Id", ids.model)
	}
	base := rt.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

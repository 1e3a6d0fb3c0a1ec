package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/progress"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// Cloud turns. A cloud session's model turn does not run here: it is
// parked at once, ready for a runner, which claims it (taking its lease,
// as a host takes a local turn's), runs the model loop in its own
// workspace with the agent tools the claim carries (internal/turnloop, as
// the host does), calls the server tools over the MCP endpoint with a
// token scoped to the session (CallInTurn), and reports the turn's events
// (Report), which renews the lease. Everything a local turn has holds: the
// events land on the session's stream, fenced by the lease; a call that
// needs approval parks the turn, which goes on (on whichever runner claims
// it then) once the decisions are carried out here; a runner that dies
// stops renewing, and the host's sweep closes the turn as interrupted.

// Runners is the host's service for the runners of cloud turns. Get it
// with [Host.Runners].
type Runners struct{ h *Host }

// Runners returns the host's runner service.
func (h *Host) Runners() Runners { return Runners{h} }

// sessionMode checks a new session's mode, defaulting it.
func (h *Host) sessionMode(m api.Mode) (api.Mode, error) {
	if m == "" {
		m = h.opts.Cloud.DefaultMode
	}
	switch m {
	case "", api.ModeLocal:
		return api.ModeLocal, nil
	case api.ModeCloud:
		return api.ModeCloud, nil
	}
	return "", api.Errorf(api.CodeInvalidMode, "mode %q: want local or cloud", m)
}

// claimPoll is how often a waiting claim looks for a turn to run again
// unless this host wakes it first (a turn became ready here); the poll is
// what finds a turn another host made ready.
const claimPoll = time.Second

// cloudReady wakes the claims waiting on this host.
type cloudReady struct {
	mu sync.Mutex
	ch chan struct{} // closed and replaced by wake
}

// wait returns a channel closed at the next wake.
func (c *cloudReady) wait() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
}

// wake wakes every waiting claim.
func (c *cloudReady) wake() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
}

// readyForRunner parks a new cloud turn for a runner to claim, and wakes
// the claims waiting here.
func (h *Host) readyForRunner(ctx context.Context, hold store.Hold) {
	if err := h.log.ParkTurn(context.WithoutCancel(ctx), hold.Fence); err != nil {
		h.logger.Error("parking a cloud turn for a runner", "session", hold.SessionID, "turn", hold.TurnID, "err", err)
		return
	}
	h.cloudReady.wake()
}

// Claim waits up to wait for a cloud turn that is ready to run — new, or
// parked with every call answered — and takes its lease for runner. It
// returns nil when there was none in time.
func (r Runners) Claim(ctx context.Context, runner string, wait time.Duration) (*api.RunnerClaim, error) {
	if err := tool.CheckName(runner); err != nil {
		return nil, api.Errorf(api.CodeBadRequest, "runner name %q: use 1 to 64 letters, digits, '_' or '-'", runner)
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		woken := r.h.cloudReady.wait() // before looking, so that no wake is missed
		c, err := r.claimOnce(ctx, runner)
		if c != nil || err != nil {
			return c, err
		}
		poll := time.NewTimer(claimPoll)
		select {
		case <-ctx.Done():
			poll.Stop()
			return nil, nil
		case <-r.h.ctx.Done():
			poll.Stop()
			return nil, nil
		case <-deadline.C:
			poll.Stop()
			return nil, nil
		case <-woken:
		case <-poll.C:
		}
		poll.Stop()
	}
}

// claimOnce claims a ready cloud turn, if there is one.
func (r Runners) claimOnce(ctx context.Context, runner string) (*api.RunnerClaim, error) {
	h := r.h
	parked, err := h.log.ParkedTurns(ctx)
	if err != nil {
		return nil, storeError(err, nil)
	}
	for _, t := range parked {
		if t.Kind != api.TurnModel {
			continue
		}
		sess, err := h.log.Session(ctx, t.SessionID)
		if err != nil || sess.Mode != api.ModeCloud {
			continue
		}
		if ready, err := h.allAnswered(ctx, t.SessionID, t.ID); err != nil || !ready {
			continue
		}
		lease := store.Lease{Holder: "runner:" + runner, TTL: h.opts.LeaseTTL}
		hold, err := h.log.ResumeTurn(ctx, t.SessionID, t.ID, lease)
		if err != nil {
			continue // another runner (or host) took it
		}
		c, err := r.claim(ctx, sess, hold)
		if err != nil {
			// Give it back for another try.
			if perr := h.log.ParkTurn(context.WithoutCancel(ctx), hold.Fence); perr != nil {
				h.logger.Warn("giving back a cloud turn", "session", sess.ID, "turn", t.ID, "err", perr)
			}
			return nil, err
		}
		h.logger.Info("a runner claimed a cloud turn", "runner", runner, "session", sess.ID, "turn", t.ID)
		return c, nil
	}
	return nil, nil
}

// claim is what a runner needs to run a claimed turn.
func (r Runners) claim(ctx context.Context, sess api.Session, hold store.Hold) (*api.RunnerClaim, error) {
	h := r.h
	from, err := h.contextStart(ctx, sess)
	if err != nil {
		return nil, storeError(err, nil)
	}
	var evs []api.Event
	if err := eachEventAfter(ctx, h.log, sess.ID, from, func(e api.Event) { evs = append(evs, e) }); err != nil {
		return nil, storeError(err, nil)
	}
	cloud := h.opts.Cloud
	cloud.Model.APIKey = ""
	c := &api.RunnerClaim{OK: true, SessionID: sess.ID, TurnID: hold.TurnID, Token: hold.Token, LeaseMs: h.opts.LeaseTTL.Milliseconds(),
		MCPURL: cloud.ToolsURL, Model: cloud.Model, System: h.opts.System, MaxSteps: h.opts.MaxSteps, MaxTokens: h.opts.MaxTokens,
		ModelTimeoutMs: h.opts.ModelTimeout.Milliseconds(), ToolConcurrency: h.opts.ToolConcurrency, ModelRetries: h.opts.ModelRetries, Events: evs,
		Context: h.runnerContext(), Harness: h.runnerHarness(sess)}
	for _, t := range h.tools.Tools() {
		rt := api.RunnerTool{Name: t.Name(), Description: t.Description(), InputSchema: t.InputSchema(), Execution: string(t.Execution())}
		switch {
		case t.Execution() == tool.Agent:
			rt.Script, rt.TimeoutMs = t.Script(), t.Timeout().Milliseconds()
		case cloud.ToolsURL == "":
			continue // the runner cannot reach it
		}
		c.Tools = append(c.Tools, rt)
	}
	if cloud.ToolsURL == "" {
		c.System = withoutServerTools(c.System, h.tools)
	}
	return c, nil
}

// withoutServerTools tells the model of a cloud turn that the server
// tools are out of its reach.
func withoutServerTools(system string, set *tool.Set) string {
	var names []string
	for _, t := range set.Tools() {
		if t.Execution() == tool.Server {
			names = append(names, t.Name())
		}
	}
	if len(names) == 0 {
		return system
	}
	note := fmt.Sprintf("This turn runs remotely and can use only the tools it is offered; the host's server tools (%s) are not reachable from here.", joinNames(names))
	if system == "" {
		return note
	}
	return system + "\n\n" + note
}

func joinNames(names []string) string {
	b, _ := json.Marshal(names)
	return string(b[1 : len(b)-1])
}

// runnerKinds are the events a runner may write.
var runnerKinds = map[api.Kind]func(api.Event) error{
	api.KindMessageDelta: func(e api.Event) error { _, err := api.Decode[api.MessageDelta](e); return err },
	api.KindMessage: func(e api.Event) error {
		m, err := api.Decode[api.Message](e)
		if err == nil && m.Role != api.RoleAssistant {
			err = errors.New("a runner writes assistant messages only")
		}
		return err
	},
	api.KindActionsRequested: func(e api.Event) error { _, err := api.Decode[api.ActionsRequested](e); return err },
	api.KindActionProgress:   func(e api.Event) error { _, err := api.Decode[api.ActionProgress](e); return err },
	api.KindActionOutput: func(e api.Event) error {
		o, err := api.Decode[api.ActionOutput](e)
		if err == nil && len(o.Text) > progress.OutputLimit {
			err = fmt.Errorf("output of %d bytes; a record holds at most %d", len(o.Text), progress.OutputLimit)
		}
		return err
	},
	api.KindActionResult: func(e api.Event) error {
		r, err := api.Decode[api.ActionResult](e)
		if err == nil && (r.Direct || r.CallID == "") {
			err = errors.New("a model's call result needs its callId and is not direct")
		}
		return err
	},
	api.KindModelUsage: func(e api.Event) error {
		u, err := api.Decode[api.ModelUsage](e)
		for _, n := range []int64{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, u.DurationMs} {
			if err == nil && (n < 0 || n > maxReportedTokens) {
				err = fmt.Errorf("a count of %d: want 0 to %d", n, maxReportedTokens)
			}
		}
		return err
	},
	api.KindModelRetry:     func(e api.Event) error { _, err := api.Decode[api.ModelRetry](e); return err },
	api.KindPlan:           func(e api.Event) error { _, err := api.Decode[api.Plan](e); return err },
	api.KindHarnessSession: func(e api.Event) error { _, err := api.Decode[api.HarnessSession](e); return err },
	api.KindReasoningDelta: func(e api.Event) error { _, err := api.Decode[api.ReasoningDelta](e); return err },
	api.KindReasoning:      func(e api.Event) error { _, err := api.Decode[api.Reasoning](e); return err },
	api.KindContextCleared: func(e api.Event) error {
		c, err := api.Decode[api.ContextCleared](e)
		if err == nil && (c.ThroughSeq <= 0 || c.Results < 0) {
			err = errors.New("a clearing needs a throughSeq past 0")
		}
		return err
	},
	api.KindContextCompacted: func(e api.Event) error {
		c, err := api.Decode[api.ContextCompacted](e)
		if err == nil && (c.ThroughSeq <= 0 || c.Summary == "" || len(c.Summary) > maxSummaryBytes) {
			err = fmt.Errorf("a compaction needs a throughSeq past 0 and a summary of 1 to %d bytes", maxSummaryBytes)
		}
		return err
	},
}

// maxRunningCalls bounds a report's running harness calls.
const maxRunningCalls = 256

// maxSummaryBytes bounds a runner's summary of a conversation.
const maxSummaryBytes = 256 << 10

// maxReportedTokens bounds a runner's figures of one model call.
const maxReportedTokens = 1 << 40

// failureCodes are the codes a runner may end a turn with: a model call's
// failures, the step limit, a usage limit (Admit's budget_exceeded) and
// a harness's own failure;
// another is recorded as provider_error.
var failureCodes = map[api.FailureCode]bool{
	api.FailureRateLimited: true, api.FailureOverloaded: true, api.FailureContextLength: true, api.FailureAuthFailed: true,
	api.FailureInvalidRequest: true, api.FailureTimeout: true, api.FailureProviderError: true, api.FailureStepLimit: true,
	api.FailureBudgetExceeded: true, api.FailureHarness: true,
}

// Report takes a runner's report on a turn it claimed: its new events
// (the model's messages and calls, agent tools' results, progress and
// output),
// appended under the claim's fence (which renews the lease), and, with
// rep.End, the end of its claim: the turn completed or failed, or parked
// until its calls waiting for approval are decided. The error is an
// *api.Error: lease_lost when the runner no longer holds the turn,
// invalid_report for an event a runner may not write — among them the
// result of a call its turn did not request (in an actions.requested
// event, of the report or stored), a second result, and the result of a
// call that needs approval, which the host records with the decision.
func (r Runners) Report(ctx context.Context, sessionID, turnID string, rep api.RunnerReport) error {
	h := r.h
	ctx = context.WithoutCancel(ctx)
	f := store.Fence{SessionID: sessionID, TurnID: turnID, Token: rep.Token}
	switch rep.End {
	case "", api.RunnerEndParked, api.RunnerEndCompleted, api.RunnerEndFailed:
	default:
		return api.Errorf(api.CodeInvalidReport, "end %q: want completed, failed or parked", rep.End)
	}
	if rep.Token <= 0 {
		// The store reads a zero token as "no fence": never a runner's.
		return api.Errorf(api.CodeInvalidReport, "token %d: send the claim's token", rep.Token)
	}
	if len(rep.Running) > maxRunningCalls {
		return api.Errorf(api.CodeInvalidReport, "running: %d calls; a turn's harness runs at most %d approved calls at once", len(rep.Running), maxRunningCalls)
	}
	if len(rep.Reason) > 4<<10 {
		rep.Reason = progress.TruncateUTF8(rep.Reason, 4<<10) + "…"
	}
	evs := make([]api.Event, 0, len(rep.Events))
	for i, e := range rep.Events {
		check, ok := runnerKinds[e.Kind]
		if !ok {
			return api.Errorf(api.CodeInvalidReport, "event %d: a runner may not write %q", i, e.Kind)
		}
		if err := check(e); err != nil {
			return api.Errorf(api.CodeInvalidReport, "event %d (%s): %v", i, e.Kind, err)
		}
		if e.Kind == api.KindModelUsage {
			// Priced here, with the host's table: the runner's figure, if
			// any, is not the one that counts.
			u, _ := api.Decode[api.ModelUsage](e)
			h.priceUsage(&u)
			e = api.NewEvent(u)
		}
		evs = append(evs, api.Event{Kind: e.Kind, Data: e.Data, TurnID: turnID})
	}
	evs, recordHarness := h.harnessResults(ctx, sessionID, turnID, evs)
	if err := h.checkResults(ctx, sessionID, turnID, evs); err != nil {
		return err
	}
	lost := func(err error) error {
		if errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrNotRunning) {
			return api.Errorf(api.CodeLeaseLost, "turn %s of session %s: %s", turnID, sessionID, api.CodeLeaseLost.Description())
		}
		return storeError(err, nil)
	}
	if len(evs) > 0 {
		if _, err := h.log.AppendTurn(ctx, f, evs...); err != nil {
			return lost(err)
		}
		if slices.ContainsFunc(evs, func(e api.Event) bool { return e.Kind == api.KindModelUsage }) {
			// The call is counted now: what Admit held back for it goes.
			if err := h.log.ReleaseUsage(ctx, cloudReservation(turnID)); err != nil {
				h.logger.Error("releasing a cloud turn's usage reservation", "session", sessionID, "turn", turnID, "err", err)
			}
		}
	}
	if err := recordHarness(); err != nil {
		return err
	}
	for _, id := range rep.Running {
		// The approved harness calls its harness runs: still its.
		if err := h.log.RenewExecutor(ctx, id, h.runnerExecutor(turnID)); err != nil {
			h.logger.Warn("renewing a runner's harness call", "session", sessionID, "call", id, "err", err)
		}
	}
	lease := store.Lease{Holder: "runner", TTL: h.opts.LeaseTTL}
	if rep.End != "" && h.opts.Limits.set() {
		// A call that failed reported no usage: its reservation goes too.
		if err := h.log.ReleaseUsage(ctx, cloudReservation(turnID)); err != nil {
			h.logger.Error("releasing a cloud turn's usage reservation", "session", sessionID, "turn", turnID, "err", err)
		}
	}
	switch rep.End {
	case "":
		if err := h.log.RenewLease(ctx, f, lease); err != nil {
			return lost(err)
		}
	case api.RunnerEndParked:
		if err := h.log.ParkTurn(ctx, f); err != nil {
			return lost(err)
		}
		h.drive(ctx, sessionID, turnID) // decisions may have come meanwhile
	case api.RunnerEndCompleted, api.RunnerEndFailed:
		var end api.Payload = api.TurnCompleted{Steps: rep.Steps}
		status := api.TurnStatusCompleted
		if rep.End == api.RunnerEndFailed {
			reason := rep.Reason
			if reason == "" {
				reason = "the runner failed"
			}
			code := rep.Code
			if !failureCodes[code] {
				code = api.FailureProviderError
			}
			end, status = api.TurnFailed{Code: code, Reason: reason, Steps: rep.Steps}, api.TurnStatusFailed
		}
		end = h.withTurnUsage(ctx, f, end)
		_, err := h.log.EndTurn(ctx, store.EndTurnParams{SessionID: sessionID, TurnID: turnID, Token: rep.Token, Status: status,
			Reason: rep.Reason, Events: events(turnID, end)})
		if err != nil {
			return lost(err)
		}
	default:
		return api.Errorf(api.CodeInvalidReport, "end %q: want completed, failed or parked", rep.End)
	}
	return nil
}

// Holds reports whether a runner's claim of a turn (token, its fence)
// still holds it: the turn runs, under that claim. A runner token is good
// only while it does. Like a call in the turn, it renews the claim's lease.
func (r Runners) Holds(ctx context.Context, sessionID, turnID string, token int64) bool {
	if token <= 0 {
		return false
	}
	f := store.Fence{SessionID: sessionID, TurnID: turnID, Token: token}
	return r.h.log.RenewLease(ctx, f, store.Lease{Holder: "runner", TTL: r.h.opts.LeaseTTL}) == nil
}

// InTurn binds a call to a cloud turn: a runner's call of a server tool,
// made over MCP with the session's runner token.
type InTurn struct {
	SessionID, TurnID string
	// Token is the runner's claim (its fence token): the call is refused
	// once another claim has taken the turn. Zero skips the check.
	Token int64
	// Progress is CallOptions.Progress.
	Progress func(api.Payload)
	// CallID and ModelCallID are the call's ids as the runner announced
	// it in actions.requested.
	CallID, ModelCallID string
	// Harness says the call comes from the harness of a harness turn (a
	// harness token): the host announces and records it, and a call that
	// needs approval waits for the decision. ModelCallID is then the
	// harness's id of the call, where it sends one. With a Token, the
	// harness is a runner's; without, this host's.
	Harness bool
}

// callIDPattern is what a host-made call id looks like.
var callIDPattern = regexp.MustCompile(`^tool_[A-Za-z0-9_-]{1,64}_[a-z0-9]{6,32}$`)

// CallInTurn calls a server tool for a runner, in a cloud turn the runner
// holds: validated, gated and run as the model's call would be in a local
// turn. The runner records the result on the stream (it has the call's
// place in the turn); a call that needs approval is parked here, its
// request on the stream, and CallInTurn returns *ApprovalPendingError: the
// result comes with the decision, and the runner parks the turn.
func (h *Host) CallInTurn(ctx context.Context, name string, input any, in InTurn) (*api.Outcome, error) {
	start := time.Now()
	if in.Harness {
		sess, err := h.Sessions().Get(ctx, in.SessionID)
		if err != nil {
			return nil, err
		}
		switch {
		case in.Token != 0:
			// A runner's harness: its claim must still hold the turn.
			if !h.Runners().Holds(ctx, in.SessionID, in.TurnID, in.Token) {
				return nil, api.Errorf(api.CodeNoRunningTurn, "harness turn %s of session %s is not running under this claim", in.TurnID, in.SessionID)
			}
		case !h.harnessTurns.runs(in.SessionID, in.TurnID):
			return nil, api.Errorf(api.CodeNoRunningTurn, "harness turn %s of session %s is not running on this host", in.TurnID, in.SessionID)
		}
		t, tin, err := h.validate(name, input)
		if err != nil {
			h.harnessRefusedCall(ctx, name, input, sess.ID, in, err)
			return nil, err
		}
		return h.harnessServerCall(ctx, t, tin, sess, in)
	}
	t, tin, err := h.validate(name, input)
	if err != nil {
		return nil, err
	}
	if in.CallID == "" {
		in.CallID = tool.NewCallID(name)
	} else if !callIDPattern.MatchString(in.CallID) {
		return nil, api.Errorf(api.CodeBadRequest, "call id %q is not one the host made (tool_<name>_<random>)", in.CallID)
	}
	sess, err := h.Sessions().Get(ctx, in.SessionID)
	if err != nil {
		return nil, err
	}
	turn, err := h.log.Turn(ctx, in.SessionID, in.TurnID)
	if err != nil || turn.Status != api.TurnStatusRunning || sess.RunningTurn != in.TurnID {
		return nil, api.Errorf(api.CodeNoRunningTurn, "turn %s of session %s is not running", in.TurnID, in.SessionID)
	}
	if in.Token != 0 {
		// The claim must still hold the turn; the call renews its lease.
		f := store.Fence{SessionID: in.SessionID, TurnID: in.TurnID, Token: in.Token}
		if err := h.log.RenewLease(ctx, f, store.Lease{Holder: "runner", TTL: h.opts.LeaseTTL}); err != nil {
			return nil, api.Errorf(api.CodeNoRunningTurn, "turn %s of session %s is not running under this claim: %v", in.TurnID, in.SessionID, err)
		}
	}
	if h.needsApproval(t, tin) {
		p := parkSpec{callID: in.CallID, sessionID: sess.ID, turnID: in.TurnID, modelCallID: in.ModelCallID, by: sess.Principal}
		if _, err := h.park(ctx, t, tin, p); err != nil {
			return nil, storeError(err, nil)
		}
		return nil, &ApprovalPendingError{CallID: in.CallID}
	}
	out := h.run(ctx, callSpec{id: in.CallID, modelCallID: in.ModelCallID, tool: t, in: tin, session: &sess, turnID: in.TurnID, observe: in.Progress})
	return outcomeOf(name, in.CallID, out, time.Since(start)), nil
}

package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// ApprovalTimeoutDefault is how long a parked call waits for a decision
// when neither the tool nor the host says otherwise.
const ApprovalTimeoutDefault = 24 * time.Hour

// Event kinds of approvals.
const (
	EventApprovalRequested = "action.approval_requested"
	EventApprovalResolved  = "action.approval_resolved"
)

// Errors of approvals, checked with errors.Is.
var (
	// ErrApprovalNotFound: no parked call has that id.
	ErrApprovalNotFound = errors.New("no call waiting for approval has that id")
	// ErrAlreadyResolved: someone decided first; the error is an
	// *AlreadyResolvedError carrying that decision.
	ErrAlreadyResolved = errors.New("already_resolved")
	// ErrApprovalExpired: the call expired before anyone decided.
	ErrApprovalExpired = errors.New("the approval expired")
)

// AlreadyResolvedError is returned to the second decision on a call.
type AlreadyResolvedError struct {
	Approval store.Approval // as the first decision left it
}

func (e *AlreadyResolvedError) Error() string {
	return fmt.Sprintf("already_resolved: call %s was %s by %s", e.Approval.CallID, e.Approval.Status, e.Approval.DecidedBy)
}

func (e *AlreadyResolvedError) Unwrap() error { return ErrAlreadyResolved }

// ApprovalPendingError is returned by CallTool when a gated call is still
// waiting for a decision after CallOptions.Wait: fetch its outcome later
// with CallOutcome.
type ApprovalPendingError struct {
	CallID   string
	Approval store.Approval
}

func (e *ApprovalPendingError) Error() string {
	return fmt.Sprintf("call %s is waiting for approval: approve it with agent-sdk approve %s, or deny it with agent-sdk deny %s --reason …", e.CallID, e.CallID, e.CallID)
}

// Decision is a person's answer to a parked call.
type Decision struct {
	Approved bool
	Reason   string
	// By names who decided (the approver's principal).
	By string
	// SessionID, if set, must be the call's session.
	SessionID string
}

// approvalTTL is how long a call of t stays pending.
func (h *Host) approvalTTL(t *tool.Tool) time.Duration {
	if d := t.ApprovalTimeout(); d > 0 {
		return d
	}
	return h.approvalTimeout
}

// park stores a gated call as pending and streams the request.
func (h *Host) park(ctx context.Context, t *tool.Tool, in *tool.Input, callID, sessionID, turnID, modelCallID, by string) (store.Approval, error) {
	a := store.Approval{
		CallID: callID, SessionID: sessionID, TurnID: turnID, ModelCallID: modelCallID, Tool: t.Name(),
		Input: in.JSON(), RequestedBy: by, ExpiresAt: time.Now().Add(h.approvalTTL(t)),
	}
	how := map[string]string{
		"cli":  fmt.Sprintf("agent-sdk approve %s   |   agent-sdk deny %s --reason …", callID, callID),
		"http": fmt.Sprintf(`POST /<slug>/v1/approvals/%s {"approved": true|false, "reason": "…"}`, callID),
	}
	if sessionID != "" {
		how["http"] = fmt.Sprintf(`POST /<slug>/v1/session/%s/approvals/%s {"approved": true|false, "reason": "…"}`, sessionID, callID)
	}
	evs, err := h.store.CreateApproval(context.WithoutCancel(ctx), a, store.Event{Kind: EventApprovalRequested, Data: data(map[string]any{
		"callId": callID, "modelCallId": modelCallID, "tool": t.Name(), "input": in.JSON(), "requestedBy": by,
		"expiresAt": a.ExpiresAt.UTC().Format(time.RFC3339), "howToAnswer": how,
	})})
	if err != nil {
		return store.Approval{}, err
	}
	h.hub.publish(sessionID, evs)
	return a, nil
}

// Resolve decides a parked call, exactly once. Approving runs the tool with
// the input stored when the call parked; denying gives the model (or the
// direct caller) a result saying who denied it and why. The decision and
// its principal are streamed as action.approval_resolved; the result
// follows as action.result, and a model turn waiting for it goes on.
func (h *Host) Resolve(ctx context.Context, callID string, d Decision) (store.Approval, error) {
	st, err := h.sessions()
	if err != nil {
		return store.Approval{}, err
	}
	if d.By == "" {
		d.By = "unknown"
	}
	if d.SessionID != "" {
		a, err := st.Approval(ctx, callID)
		if err != nil || a.SessionID != d.SessionID {
			return store.Approval{}, fmt.Errorf("%w: %s in session %s", ErrApprovalNotFound, callID, d.SessionID)
		}
	}
	a, err := st.ResolveApproval(ctx, callID, d.Approved, d.By, d.Reason, h.lease())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Approval{}, fmt.Errorf("%w: %s", ErrApprovalNotFound, callID)
	case errors.Is(err, store.ErrAlreadyResolved):
		return a, &AlreadyResolvedError{Approval: a}
	case errors.Is(err, store.ErrExpired):
		// Expire it now rather than wait for the sweep.
		h.expire(context.WithoutCancel(ctx))
		return a, ErrApprovalExpired
	case err != nil:
		return store.Approval{}, err
	}
	h.announceDecision(ctx, a)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.carryOut(context.WithoutCancel(ctx), a)
	}()
	return a, nil
}

func (h *Host) announceDecision(ctx context.Context, a store.Approval) {
	if a.SessionID == "" {
		return
	}
	at := time.Now().UTC()
	if a.DecidedAt != nil {
		at = *a.DecidedAt
	}
	if err := h.append(ctx, a.SessionID, a.TurnID, store.Event{Kind: EventApprovalResolved, Data: data(map[string]any{
		"callId": a.CallID, "tool": a.Tool, "status": a.Status, "by": a.DecidedBy, "reason": a.Reason, "at": at.Format(time.RFC3339Nano),
	})}); err != nil {
		h.logger.Error("recording a decision", "call", a.CallID, "err", err)
	}
}

// carryOut runs or refuses a decided call, records its outcome once, and
// lets a waiting turn go on.
func (h *Host) carryOut(ctx context.Context, a store.Approval) {
	start := time.Now()
	var out tool.Output
	switch a.Status {
	case store.ApprovalApproved:
		out = h.runApproved(ctx, a)
	case store.ApprovalDenied:
		msg := "denied by " + a.DecidedBy
		if a.Reason != "" {
			msg += ": " + a.Reason
		}
		out = tool.ErrorOutput(msg)
	case store.ApprovalExpired:
		out = tool.ErrorOutput(fmt.Sprintf("not run: nobody approved the call before it expired at %s", a.ExpiresAt.UTC().Format(time.RFC3339)))
	default:
		return
	}
	h.record(ctx, a, out, time.Since(start))
}

// record stores a decided call's outcome, once, on its stream and for
// CallOutcome, then resumes what waits for it.
func (h *Host) record(ctx context.Context, a store.Approval, out tool.Output, took time.Duration) {
	outcome := Outcome{ToolName: a.Tool, CallID: a.CallID, IsError: out.IsError, Result: out.Result, DurationMs: took.Milliseconds()}
	won, err := h.store.FinishApproval(ctx, a.CallID, data(outcome))
	if err != nil {
		h.logger.Error("recording a call's outcome", "call", a.CallID, "err", err)
		return
	}
	h.notify(a.CallID)
	if !won || a.SessionID == "" {
		return
	}
	if err := h.append(ctx, a.SessionID, a.TurnID, store.Event{Kind: EventActionResult, Data: data(actionResult{
		CallID: a.CallID, ModelCallID: a.ModelCallID, Tool: a.Tool, IsError: out.IsError, Result: out.Result,
		DurationMs: outcome.DurationMs, Direct: a.ModelCallID == "",
	})}); err != nil {
		h.logger.Error("recording a call's result", "call", a.CallID, "err", err)
	}
	h.maybeResume(ctx, a.SessionID, a.TurnID)
}

// runApproved runs an approved call with its stored input, holding it with
// an executor lease so that a host that dies mid-call is noticed.
func (h *Host) runApproved(ctx context.Context, a store.Approval) tool.Output {
	t, ok := h.tools.Lookup(a.Tool)
	if !ok {
		return tool.ErrorOutput(fmt.Sprintf("tool %s no longer exists on this host", a.Tool))
	}
	in, err := t.Validate(a.Input)
	if err != nil {
		return tool.ErrorOutput("the stored input no longer fits the tool: " + err.Error())
	}
	rctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	go func() {
		tick := time.NewTicker(h.leaseTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-tick.C:
				h.store.RenewExecutor(context.WithoutCancel(ctx), a.CallID, h.lease())
			}
		}
	}()
	if a.SessionID != "" {
		sess, err := h.store.Session(ctx, a.SessionID)
		if err != nil {
			return tool.ErrorOutput("reading the call's session: " + err.Error())
		}
		return h.run(rctx, sess, a.TurnID, t, in, a.CallID)
	}
	// A direct call outside any session: a scratch workspace, as CallTool's.
	ws := &scratch{root: h.stateRoot, id: a.CallID, tools: h.tools}
	defer ws.remove(h.logger)
	call := tool.NewCall(tool.CallInfo{ID: a.CallID, Tool: a.Tool, StateRoot: h.stateRoot, Logger: h.logger, Host: h.servicesFor("", ""), Sessions: h.sessionsFor(), Workspace: ws.open})
	sctx, end := h.telemetry.startTool(rctx, a.Tool, a.CallID, "")
	out, err := t.Run(sctx, call, in)
	if err != nil {
		out = tool.ErrorOutput(err.Error())
	}
	end(out)
	return out
}

// maybeResume lets a parked turn go on once every call it waits for has
// its result: a model turn runs again from its stored history; a direct
// call's turn ends.
func (h *Host) maybeResume(ctx context.Context, sessionID, turnID string) {
	turn, err := h.store.Turn(ctx, sessionID, turnID)
	if err != nil || turn.Status != store.TurnRunning {
		return
	}
	if done, err := h.allAnswered(ctx, sessionID, turnID); err != nil || !done {
		return
	}
	if h.ctx.Err() != nil {
		return // shutting down: the next host resumes it at start
	}
	if err := h.store.ResumeTurn(ctx, sessionID, turnID, h.lease()); err != nil {
		return // not parked (still running its other calls), or another host resumed it
	}
	if turn.Kind != "model" {
		ended, err := h.store.EndTurn(ctx, sessionID, turnID, store.TurnCompleted, "", store.Event{Kind: EventTurnCompleted, Data: data(map[string]string{})})
		if err == nil {
			h.hub.publish(sessionID, ended)
		}
		return
	}
	sess, err := h.store.Session(ctx, sessionID)
	if err != nil {
		return
	}
	tctx := h.track(sessionID, turnID)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.runTurn(tctx, sess, turnID)
	}()
}

// allAnswered reports whether every call the turn announced, and every call
// parked in it, has its result.
func (h *Host) allAnswered(ctx context.Context, sessionID, turnID string) (bool, error) {
	waiting := map[string]bool{}
	err := h.eachEvent(ctx, sessionID, func(e store.Event) {
		if e.TurnID != turnID {
			return
		}
		switch e.Kind {
		case EventActionsRequested:
			var a struct{ Actions []requestedAction }
			json.Unmarshal(e.Data, &a)
			for _, act := range a.Actions {
				waiting[act.CallID] = true
			}
		case EventApprovalRequested:
			var a struct {
				CallID string `json:"callId"`
			}
			json.Unmarshal(e.Data, &a)
			waiting[a.CallID] = true
		case EventActionResult:
			var r actionResult
			json.Unmarshal(e.Data, &r)
			delete(waiting, r.CallID)
		}
	})
	if err != nil {
		return false, err
	}
	return len(waiting) == 0, nil
}

// expire resolves the pending approvals past their expiry as expired.
func (h *Host) expire(ctx context.Context) error {
	expired, err := h.store.ExpireApprovals(ctx, time.Now())
	if err != nil {
		return err
	}
	for _, a := range expired {
		h.announceDecision(ctx, a)
		h.carryOut(ctx, a)
	}
	return nil
}

// orphans records the approved calls whose host died while running them:
// they are not run again.
func (h *Host) orphans(ctx context.Context) error {
	orphaned, err := h.store.OrphanedApprovals(ctx, time.Now())
	if err != nil {
		return err
	}
	for _, a := range orphaned {
		h.record(ctx, a, tool.ErrorOutput("interrupted by host restart; not retried"), 0)
	}
	return nil
}

// Approvals lists parked and decided calls with a status ("" for all).
func (h *Host) Approvals(ctx context.Context, status string, p store.Page) ([]store.Approval, string, error) {
	st, err := h.sessions()
	if err != nil {
		return nil, "", err
	}
	return st.ListApprovals(ctx, status, p)
}

// CallOutcome returns a gated call as it stands: pending, or decided with
// its outcome once known.
func (h *Host) CallOutcome(ctx context.Context, callID string) (store.Approval, error) {
	st, err := h.sessions()
	if err != nil {
		return store.Approval{}, err
	}
	a, err := st.Approval(ctx, callID)
	if errors.Is(err, store.ErrNotFound) {
		return store.Approval{}, fmt.Errorf("%w: %s", ErrApprovalNotFound, callID)
	}
	return a, err
}

// waitOutcome waits up to d for a parked call's outcome, which may be
// recorded by this host or by another sharing the store.
func (h *Host) waitOutcome(ctx context.Context, callID string, d time.Duration) (store.Approval, bool) {
	ch := h.waiter(callID)
	defer h.unwait(callID, ch)
	timer := time.NewTimer(d)
	defer timer.Stop()
	poll := time.NewTicker(250 * time.Millisecond)
	defer poll.Stop()
	for {
		a, err := h.store.Approval(ctx, callID)
		if err == nil && a.Outcome != nil {
			return a, true
		}
		select {
		case <-ch:
		case <-poll.C:
		case <-timer.C:
			return a, false
		case <-ctx.Done():
			return a, false
		}
	}
}

func (h *Host) waiter(callID string) chan struct{} {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiters == nil {
		h.waiters = map[string][]chan struct{}{}
	}
	h.waiters[callID] = append(h.waiters[callID], ch)
	return ch
}

func (h *Host) unwait(callID string, ch chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	list := h.waiters[callID]
	for i, c := range list {
		if c == ch {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(h.waiters, callID)
	} else {
		h.waiters[callID] = list
	}
}

func (h *Host) notify(callID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ch := range h.waiters[callID] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

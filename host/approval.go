package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// Approvals is a host's approval service: the calls parked until a person
// decides, and the decisions. Get it with [Host.Approvals].
type Approvals struct{ h *Host }

// Approvals returns the host's approval service.
func (h *Host) Approvals() Approvals { return Approvals{h} }

// Decision is a person's answer to a parked call.
type Decision struct {
	Approved bool
	Reason   string
	// By names who decided (the approver's principal), as recorded.
	By string
	// SessionID, if set, must be the call's session.
	SessionID string
	// Via says how the decision came, for the audit log: "http", "cli",
	// "playground", a channel's id; "" records "host".
	Via string
	// UserAgent is the HTTP client's, if it came over HTTP.
	UserAgent string

	// Principal is the authenticated decider: whom a tool's approver
	// policy checks (four-eyes) and a quorum counts once. "" is By.
	Principal string
	// Roles are the decider's roles, for a policy's Roles; Admin says
	// they grant admin (which may always decide).
	Roles []string
	Admin bool
	// Email is the decider's (an OIDC token's), recorded in the audit log.
	Email string
	// Input, with an approval, is the input the approver wants run
	// instead of the one asked for (see [Approvals.Resolve]).
	Input json.RawMessage
}

// ChannelUser is the principal and roles a channel's user decides as
// ([Options.ChannelUsers]).
type ChannelUser struct {
	// Principal is the principal the user is (an API key's "key:<id>",
	// or a name of the operator's choosing): one person through Slack and
	// through a key counts once in a quorum, and four-eyes knows them.
	Principal string
	Roles     []string
}

// parkSpec is a gated call to park.
type parkSpec struct {
	callID      string
	sessionID   string // "" for a direct call outside any session
	turnID      string
	modelCallID string // "" for a direct call
	by          string // who asks
}

// approvalTTL is how long a call of t stays pending.
func (h *Host) approvalTTL(t *tool.Tool) time.Duration {
	if d := t.ApprovalTimeout(); d > 0 {
		return d
	}
	return h.opts.ApprovalTimeout
}

// park stores a gated call as pending and streams the request.
func (h *Host) park(ctx context.Context, t *tool.Tool, in *tool.Input, p parkSpec) (api.Approval, error) {
	if err := h.quota(ctx, "parked calls", h.opts.MaxPending, p.by, h.log.CountPending); err != nil {
		return api.Approval{}, err
	}
	a := api.Approval{
		CallID: p.callID, SessionID: p.sessionID, TurnID: p.turnID, ModelCallID: p.modelCallID, Tool: t.Name(),
		Input: in.JSON(), RequestedBy: p.by, ExpiresAt: time.Now().Add(h.approvalTTL(t)), Status: api.ApprovalPending,
	}
	how := api.HowToAnswer{
		CLI:  fmt.Sprintf("agent-sdk approve %s   |   agent-sdk deny %s --reason …", p.callID, p.callID),
		HTTP: fmt.Sprintf(`POST /<slug>/v1/approvals/%s {"approved": true|false, "reason": "…"}`, p.callID),
	}
	if p.sessionID != "" {
		how.HTTP = fmt.Sprintf(`POST /<slug>/v1/session/%s/approvals/%s {"approved": true|false, "reason": "…"}`, p.sessionID, p.callID)
	}
	var evs []api.Event
	if p.sessionID != "" {
		evs = events(p.turnID, api.ApprovalRequested{
			CallID: p.callID, ModelCallID: p.modelCallID, Tool: t.Name(), Input: in.JSON(), RequestedBy: p.by,
			ExpiresAt: a.ExpiresAt.UTC().Truncate(time.Second), HowToAnswer: how,
		})
	}
	if _, err := h.log.CreateApproval(context.WithoutCancel(ctx), a, evs...); err != nil {
		return api.Approval{}, err
	}
	return a, nil
}

// Resolve decides a parked call, exactly once. Approving runs the tool with
// the input stored when the call parked (or an approver's edit of it);
// denying gives the model (or the direct caller) a result saying who
// denied it and why. The decision and its principal are streamed as
// action.approval_resolved; the result follows as action.result, and a
// model turn waiting for it goes on.
//
// Under the tool's approver policy (tool.Config.Approval) the decider
// must hold one of its roles (not_an_approver), may not be the call's
// requester or its session's opener when it says NotRequester
// (requester_cannot_approve), and with a Quorum an approval short of it
// is recorded (action.approval_voted, the approval returned still
// pending with its Approvals) and a second one by the same principal is
// already_approved_by_you; the Quorum-th runs the call, once.
//
// An approval with d.Input changes what runs: the edit is validated
// against the tool's schema (invalid_input; the call stays parked), a
// policy with NoEdit refuses it (edit_not_allowed), and the tool's
// NeedsApproval is asked again: an edit that no longer needs approval
// runs at once, whatever the quorum. An edit drops the approvals given
// before it (they approved another input).
//
// The error is an *api.Error: approval_not_found, approval_expired, or
// already_resolved carrying the first decision in its Approval (status
// cancelled when its turn was cancelled: see [Sessions.Cancel]).
func (ap Approvals) Resolve(ctx context.Context, callID string, d Decision) (api.Approval, error) {
	if d.By == "" {
		d.By = "unknown"
	}
	if d.Principal == "" {
		d.Principal = d.By
	}
	parked, err := ap.h.log.Approval(ctx, callID)
	if d.SessionID != "" && (err != nil || parked.SessionID != d.SessionID) {
		return api.Approval{}, api.Errorf(api.CodeApprovalNotFound, "%s: %s in session %s", api.ErrApprovalNotFound.Message, callID, d.SessionID)
	}
	if err != nil {
		return api.Approval{}, storeError(err, approvalNotFound(callID))
	}
	rule, err := ap.h.policyFor(ctx, parked, &d)
	if err != nil {
		return api.Approval{}, err
	}
	// A call outside any session runs here, claimed with the decision; one
	// in a session is left for the host that takes the session's lease
	// (drive), which may be this one.
	p := store.ResolveApprovalParams{CallID: callID, Approved: d.Approved, By: d.By, Reason: d.Reason,
		Audit: ap.h.AuditParams(decisionAudit(parked, d)...)} // recorded with the decision, when it counts
	if parked.SessionID == "" {
		p.Executor = ap.h.leases.lease()
	}
	if rule.quorum > 1 || rule.input != nil {
		p.Quorum, p.Voter, p.Input = rule.quorum, d.Principal, rule.input
		if parked.SessionID != "" {
			p.EventsFor = func(a api.Approval) []api.Event { return decisionEvents(a, rule.quorum, d) }
		}
	} else if parked.SessionID != "" {
		// The decision and its event are stored together: a host that dies
		// between the two cannot leave a decided call the stream never shows.
		status := api.ApprovalDenied
		if d.Approved {
			status = api.ApprovalApproved
		}
		p.Events = events(parked.TurnID, api.ApprovalResolved{
			CallID: callID, Tool: parked.Tool, Status: status, By: d.By, Reason: d.Reason, At: time.Now().UTC(),
		})
	}
	a, _, err := ap.h.log.ResolveApproval(ctx, p)
	if rule.quorum > 1 {
		a.Quorum = rule.quorum
	}
	switch {
	case errors.Is(err, store.ErrAlreadyVoted):
		return a, &api.Error{Code: api.CodeAlreadyApprovedByYou, Approval: &a,
			Message: fmt.Sprintf("already_approved_by_you: %s approved call %s already; it needs %d approvals from distinct principals (%d so far)", d.Principal, callID, rule.quorum, len(a.Approvals))}
	case errors.Is(err, store.ErrAlreadyResolved):
		msg := fmt.Sprintf("already_resolved: call %s was %s by %s", a.CallID, a.Status, a.DecidedBy)
		if a.Status == api.ApprovalCancelled {
			msg = fmt.Sprintf("already_resolved: call %s was cancelled with its turn %s; it will not run", a.CallID, a.TurnID)
		}
		return a, &api.Error{Code: api.CodeAlreadyResolved, Approval: &a, Message: msg}
	case errors.Is(err, store.ErrExpired):
		// Expire it now rather than wait for its job or the sweep.
		ap.h.expireNow(context.WithoutCancel(ctx), callID)
		return a, api.ErrApprovalExpired
	case err != nil:
		return api.Approval{}, storeError(err, approvalNotFound(callID))
	}
	if a.Status == api.ApprovalPending {
		return a, nil // an approval short of the quorum
	}
	ap.h.wg.Add(1)
	go func() {
		defer ap.h.wg.Done()
		defer guard(ap.h.logger, "carrying out a decision", "call", a.CallID)
		ap.h.carryOut(context.WithoutCancel(ctx), a)
	}()
	return a, nil
}

// writer is where a decision and an outcome are written: the host's log,
// or a job's transaction (txWriter). Neither is fenced by a turn's lease:
// a decision and a call's outcome belong to the call, and are recorded
// whichever host holds its turn.
type writer interface {
	Append(ctx context.Context, sessionID string, events ...api.Event) ([]api.Event, error)
	FinishApproval(ctx context.Context, callID string, outcome api.Outcome, events ...api.Event) (bool, []api.Event, error)
}

// announceDecision streams a decision the host made (an expiry) as
// action.approval_resolved; a person's decision is stored with its event
// (Resolve).
func (h *Host) announceDecision(ctx context.Context, w writer, a api.Approval) error {
	if a.SessionID == "" {
		return nil
	}
	at := time.Now().UTC()
	if a.DecidedAt != nil {
		at = a.DecidedAt.UTC()
	}
	_, err := w.Append(context.WithoutCancel(ctx), a.SessionID, events(a.TurnID, api.ApprovalResolved{
		CallID: a.CallID, Tool: a.Tool, Status: a.Status, By: a.DecidedBy, Reason: a.Reason, At: at,
	})...)
	return err
}

// carryOut runs or refuses a decided call, records its outcome once, and
// lets a waiting turn go on.
func (h *Host) carryOut(ctx context.Context, a api.Approval) {
	start := time.Now()
	var out tool.Output
	switch a.Status {
	case api.ApprovalApproved:
		if a.SessionID != "" {
			h.drive(ctx, a.SessionID, a.TurnID)
			return
		}
		out = h.runApproved(ctx, h.ctx, a)
	case api.ApprovalDenied:
		msg := "denied by " + a.DecidedBy
		if a.Reason != "" {
			msg += ": " + a.Reason
		}
		out = tool.ErrorOutput(msg)
	case api.ApprovalExpired:
		out = expiredOutput(a)
	default:
		return
	}
	won, err := h.record(ctx, h.log, a, out, time.Since(start))
	if err != nil {
		h.logger.Error("recording a call's outcome", "call", a.CallID, "err", err)
		return
	}
	h.settled(ctx, a, won)
}

// expiredOutput is the result of a call nobody decided in time.
func expiredOutput(a api.Approval) tool.Output {
	return tool.ErrorOutput(fmt.Sprintf("not run: nobody approved the call before it expired at %s", a.ExpiresAt.UTC().Format(time.RFC3339)))
}

// interrupted is the result of a call whose host died running it.
var interrupted = tool.ErrorOutput("interrupted by host restart; not retried")

// record stores a decided call's outcome, once, with (the first time) its
// action.result on the stream in the same write; won says it was the
// first time. The result is not fenced by the turn's lease: it is the
// call's, and whoever records the outcome first writes it.
func (h *Host) record(ctx context.Context, w writer, a api.Approval, out tool.Output, took time.Duration) (bool, error) {
	outcome := *outcomeOf(a.Tool, a.CallID, out, took)
	var evs []api.Event
	if a.SessionID != "" {
		if a.ModelCallID != "" {
			out = h.fitForModel(ctx, a.SessionID, a.TurnID, a.CallID, out) // the outcome keeps the whole result
		}
		evs = events(a.TurnID, api.ActionResult{
			CallID: a.CallID, ModelCallID: a.ModelCallID, Tool: a.Tool, IsError: out.IsError, Result: out.Result,
			DurationMs: outcome.DurationMs, Direct: a.ModelCallID == "",
		})
	}
	won, _, err := w.FinishApproval(context.WithoutCancel(ctx), a.CallID, outcome, evs...)
	return won, err
}

// settled wakes what waits for a recorded outcome: direct callers, and
// (the first time) the parked turn.
func (h *Host) settled(ctx context.Context, a api.Approval, won bool) {
	h.waiters.notify(a.CallID)
	if won && a.SessionID != "" {
		h.drive(ctx, a.SessionID, a.TurnID)
	}
}

// runApproved runs an approved call with its stored input, under parent
// (the host's context, or the turn's when the host runs the turn),
// holding it with an executor lease so that a host that dies mid-call is
// noticed.
func (h *Host) runApproved(ctx, parent context.Context, a api.Approval) tool.Output {
	t, ok := h.tools.Lookup(a.Tool)
	if !ok {
		t, ok = h.builtinTool(a.Tool)
	}
	if !ok {
		return tool.ErrorOutput(fmt.Sprintf("tool %s no longer exists on this host", a.Tool))
	}
	in, err := t.Validate(a.Input)
	if err != nil {
		return tool.ErrorOutput("the stored input no longer fits the tool: " + err.Error())
	}
	rctx, cancel := context.WithCancel(parent)
	defer cancel()
	go func() {
		defer guard(h.logger, "renewing an approved call's executor lease", "call", a.CallID)
		h.leases.keepAlive(rctx, func(ctx context.Context) bool {
			h.log.RenewExecutor(ctx, a.CallID, h.leases.lease())
			return true
		})
	}()
	c := callSpec{id: a.CallID, modelCallID: a.ModelCallID, tool: t, in: in, turnID: a.TurnID}
	if a.SessionID != "" {
		sess, err := h.log.Session(ctx, a.SessionID)
		if err != nil {
			return tool.ErrorOutput("reading the call's session: " + err.Error())
		}
		c.session = &sess
	}
	return h.run(rctx, c)
}

// allAnswered reports whether every call the turn announced, and every call
// parked in it, has its result.
func (h *Host) allAnswered(ctx context.Context, sessionID, turnID string) (bool, error) {
	open, err := openCalls(ctx, h.log, sessionID, turnID, true)
	return len(open) == 0, err
}

// openCalls returns the calls of a turn without a result, in the order
// they were announced: those the model asked for and, with parked, those
// that parked for a decision.
func openCalls(ctx context.Context, r eventReader, sessionID, turnID string, parked bool) ([]api.Action, error) {
	var order []api.Action
	waiting := map[string]bool{}
	err := eachEvent(ctx, r, sessionID, func(e api.Event) {
		if e.TurnID != turnID {
			return
		}
		switch e.Kind {
		case api.KindActionsRequested:
			a, _ := api.Decode[api.ActionsRequested](e)
			for _, act := range a.Actions {
				order = append(order, act)
				waiting[act.CallID] = true
			}
		case api.KindApprovalRequested:
			a, _ := api.Decode[api.ApprovalRequested](e)
			if !parked {
				delete(waiting, a.CallID) // its decision brings its result
				return
			}
			if _, announced := waiting[a.CallID]; !announced {
				order = append(order, api.Action{CallID: a.CallID, ModelCallID: a.ModelCallID, Tool: a.Tool})
			}
			waiting[a.CallID] = true
		case api.KindActionResult:
			r, _ := api.Decode[api.ActionResult](e)
			delete(waiting, r.CallID)
		}
	})
	if err != nil {
		return nil, err
	}
	var out []api.Action
	for _, a := range order {
		if waiting[a.CallID] {
			out = append(out, a)
		}
	}
	return out, nil
}

// expire resolves the pending approvals past their expiry as expired: the
// sweep of a store without jobs.
func (h *Host) expire(ctx context.Context) error {
	expired, err := h.log.ExpireApprovals(ctx, time.Now())
	if err != nil {
		return err
	}
	for _, a := range expired {
		if err := h.announceDecision(ctx, h.log, a); err != nil {
			h.logger.Error("recording a decision", "call", a.CallID, "err", err)
		}
		h.carryOut(ctx, a)
	}
	return nil
}

// orphans records the approved calls whose host died while running them:
// they are not run again. The sweep of a store without jobs.
func (h *Host) orphans(ctx context.Context) error {
	orphaned, err := h.log.OrphanedApprovals(ctx, time.Now())
	if err != nil {
		return err
	}
	for _, a := range orphaned {
		won, err := h.record(ctx, h.log, a, interrupted, 0)
		if err != nil {
			return err
		}
		h.settled(ctx, a, won)
	}
	return nil
}

// List lists parked and decided calls with a status ("" for all),
// oldest first, and the cursor of the next page.
func (ap Approvals) List(ctx context.Context, status api.ApprovalStatus, p store.Page) ([]api.Approval, string, error) {
	return ap.ListBy(ctx, store.ListApprovalsParams{Status: status, Page: p})
}

// ListBy lists the parked and decided calls p selects (of one
// principal's calls, when p.RequestedBy is set), oldest first, and the
// cursor of the next page.
func (ap Approvals) ListBy(ctx context.Context, p store.ListApprovalsParams) ([]api.Approval, string, error) {
	list, next, err := ap.h.log.ListApprovals(ctx, p)
	for i := range list {
		ap.h.withQuorum(&list[i])
	}
	return list, next, storeError(err, nil)
}

// Get returns a gated call as it stands: pending, or decided with
// its outcome once known.
func (ap Approvals) Get(ctx context.Context, callID string) (api.Approval, error) {
	a, err := ap.h.log.Approval(ctx, callID)
	if err != nil {
		return api.Approval{}, storeError(err, approvalNotFound(callID))
	}
	ap.h.withQuorum(&a)
	return a, nil
}

// quota refuses with quota_exceeded when principal already holds max of
// what count counts (max < 0: no bound). Concurrent requests may each pass
// the count: a bound, not an exact limit.
func (h *Host) quota(ctx context.Context, what string, max int, principal string, count func(context.Context, string) (int, error)) error {
	if max < 0 {
		return nil
	}
	n, err := count(ctx, principal)
	if err != nil {
		return storeError(err, nil)
	}
	if n >= max {
		return api.Errorf(api.CodeQuotaExceeded, "%s already holds %d %s, the most this host allows (%d)", principal, n, what, max)
	}
	return nil
}

package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// permission answers a harness's session/request_permission: a call of
// the agent's own MCP server is allowed (CallInTurn gates it as any call
// of the tool); otherwise the harness's permissions policy allows or
// denies it by its kind and title, or it is parked as a call of
// harness_<kind> — on the stream as action.approval_requested with the
// exact command or file and diff — and the harness waits, its process
// alive, until a person decides over HTTP, the CLI, the playground or a
// channel. An approval is claimed here, so it is carried out once: the
// harness is answered allow once and runs it; a denial or an expiry is
// answered reject (the decision recorded its result). If the turn ends
// first (a cancel, the harness gone), the request is answered cancelled
// and the call is decided denied by the host.
func (r *harnessRun) permission(ctx context.Context, q acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	r.mu.Lock()
	c := r.call(q.ToolCall.ToolCallId)
	kind := ""
	if q.ToolCall.Kind != nil {
		kind = string(*q.ToolCall.Kind)
	}
	c.describe(kind, q.ToolCall.Title, q.ToolCall.RawInput, q.ToolCall.Locations, q.ToolCall.Content, nil)
	if c.ours {
		r.mu.Unlock()
		return harness.AllowOnce(q)
	}
	verdict := r.spec.Permissions.Decide(c.kind, c.title)
	r.announce(c)
	switch verdict {
	case harness.Allow:
		r.mu.Unlock()
		return harness.AllowOnce(q)
	case harness.Deny:
		r.result(c, tool.ErrorOutput(fmt.Sprintf("denied by the agent's permissions policy (deny: %s)", c.kind)))
		r.mu.Unlock()
		return harness.Reject(q)
	}
	t := harnessTools()[harnessToolName(c.kind)]
	in, err := t.Validate(harnessApprovalInput(c, q))
	if err == nil {
		_, err = r.h.park(r.ctx, t, in, parkSpec{callID: c.id, sessionID: r.sess.ID, turnID: r.turnID, modelCallID: string(c.toolID), by: r.sess.Principal})
	}
	if err != nil {
		r.result(c, tool.ErrorOutput("parking the call for approval failed: "+err.Error()))
		r.mu.Unlock()
		return harness.Reject(q)
	}
	r.mu.Unlock()
	a, ok := r.h.awaitDecision(r.ctx, ctx, c.id)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case !ok:
		c.done = true // abandon recorded its result
		return harness.Cancelled()
	case a.Status == api.ApprovalApproved:
		c.approval = &a
		c.started = time.Now()
		rctx, cancel := context.WithCancel(context.WithoutCancel(r.ctx))
		c.renewing = cancel
		go func() {
			defer guard(r.h.logger, "renewing a harness call's executor lease", "call", a.CallID)
			r.h.leases.keepAlive(rctx, func(ctx context.Context) bool {
				r.h.log.RenewExecutor(ctx, a.CallID, r.h.leases.lease())
				return true
			})
		}()
		return harness.AllowOnce(q)
	default:
		c.done = true // denied or expired: the decision recorded its result
		return harness.Reject(q)
	}
}

// harnessApprovalInput is what an approver sees of a harness call: its
// title (the shell command, the file), kind, files and the harness's raw
// input, and a diff where it shows one.
func harnessApprovalInput(c *harnessCall, q acp.RequestPermissionRequest) json.RawMessage {
	v := map[string]any{"title": c.title, "kind": c.kind, "input": json.RawMessage(c.inputOrEmpty())}
	if len(c.locations) > 0 {
		v["locations"] = c.locations
	}
	for _, ct := range c.content {
		if ct.Diff != nil {
			v["diff"] = diffJSON(ct.Diff)
		}
	}
	var opts []string
	for _, o := range q.Options {
		opts = append(opts, string(o.Kind))
	}
	v["options"] = strings.Join(opts, ",")
	b, err := marshalPlain(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// awaitDecision waits for a parked call of a running turn (tctx) to be
// decided, and claims an approval for this host (which the call's runner,
// here the harness, then carries out). ok is false if the turn or the
// request (rctx) ended first: the call is then decided denied by the host,
// with its result, so that it never runs without the one who asked.
func (h *Host) awaitDecision(tctx, rctx context.Context, callID string) (api.Approval, bool) {
	ctx, cancel := context.WithCancel(tctx)
	defer cancel()
	defer context.AfterFunc(rctx, cancel)()
	a, decided := h.waitApproval(ctx, callID, 0, func(a api.Approval) bool { return a.Status != api.ApprovalPending })
	if !decided {
		reason := "the harness withdrew the request before a decision"
		if tctx.Err() != nil {
			reason = "its harness turn ended (" + causeText(tctx) + ") before a decision"
		}
		h.abandon(context.WithoutCancel(tctx), callID, reason)
		return api.Approval{}, false
	}
	if a.Status != api.ApprovalApproved {
		return a, true
	}
	if won, err := h.log.ClaimApproval(context.WithoutCancel(tctx), callID, h.leases.lease()); err == nil && won {
		return a, true
	}
	return a, false // claimed by another: it carries it out
}

// causeText says why ctx ended.
func causeText(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil {
		return c.Error()
	}
	return "ended"
}

// abandon decides a parked call nobody will carry out (its harness turn
// ended) denied by the host, with its result, unless a decision came
// first: an approval nobody claimed is then answered not run.
func (h *Host) abandon(ctx context.Context, callID, reason string) {
	parked, err := h.log.Approval(ctx, callID)
	if err != nil {
		return
	}
	a, _, err := h.log.ResolveApproval(ctx, store.ResolveApprovalParams{CallID: callID, Approved: false, By: "host", Reason: reason,
		Events: events(parked.TurnID, api.ApprovalResolved{CallID: callID, Tool: parked.Tool, Status: api.ApprovalDenied, By: "host", Reason: reason, At: time.Now().UTC()})})
	switch {
	case err == nil:
		won, err := h.record(ctx, h.log, a, tool.ErrorOutput("not run: "+reason), 0)
		if err == nil {
			h.settled(ctx, a, won)
		}
	case errors.Is(err, store.ErrAlreadyResolved) && a.Status == api.ApprovalApproved:
		if won, err := h.log.ClaimApproval(ctx, callID, h.leases.lease()); err == nil && won {
			if _, err := h.record(ctx, h.log, a, tool.ErrorOutput("not run: "+reason), 0); err == nil {
				h.waiters.notify(callID)
			}
		}
	}
}

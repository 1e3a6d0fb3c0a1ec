package host

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/channel"
	"github.com/agentsdk/agentsdk/internal/turnloop"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// Channels returns the agent's channels (Options.Channels), for the serve
// host to mount their routes.
func (h *Host) Channels() []*channel.Channel {
	return slices.Clone(h.opts.Channels)
}

// startChannel runs the session's channel's onStart hook at the start of
// the session's first model turn (until it has succeeded once): its calls
// are recorded in the turn, and what it adds goes to the model with the
// first message. Its failure fails the turn.
func (h *Host) startChannel(ctx context.Context, sess api.Session, turnID string, hist *turnloop.History) error {
	c := h.channels[sess.Channel]
	if c == nil || !c.HasOnStart() || hist.ChannelStarted() {
		return nil
	}
	dir, err := h.sessionWorkspace(sess.ID).open()
	if err != nil {
		return fmt.Errorf("onStart: opening the session's workspace: %w", err)
	}
	ts := tool.Session{ID: sess.ID, Channel: sess.Channel, Mode: string(sess.Mode), Principal: sess.Principal}
	s := channel.NewStart(tool.NewHandle(h.sessionServices(&sess, turnID), inTurn{backend{h}, sess, turnID}), ts, hist.LastUserMessage(), dir)
	if err := c.RunOnStart(ctx, s); err != nil {
		return fmt.Errorf("onStart of channel %s: %w", c.ID(), err)
	}
	started := api.ChannelStarted{Channel: c.ID(), Context: s.Context()}
	if err := h.emit(ctx, sess.ID, turnID, started); err != nil {
		return err
	}
	hist.Add(api.NewEvent(started))
	return nil
}

// goStartCloud runs a cloud session's channel's onStart hook here, on
// the host (its calls are server tools), holding the turn, before the turn
// is offered to runners; a runner reads what it added from the stream.
func (h *Host) goStartCloud(sess api.Session, hold store.Hold) {
	tctx := h.leases.track(h.ctx, h.log, h.logger, hold.Fence)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer guard(h.logger, "running a channel's onStart", "session", sess.ID, "turn", hold.TurnID)
		hist, err := h.readContext(tctx, sess, nil)
		if err == nil {
			err = h.startChannel(tctx, sess, hold.TurnID, hist)
		}
		var end api.TurnFailed
		if err != nil {
			end.Code, end.Reason = failure(tctx, err)
		}
		h.leases.untrack(sess.ID, hold.TurnID)
		if err != nil {
			if err := h.endTurn(tctx, hold.Fence, end); err != nil {
				h.logger.Error("ending a cloud turn whose onStart failed", "session", sess.ID, "err", err)
			}
			return
		}
		h.readyForRunner(h.ctx, hold)
	}()
}

// inTurn is the backend of an onStart hook's handle: its calls in the
// session run in the turn being started, recorded on the stream as direct
// calls.
type inTurn struct {
	backend
	sess   api.Session
	turnID string
}

func (b inTurn) CallTool(ctx context.Context, name string, input any, opts *tool.CallToolOptions) (*tool.Outcome, error) {
	if opts != nil && opts.SessionID != "" && opts.SessionID != b.sess.ID {
		return b.backend.CallTool(ctx, name, input, opts)
	}
	h := b.h
	start := time.Now()
	t, in, err := h.validate(name, input)
	if err != nil {
		return nil, err
	}
	if h.needsApproval(t, in) {
		return nil, api.Errorf(api.CodeBadRequest, "onStart cannot call %s in the session it starts: the tool needs approval for this input (call it outside the session, with CallToolOptions.Wait)", name)
	}
	release, err := h.acquireDirect(ctx, t, in, b.sess.ID)
	if err != nil {
		return nil, err
	}
	defer release()
	id := tool.NewCallID(name)
	out := h.run(ctx, callSpec{id: id, tool: t, in: in, session: &b.sess, turnID: b.turnID, held: true})
	o := outcomeOf(name, id, out, time.Since(start))
	err = h.emit(ctx, b.sess.ID, b.turnID, api.ActionResult{CallID: id, Tool: name, IsError: out.IsError, Result: out.Result, DurationMs: o.DurationMs, Direct: true})
	return o, err
}

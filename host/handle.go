package host

import (
	"context"
	"errors"
	"iter"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// Handle returns the host's handle: what channels' routes, schedules'
// runs and programs embedding the host act through — the same CallTool,
// Send and GetSession a tool's call has, with the host's services.
func (h *Host) Handle() tool.Handle {
	return tool.NewHandle(h.services, backend{h})
}

// backend is the host side of every tool.Handle: a tool's call's, a
// channel's, a schedule's and the host's own.
type backend struct{ h *Host }

func (b backend) CallTool(ctx context.Context, name string, input any, opts *tool.CallToolOptions) (*tool.Outcome, error) {
	var o CallOptions
	if opts != nil {
		o = CallOptions{SessionID: opts.SessionID, Wait: opts.Wait, Principal: opts.Principal}
	}
	return b.h.CallTool(ctx, name, input, &o)
}

func (b backend) Send(ctx context.Context, channelID, message string, opts *tool.SendOptions) (string, string, error) {
	var o tool.SendOptions
	if opts != nil {
		o = *opts
	}
	if o.SessionID != "" && o.Key != "" {
		return "", "", api.Errorf(api.CodeBadRequest, "send: give SessionID or Key, not both")
	}
	create := SessionOptions{Channel: channelID, Principal: o.Principal, Message: message}
	if o.Key != "" {
		id, reserved, err := b.h.sessionForKey(ctx, channelID, o.Key)
		if err != nil {
			return "", "", err
		}
		if !reserved {
			o.SessionID = id
		} else {
			create.ID = id
			sess, turnID, err := b.h.Sessions().Create(ctx, create)
			if err != nil && sess.ID == "" {
				// Nothing was made: free the key for the next Send.
				b.h.releaseKey(context.WithoutCancel(ctx), channelID, o.Key)
			}
			return id, turnID, err
		}
	}
	if o.SessionID != "" {
		if _, err := b.onChannel(ctx, channelID, o.SessionID); err != nil {
			if o.Key == "" || !errors.Is(err, &api.Error{Code: api.CodeSessionNotFound}) {
				return "", "", err
			}
			// Another Send reserved the key and is making the session:
			// give it a moment.
			if err := b.awaitSession(ctx, channelID, o.SessionID); err != nil {
				return "", "", err
			}
		}
		turnID, err := b.h.Sessions().Send(ctx, o.SessionID, message)
		return o.SessionID, turnID, err
	}
	sess, turnID, err := b.h.Sessions().Create(ctx, create)
	return sess.ID, turnID, err
}

func (b backend) Follow(ctx context.Context, sessionID string, after int64) iter.Seq2[tool.Event, error] {
	return b.h.Sessions().Follow(ctx, sessionID, after)
}

func (b backend) GetApproval(ctx context.Context, callID string) (tool.ApprovalState, error) {
	return b.h.Approvals().Get(ctx, callID)
}

func (b backend) ListApprovals(ctx context.Context, status tool.ApprovalStatus, opts *tool.ListOptions) ([]tool.ApprovalState, string, error) {
	var p store.Page
	if opts != nil {
		p = store.Page{Limit: opts.Limit, Cursor: opts.Cursor}
	}
	return b.h.Approvals().List(ctx, status, p)
}

// maxDecider is the longest user name a channel's decision takes.
const maxDecider = 200

func (b backend) Decide(ctx context.Context, channelID, callID string, d tool.Decision) (tool.ApprovalState, error) {
	if err := tool.CheckName(channelID); err != nil {
		return tool.ApprovalState{}, api.Errorf(api.CodeInvalidChannel, "%s: %q", api.ErrInvalidChannel.Message, channelID)
	}
	if d.User == "" || len(d.User) > maxDecider || strings.IndexFunc(d.User, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError }) >= 0 {
		return tool.ApprovalState{}, api.Errorf(api.CodeBadRequest, "decide: the user must be 1 to %d bytes of UTF-8 without spaces or control characters", maxDecider)
	}
	by := channelID + ":" + d.User
	dec := Decision{Approved: d.Approved, Reason: d.Reason, By: by, Via: channelID}
	if u, ok := b.h.opts.ChannelUsers[by]; ok && u.Principal != "" {
		dec.Principal, dec.Roles = u.Principal, u.Roles // for the tool's approver policy
	}
	return b.h.Approvals().Resolve(ctx, callID, dec)
}

// awaitSession waits up to a second for a session another Send is
// making.
func (b backend) awaitSession(ctx context.Context, channelID, sessionID string) error {
	var err error
	for range 20 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if _, err = b.onChannel(ctx, channelID, sessionID); err == nil {
			return nil
		}
	}
	return err
}

func (b backend) GetSession(ctx context.Context, channelID, sessionID string) (tool.SessionState, error) {
	sess, err := b.onChannel(ctx, channelID, sessionID)
	if err != nil {
		return tool.SessionState{}, err
	}
	return tool.SessionState{
		Session:   tool.Session{ID: sess.ID, Channel: sess.Channel, Mode: string(sess.Mode), Principal: sess.Principal},
		CreatedAt: sess.CreatedAt, LastSeq: sess.LastSeq, RunningTurn: sess.RunningTurn,
	}, nil
}

// keysNamespace holds the sessions Send opened by key, as KV entries
// "<channel>/<key>" → session id.
func (h *Host) keysNamespace() string { return h.opts.Namespace + ".session-keys" }

// sessionForKey returns the session a key names on a channel; reserved
// says the id is new, reserved here for a session the caller must create.
// Two hosts racing for a new key agree: one reserves, the other reads.
func (h *Host) sessionForKey(ctx context.Context, channelID, key string) (id string, reserved bool, err error) {
	if err := tool.CheckKey(key); err != nil {
		return "", false, api.Errorf(api.CodeBadRequest, "send: the session key: %v", err)
	}
	k := channelID + "/" + key
	for range 3 {
		e, err := h.log.KVGet(ctx, h.keysNamespace(), k)
		if err == nil {
			return string(e.Value), false, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return "", false, storeError(err, nil)
		}
		id := newID("sess")
		absent := int64(0)
		_, err = h.log.KVSet(ctx, store.KVSetParams{Namespace: h.keysNamespace(), Key: k, Value: []byte(id), IfVersion: &absent})
		if err == nil {
			return id, true, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return "", false, storeError(err, nil)
		}
	}
	return "", false, api.Errorf(api.CodeInternal, "send: the session key %q kept changing", key)
}

// releaseKey forgets a key whose session could not be made.
func (h *Host) releaseKey(ctx context.Context, channelID, key string) {
	if err := h.log.KVDelete(ctx, h.keysNamespace(), channelID+"/"+key); err != nil {
		h.logger.Warn("freeing a session key", "channel", channelID, "key", key, "err", err)
	}
}

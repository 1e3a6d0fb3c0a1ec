package slackbot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/httpjson"
	"github.com/agentsdk/agentsdk/tool"
)

// The deny modal: its callback id, and its reason input's block and
// action ids.
const (
	denyCallback = "agentsdk_deny"
	reasonBlock  = "reason"
	reasonAction = "reason"
	// maxReasonInput bounds a reason typed into the modal.
	maxReasonInput = 1000
	// groupErrorTTL is how long a failure to read a user group is
	// remembered (the group counts as empty meanwhile).
	groupErrorTTL = 10 * time.Second
	// syncTimeout bounds the Web API calls made before an interaction is
	// answered (Slack waits 3 s).
	syncTimeout = 2500 * time.Millisecond
)

// callIDShape is what a call id looks like (tool_<name>_<random>, or any
// id a host makes): printable, bounded.
var callIDShape = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,200}$`)

// denyMeta is the deny modal's private metadata.
type denyMeta struct {
	CallID  string `json:"callId"`
	Channel string `json:"channel,omitempty"`
	Thread  string `json:"thread,omitempty"`
}

// interactivity serves POST /interactivity: button clicks on cards and
// the deny modal's submissions.
func (b *Bot) interactivity(h tool.Handle, w http.ResponseWriter, r *http.Request, body []byte) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		badRequest(w, "the body is not a form: %v", err)
		return
	}
	payload := form.Get("payload")
	if payload == "" {
		badRequest(w, "the form has no payload")
		return
	}
	var ic slack.InteractionCallback
	if err := json.Unmarshal([]byte(payload), &ic); err != nil {
		httpjson.Error(w, api.Errorf(api.CodeMalformedJSON, "the payload is not an interaction: %v", truncate(err.Error(), 300)))
		return
	}
	if !userID.MatchString(ic.User.ID) {
		badRequest(w, "the interaction has no valid user")
		return
	}
	switch ic.Type {
	case slack.InteractionTypeBlockActions:
		b.blockActions(w, r, &ic)
	case slack.InteractionTypeViewSubmission:
		b.viewSubmission(w, r, &ic)
	case slack.InteractionTypeViewClosed:
		w.WriteHeader(http.StatusOK)
	case "":
		badRequest(w, "the interaction has no type")
	default:
		badRequest(w, "unsupported interaction type %q", truncate(string(ic.Type), 64))
	}
}

// blockActions handles a click on a card's Approve or Deny.
func (b *Bot) blockActions(w http.ResponseWriter, r *http.Request, ic *slack.InteractionCallback) {
	if len(ic.ActionCallback.BlockActions) == 0 || ic.ActionCallback.BlockActions[0] == nil {
		badRequest(w, "block_actions without an action")
		return
	}
	act := ic.ActionCallback.BlockActions[0]
	if act.ActionID != actionApprove && act.ActionID != actionDeny {
		badRequest(w, "unknown action %q", truncate(act.ActionID, 64))
		return
	}
	if !callIDShape.MatchString(act.Value) {
		badRequest(w, "the action's value is not a call id")
		return
	}
	callID, user := act.Value, ic.User.ID
	where := threadRef{Channel: ic.Channel.ID, Thread: ic.Container.ThreadTs}
	if where.Channel == "" {
		where.Channel = ic.Container.ChannelID
	}
	ctx := r.Context()
	hst, _ := b.attached()
	if !b.allowed(ctx, user) {
		w.WriteHeader(http.StatusOK)
		b.goBackground(ctx, "answering a click", time.Minute, func(ctx context.Context) {
			b.ephemeral(ctx, where, user, "You are not allowed to decide approvals here.")
		})
		return
	}
	if act.ActionID == actionDeny {
		b.openDeny(ctx, w, hst, callID, user, ic.TriggerID, where)
		return
	}
	// The decision is made whatever becomes of the request.
	a, err := hst.Decide(context.WithoutCancel(ctx), ChannelID, callID, tool.Decision{Approved: true, User: user})
	w.WriteHeader(http.StatusOK)
	b.goBackground(ctx, "answering a click", time.Minute, func(ctx context.Context) {
		b.decided(ctx, hst, callID, a, err, func(text string) { b.ephemeral(ctx, where, user, text) })
	})
}

// decided updates a call's cards after a decision from Slack, or says why
// there was none.
func (b *Bot) decided(ctx context.Context, hst tool.Handle, callID string, a api.Approval, err error, tell func(string)) {
	if err == nil && a.Status == api.ApprovalPending {
		// One approval of several: the card shows it, the approver is told.
		b.refreshCard(ctx, a)
		tell(fmt.Sprintf("Your approval is recorded: %d of %d; the call runs on the %s.", len(a.Approvals), a.Quorum, ordinal(a.Quorum)))
		return
	}
	if err == nil {
		b.closeCard(ctx, callID, &a)
		return
	}
	if text := refusal(err); text != "" {
		tell(text)
	} else {
		b.log.Error("slackbot: deciding a call", "call", callID, "err", err)
		tell("I could not record your decision: " + truncate(api.AsError(err).Message, 300))
	}
	// The card may not show the call as it stands: update it.
	if cur, gerr := hst.GetApproval(ctx, callID); gerr == nil && cur.Status != api.ApprovalPending {
		b.closeCard(ctx, callID, &cur)
	}
}

// refusal says why a decision was refused when a person can act on it;
// "" for other errors.
func refusal(err error) string {
	e := api.AsError(err)
	switch {
	case errors.Is(err, api.ErrAlreadyResolved):
		if e.Approval != nil && e.Approval.Status == api.ApprovalExpired {
			return "Too late: the call expired before anyone decided."
		}
		if e.Approval != nil && e.Approval.Status == api.ApprovalCancelled {
			return "Too late: its turn was cancelled, and the call will not run."
		}
		if e.Approval != nil {
			return "Already decided: " + string(e.Approval.Status) + " by " + who(e.Approval.DecidedBy) + "."
		}
		return "Already decided."
	case errors.Is(err, api.ErrApprovalExpired):
		return "Too late: the call expired before anyone decided."
	case errors.Is(err, api.ErrApprovalNotFound):
		return "No call waits for a decision under that id any more."
	case errors.Is(err, api.ErrRequesterCannotApprove):
		return "You asked for this call (or opened its conversation): someone else must decide it."
	case errors.Is(err, api.ErrNotAnApprover):
		return "You may not decide this call: its tool is decided by certain roles only, and yours are not among them."
	case errors.Is(err, api.ErrAlreadyApprovedByYou):
		if e.Approval != nil && e.Approval.Quorum > 1 {
			return fmt.Sprintf("You approved it already: it needs %d approvals from different people (%d so far).", e.Approval.Quorum, len(e.Approval.Approvals))
		}
		return "You approved it already."
	}
	return ""
}

// ordinal is "2nd", "3rd", "11th".
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// openDeny opens the modal asking why a call is denied.
func (b *Bot) openDeny(ctx context.Context, w http.ResponseWriter, hst tool.Handle, callID, user, trigger string, where threadRef) {
	a, err := hst.GetApproval(ctx, callID)
	if err == nil && a.Status != api.ApprovalPending {
		err = &api.Error{Code: api.CodeAlreadyResolved, Approval: &a, Message: "already decided"}
		if a.Status == api.ApprovalExpired {
			err = api.ErrApprovalExpired
		}
	}
	if err != nil {
		w.WriteHeader(http.StatusOK)
		b.goBackground(ctx, "answering a click", time.Minute, func(ctx context.Context) {
			b.decided(ctx, hst, callID, api.Approval{}, err, func(text string) { b.ephemeral(ctx, where, user, text) })
		})
		return
	}
	meta, _ := json.Marshal(denyMeta{CallID: callID, Channel: where.Channel, Thread: where.Thread})
	plain := func(s string) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
	}
	input := slack.NewPlainTextInputBlockElement(plain("Why not?"), reasonAction)
	input.Multiline, input.MaxLength = true, maxReasonInput
	view := slack.ModalViewRequest{
		Type: slack.VTModal, CallbackID: denyCallback, PrivateMetadata: string(meta),
		Title: plain("Deny " + truncate(a.Tool, 18)), Submit: plain("Deny"), Close: plain("Cancel"),
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "Deny `"+strings.ReplaceAll(a.Tool, "`", "'")+"` (call `"+callID+"`)?", false, false), nil, nil),
			slack.NewInputBlock(reasonBlock, plain("Reason"), nil, input),
		}},
	}
	vctx, cancel := context.WithTimeout(ctx, syncTimeout)
	_, err = b.client.OpenViewContext(vctx, trigger, view)
	cancel()
	w.WriteHeader(http.StatusOK)
	if err != nil {
		b.log.Warn("slackbot: opening the deny modal", "call", callID, "err", err)
		b.goBackground(ctx, "answering a click", time.Minute, func(ctx context.Context) {
			b.ephemeral(ctx, where, user, "I could not ask for a reason ("+truncate(err.Error(), 100)+"); click Deny again.")
		})
	}
}

// viewSubmission handles the deny modal's submission: it denies the call
// with the reason given.
func (b *Bot) viewSubmission(w http.ResponseWriter, r *http.Request, ic *slack.InteractionCallback) {
	if ic.View.CallbackID != denyCallback {
		badRequest(w, "unknown view %q", truncate(ic.View.CallbackID, 64))
		return
	}
	var meta denyMeta
	if err := json.Unmarshal([]byte(ic.View.PrivateMetadata), &meta); err != nil || !callIDShape.MatchString(meta.CallID) {
		badRequest(w, "the view's metadata does not name a call")
		return
	}
	var reason string
	if ic.View.State != nil {
		reason = strings.TrimSpace(ic.View.State.Values[reasonBlock][reasonAction].Value)
	}
	reason = truncate(reason, maxReasonInput)
	user := ic.User.ID
	fail := func(msg string) {
		httpjson.Write(w, http.StatusOK, slack.NewErrorsViewSubmissionResponse(map[string]string{reasonBlock: msg}))
	}
	if reason == "" {
		fail("Say why the call is denied.")
		return
	}
	ctx := r.Context()
	if !b.allowed(ctx, user) {
		fail("You are not allowed to decide approvals here.")
		return
	}
	hst, _ := b.attached()
	a, err := hst.Decide(context.WithoutCancel(ctx), ChannelID, meta.CallID, tool.Decision{Approved: false, Reason: reason, User: user})
	if err != nil {
		text := refusal(err)
		if text == "" {
			b.log.Error("slackbot: denying a call", "call", meta.CallID, "err", err)
			text = "I could not record your decision: " + truncate(api.AsError(err).Message, 200)
		}
		fail(text)
		b.goBackground(ctx, "updating a card", time.Minute, func(ctx context.Context) {
			b.decided(ctx, hst, meta.CallID, a, err, func(string) {})
		})
		return
	}
	w.WriteHeader(http.StatusOK) // an empty body closes the modal
	b.goBackground(ctx, "updating a card", time.Minute, func(ctx context.Context) {
		b.closeCard(ctx, meta.CallID, &a)
	})
}

// ephemeral tells one user something where they clicked.
func (b *Bot) ephemeral(ctx context.Context, where threadRef, user, text string) {
	if where.Channel == "" {
		b.log.Info("slackbot: nowhere to answer a click", "user", user, "text", text)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
	if where.Thread != "" {
		opts = append(opts, slack.MsgOptionTS(where.Thread))
	}
	if _, err := b.client.PostEphemeralContext(ctx, where.Channel, user, opts...); err != nil {
		b.log.Warn("slackbot: answering a click", "channel", where.Channel, "err", err)
	}
}

// allowed reports whether a user may decide approvals: anyone when
// Config.Allow is empty, else the users listed and the members of the
// groups listed (read with usergroups.users.list, cached a minute; a group
// that cannot be read counts as empty).
func (b *Bot) allowed(ctx context.Context, user string) bool {
	if len(b.users) == 0 && len(b.groups) == 0 {
		return true
	}
	if b.users[user] {
		return true
	}
	for _, g := range b.groups {
		if b.members(ctx, g)[user] {
			return true
		}
	}
	return false
}

// members returns a user group's members, from the cache when fresh.
func (b *Bot) members(ctx context.Context, group string) map[string]bool {
	now := b.now()
	b.mu.Lock()
	m, ok := b.groupCache[group]
	b.mu.Unlock()
	if ok && (m.err == nil && now.Sub(m.at) < groupsTTL || m.err != nil && now.Sub(m.at) < groupErrorTTL) {
		return m.users
	}
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	users, err := b.client.GetUserGroupMembersContext(ctx, group)
	m = groupMembers{users: map[string]bool{}, at: now, err: err}
	if err != nil {
		b.log.Warn("slackbot: reading a user group's members", "group", group, "err", err)
	}
	for _, u := range users {
		m.users[u] = true
	}
	b.mu.Lock()
	b.groupCache[group] = m
	b.mu.Unlock()
	return m.users
}

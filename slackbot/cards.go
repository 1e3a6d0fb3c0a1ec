package slackbot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackutilsx"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/progress"
	"github.com/agentsdk/agentsdk/tool"
)

// Action ids of a card's buttons; their value is the call id.
const (
	actionApprove = "approve"
	actionDeny    = "deny"
)

const (
	// threadGrace is how long a card for a Slack session waits for the
	// session's thread to be recorded (the turn may park before Send has
	// returned) before it is posted without it.
	threadGrace = 15 * time.Second
	// claimStale is when a claim to post a card that posted nothing (its
	// host died) may be taken over.
	claimStale = 2 * time.Minute
	// retryAfter is how long a card that could not be posted or updated
	// waits before the next try.
	retryAfter = 10 * time.Second
	// closedTTL is how long a closed card's record is kept.
	closedTTL = 7 * 24 * time.Hour
	// maxInputBytes bounds the input a card shows.
	maxInputBytes = 600
	// maxListed bounds the pending calls the keeper reads in a round.
	maxListed = 10_000
)

// cardRecord is a call's card in KV: claimed, then posted where Posts
// say, then closed once the call was decided.
type cardRecord struct {
	ClaimedAt time.Time  `json:"claimedAt"`
	Posts     []cardPost `json:"posts,omitempty"`
	Closed    bool       `json:"closed,omitempty"`
	// Shown is how many approvals of a call needing several the posted
	// card shows ("1 of 2").
	Shown int `json:"shown,omitempty"`
}

// cardPost is one posted card: a message.
type cardPost struct {
	Channel string `json:"channel"`
	TS      string `json:"ts"`
	Thread  string `json:"thread,omitempty"`
}

// kickKeeper runs the card keeper now rather than at its next tick.
func (b *Bot) kickKeeper() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// keep is the card keeper: every keeperEvery (or when kicked) it posts a
// card for every pending call that has none, and closes the cards of calls
// no longer pending.
func (b *Bot) keep(ctx context.Context) {
	t := time.NewTicker(keeperEvery)
	defer t.Stop()
	for {
		b.keepOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-b.kick:
		}
	}
}

// keepOnce is one round of the keeper.
func (b *Bot) keepOnce(ctx context.Context) {
	defer func() {
		if v := recover(); v != nil {
			b.log.Error("slackbot: panic in the card keeper", "panic", v)
		}
	}()
	h, _ := b.attached()
	pending, err := listPending(ctx, h)
	if err != nil {
		if ctx.Err() == nil {
			b.log.Warn("slackbot: listing pending approvals", "err", err)
		}
		return
	}
	isPending := make(map[string]bool, len(pending))
	for _, a := range pending {
		isPending[a.CallID] = true
	}
	now := b.now()
	b.mu.Lock()
	for id := range b.carded {
		if !isPending[id] {
			delete(b.carded, id)
		}
	}
	var todo []api.Approval
	for _, a := range pending {
		if !b.carded[a.CallID] && !now.Before(b.retryAt[a.CallID]) {
			todo = append(todo, a)
		}
	}
	b.mu.Unlock()
	for _, a := range todo {
		if ctx.Err() != nil {
			return
		}
		b.ensureCard(ctx, h, a)
	}
	for _, a := range pending {
		if a.Quorum > 1 && ctx.Err() == nil {
			b.refreshCard(ctx, a)
		}
	}
	kv := b.kv()
	cursor := ""
	for {
		open, next, err := kv.List(ctx, keyOpen, &tool.KVListOptions{Limit: 1000, Cursor: cursor})
		if err != nil {
			if ctx.Err() == nil {
				b.log.Warn("slackbot: listing open cards", "err", err)
			}
			return
		}
		for _, e := range open {
			id := strings.TrimPrefix(e.Key, keyOpen)
			if isPending[id] || ctx.Err() != nil || b.waiting(id) {
				continue
			}
			a, err := h.GetApproval(ctx, id)
			switch {
			case errors.Is(err, api.ErrApprovalNotFound):
				b.closeCard(ctx, id, nil)
			case err != nil:
				b.log.Warn("slackbot: reading an approval", "call", id, "err", err)
			case a.Status != api.ApprovalPending:
				b.closeCard(ctx, id, &a)
			}
		}
		if next == "" {
			return
		}
		cursor = next
	}
}

// waiting reports whether a call's card waits before its next try.
func (b *Bot) waiting(callID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.now().Before(b.retryAt[callID])
}

// later makes a call's card wait before its next try.
func (b *Bot) later(callID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.retryAt[callID] = b.now().Add(retryAfter)
}

func (b *Bot) setCarded(callID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.carded[callID] = true
	delete(b.retryAt, callID)
}

// listPending lists every pending call, oldest first (at most maxListed).
func listPending(ctx context.Context, h tool.Handle) ([]api.Approval, error) {
	var all []api.Approval
	cursor := ""
	for len(all) < maxListed {
		page, next, err := h.ListApprovals(ctx, api.ApprovalPending, &tool.ListOptions{Limit: 1000, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	return all, nil
}

// cardTTL is how long a pending call's card record is kept: past its
// expiry, so that no host posts a second card while it is pending.
func (b *Bot) cardTTL(a api.Approval) time.Duration {
	return max(a.ExpiresAt.Sub(b.now())+24*time.Hour, time.Hour)
}

// ensureCard posts a pending call's card where it belongs, once across
// hosts: the call is claimed in KV before anything is posted.
func (b *Bot) ensureCard(ctx context.Context, h tool.Handle, a api.Approval) {
	kv := b.kv()
	var targets []cardPost
	if a.SessionID != "" {
		// A session on another channel is not found on this one.
		_, err := h.GetSession(ctx, ChannelID, a.SessionID)
		if err != nil && !errors.Is(err, api.ErrSessionNotFound) {
			b.log.Warn("slackbot: reading a parked call's session", "call", a.CallID, "err", err)
			b.later(a.CallID)
			return
		}
		if err == nil {
			ref, ok := b.sessionThread(ctx, kv, a.SessionID)
			switch {
			case ok:
				targets = append(targets, cardPost{Channel: ref.Channel, Thread: ref.Thread})
			case b.now().Sub(a.RequestedAt) < threadGrace:
				return // its thread is being recorded: the next round
			}
		}
	}
	if b.cfg.ApprovalsChannel != "" {
		targets = append(targets, cardPost{Channel: b.cfg.ApprovalsChannel})
	}
	if len(targets) == 0 {
		b.setCarded(a.CallID) // nowhere to post it
		return
	}
	key, ttl := keyCard+a.CallID, b.cardTTL(a)
	rec := cardRecord{ClaimedAt: b.now().UTC()}
	claim, err := kv.CompareAndSet(ctx, key, 0, mustJSON(rec), &tool.KVSetOptions{TTL: ttl})
	if errors.Is(err, tool.ErrVersionConflict) {
		cur, err := kv.Get(ctx, key)
		if err != nil {
			return // gone meanwhile: the next round claims it
		}
		var old cardRecord
		if json.Unmarshal(cur.Value, &old) == nil && (len(old.Posts) > 0 || old.Closed || b.now().Sub(old.ClaimedAt) < claimStale) {
			b.setCarded(a.CallID) // posted, or being posted, by this host or another
			return
		}
		// Claimed by a host that posted nothing for long: take it over.
		if claim, err = kv.CompareAndSet(ctx, key, cur.Version, mustJSON(rec), &tool.KVSetOptions{TTL: ttl}); err != nil {
			return
		}
	} else if err != nil {
		b.log.Warn("slackbot: claiming a card", "call", a.CallID, "err", err)
		b.later(a.CallID)
		return
	}
	blocks, fallback := cardBlocks(a, false)
	for _, t := range targets {
		opts := []slack.MsgOption{slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(fallback, false)}
		if t.Thread != "" {
			opts = append(opts, slack.MsgOptionTS(t.Thread))
		}
		pctx, cancel := context.WithTimeout(ctx, apiTimeout)
		ch, ts, err := b.client.PostMessageContext(pctx, t.Channel, opts...)
		cancel()
		if err != nil {
			b.log.Warn("slackbot: posting an approval card", "call", a.CallID, "channel", t.Channel, "err", err)
			continue
		}
		rec.Posts = append(rec.Posts, cardPost{Channel: ch, TS: ts, Thread: t.Thread})
	}
	if len(rec.Posts) == 0 {
		// Nothing posted: leave the claim stale at once, for the next try.
		rec.ClaimedAt = time.Time{}
		kv.CompareAndSet(ctx, key, claim.Version, mustJSON(rec), &tool.KVSetOptions{TTL: ttl})
		b.later(a.CallID)
		return
	}
	if _, err := kv.CompareAndSet(ctx, key, claim.Version, mustJSON(rec), &tool.KVSetOptions{TTL: ttl}); err != nil {
		b.log.Error("slackbot: recording a posted card (it will not be updated)", "call", a.CallID, "err", err)
	}
	if _, err := kv.Set(ctx, keyOpen+a.CallID, []byte(a.Status), &tool.KVSetOptions{TTL: ttl}); err != nil {
		b.log.Error("slackbot: recording an open card", "call", a.CallID, "err", err)
	}
	b.setCarded(a.CallID)
	// A decision made while the card was being posted found no posts to
	// update (closeCard leaves a card being posted alone): update it now.
	switch cur, err := h.GetApproval(ctx, a.CallID); {
	case errors.Is(err, api.ErrApprovalNotFound):
		b.closeCard(ctx, a.CallID, nil)
	case err == nil && cur.Status != api.ApprovalPending:
		b.closeCard(ctx, a.CallID, &cur)
	}
}

// refreshCard updates a pending call's posted cards when the approvals
// they show ("1 of 2") are not the call's: its buttons stay.
func (b *Bot) refreshCard(ctx context.Context, a api.Approval) {
	kv := b.kv()
	key := keyCard + a.CallID
	e, err := kv.Get(ctx, key)
	if err != nil {
		return // not posted (yet), or gone
	}
	var rec cardRecord
	if json.Unmarshal(e.Value, &rec) != nil || rec.Closed || len(rec.Posts) == 0 || rec.Shown == len(a.Approvals) {
		return
	}
	rec.Shown = len(a.Approvals)
	if _, err := kv.CompareAndSet(ctx, key, e.Version, mustJSON(rec), &tool.KVSetOptions{TTL: b.cardTTL(a)}); err != nil {
		return // another is updating it, or closing it
	}
	blocks, fallback := cardBlocks(a, false)
	for _, p := range rec.Posts {
		uctx, cancel := context.WithTimeout(ctx, apiTimeout)
		_, _, _, err := b.client.UpdateMessageContext(uctx, p.Channel, p.TS, slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(fallback, false))
		cancel()
		if err != nil {
			b.log.Warn("slackbot: showing an approval on a card", "call", a.CallID, "channel", p.Channel, "err", err)
		}
	}
}

// closeCard updates a decided call's cards (a nil approval: one that no
// longer exists): the buttons go, the decision shows. The card is then
// closed; one that could not be updated is tried again later.
func (b *Bot) closeCard(ctx context.Context, callID string, a *api.Approval) {
	kv := b.kv()
	key := keyCard + callID
	e, err := kv.Get(ctx, key)
	if errors.Is(err, tool.ErrKeyNotFound) {
		kv.Delete(ctx, keyOpen+callID)
		return
	}
	if err != nil {
		b.log.Warn("slackbot: reading a card", "call", callID, "err", err)
		return
	}
	var rec cardRecord
	if err := json.Unmarshal(e.Value, &rec); err != nil || rec.Closed {
		kv.Delete(ctx, keyOpen+callID)
		return
	}
	if len(rec.Posts) == 0 && b.now().Sub(rec.ClaimedAt) < claimStale {
		// Being posted: its poster closes it once the posts are recorded
		// (ensureCard reads the call again after recording them).
		return
	}
	// Claim the closing first, so that of the hosts (and this host's
	// keeper and click) closing one card, one updates it.
	rec.Closed = true
	claimed, err := kv.CompareAndSet(ctx, key, e.Version, mustJSON(rec), &tool.KVSetOptions{TTL: closedTTL})
	if errors.Is(err, tool.ErrVersionConflict) {
		return // another is closing it
	}
	if err != nil {
		b.log.Warn("slackbot: recording a closed card", "call", callID, "err", err)
		return
	}
	var blocks []slack.Block
	var fallback string
	if a != nil {
		blocks, fallback = cardBlocks(*a, true)
	} else {
		fallback = "This call no longer waits for a decision."
		blocks = []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, fallback, false, false), nil, nil)}
	}
	for _, p := range rec.Posts {
		uctx, cancel := context.WithTimeout(ctx, apiTimeout)
		_, _, _, err := b.client.UpdateMessageContext(uctx, p.Channel, p.TS, slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(fallback, false))
		cancel()
		var refused slack.SlackErrorResponse
		switch {
		case err == nil:
		case errors.As(err, &refused):
			// Slack refused (the message was deleted, the bot left the
			// channel): trying again will not help.
			b.log.Warn("slackbot: updating an approval card", "call", callID, "channel", p.Channel, "err", err)
		default:
			b.log.Warn("slackbot: updating an approval card; trying again later", "call", callID, "channel", p.Channel, "err", err)
			// Give the claim back for the next try.
			rec.Closed = false
			if _, err := kv.CompareAndSet(ctx, key, claimed.Version, mustJSON(rec), &tool.KVSetOptions{TTL: closedTTL}); err != nil {
				b.log.Warn("slackbot: reopening a card to update it later", "call", callID, "err", err)
			}
			b.later(callID)
			return
		}
	}
	kv.Delete(ctx, keyOpen+callID)
}

// cardBlocks is a call's card: the tool, its input, who asked, the expiry,
// and Approve / Deny while it is pending; the decision, who and when once
// decided.
func cardBlocks(a api.Approval, decided bool) ([]slack.Block, string) {
	tool := slackutilsx.EscapeMessage(a.Tool)
	head := ":lock: *Approval needed:* `" + tool + "`"
	fallback := "Approval needed: " + a.Tool
	if decided {
		switch a.Status {
		case api.ApprovalApproved:
			head, fallback = ":white_check_mark: *Approved:* `"+tool+"`", "Approved: "+a.Tool
		case api.ApprovalDenied:
			head, fallback = ":x: *Denied:* `"+tool+"`", "Denied: "+a.Tool
		case api.ApprovalExpired:
			head, fallback = ":hourglass: *Expired:* `"+tool+"`", "Expired: "+a.Tool
		case api.ApprovalCancelled:
			head, fallback = ":no_entry_sign: *Cancelled:* `"+tool+"`", "Cancelled: "+a.Tool
		default:
			head, fallback = "*"+slackutilsx.EscapeMessage(string(a.Status))+":* `"+tool+"`", string(a.Status)+": "+a.Tool
		}
	}
	md := func(s string) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
	}
	blocks := []slack.Block{
		slack.NewSectionBlock(md(head), nil, nil, slack.SectionBlockOptionBlockID("head")),
		slack.NewSectionBlock(md("```"+showInput(a.Input)+"```"), nil, nil, slack.SectionBlockOptionBlockID("input")),
		slack.NewContextBlock("meta", md(fmt.Sprintf("Asked by %s · call `%s` · expires %s",
			who(a.RequestedBy), slackutilsx.EscapeMessage(a.CallID), when(a.ExpiresAt)))),
	}
	if a.OriginalInput != nil {
		blocks = append(blocks, slack.NewSectionBlock(md(showChanges(a)), nil, nil, slack.SectionBlockOptionBlockID("changes")))
	}
	if a.Quorum > 1 {
		blocks = append(blocks, slack.NewContextBlock("approvals", md(showApprovals(a))))
	}
	if !decided {
		approve := slack.NewButtonBlockElement(actionApprove, a.CallID, slack.NewTextBlockObject(slack.PlainTextType, "Approve", false, false)).WithStyle(slack.StylePrimary)
		deny := slack.NewButtonBlockElement(actionDeny, a.CallID, slack.NewTextBlockObject(slack.PlainTextType, "Deny", false, false)).WithStyle(slack.StyleDanger)
		return append(blocks, slack.NewActionBlock("approval", approve, deny)), fallback
	}
	var decision string
	switch a.Status {
	case api.ApprovalExpired:
		decision = "Nobody decided before it expired"
	case api.ApprovalCancelled:
		decision = "Its turn was cancelled before anyone decided"
	case api.ApprovalApproved:
		decision = "Approved by " + who(a.DecidedBy)
	case api.ApprovalDenied:
		decision = "Denied by " + who(a.DecidedBy)
	default:
		decision = "Decided by " + who(a.DecidedBy)
	}
	if a.DecidedAt != nil {
		decision += " " + when(*a.DecidedAt)
	}
	if a.Reason != "" && a.Status != api.ApprovalExpired && a.Status != api.ApprovalCancelled {
		decision += ": " + slackutilsx.EscapeMessage(truncate(a.Reason, 500))
	}
	return append(blocks, slack.NewSectionBlock(md(decision), nil, nil, slack.SectionBlockOptionBlockID("decision"))), fallback
}

// showInput is a call's input for a card: indented JSON, cut to
// maxInputBytes at a rune boundary, escaped, and unable to close the code
// block it sits in.
func showInput(input json.RawMessage) string {
	var buf bytes.Buffer
	s := string(input)
	if json.Indent(&buf, input, "", "  ") == nil {
		s = buf.String()
	}
	if len(s) > maxInputBytes {
		s = progress.TruncateUTF8(s, maxInputBytes) + "\n…"
	}
	if strings.TrimSpace(s) == "" {
		s = "{}"
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(slackutilsx.EscapeMessage(s), "```", "`\u200b`\u200b`")
}

// maxChangesShown bounds the changes a card lists.
const maxChangesShown = 10

// showChanges is how an approver's edit changed a call's input: a line
// per change, from what was asked to what runs.
func showChanges(a api.Approval) string {
	changes := api.DiffInput(a.OriginalInput, a.Input)
	var b strings.Builder
	b.WriteString(":pencil2: *Edited before approval* (what runs):")
	for i, c := range changes {
		if i == maxChangesShown {
			fmt.Fprintf(&b, "\n… and %d more", len(changes)-i)
			break
		}
		fmt.Fprintf(&b, "\n• %s: %s → %s", code(c.Path), code(orAbsent(c.From)), code(orAbsent(c.To)))
	}
	return b.String()
}

// showApprovals is "Approvals: 1 of 2 (<@U…>)".
func showApprovals(a api.Approval) string {
	s := fmt.Sprintf("Approvals: %d of %d", len(a.Approvals), a.Quorum)
	if len(a.Approvals) > 0 {
		names := make([]string, len(a.Approvals))
		for i, v := range a.Approvals {
			names[i] = who(v.By)
		}
		s += " (" + strings.Join(names, ", ") + ")"
	}
	return s
}

func orAbsent(v json.RawMessage) string {
	if len(v) == 0 {
		return "(absent)"
	}
	return string(v)
}

// code shows s as inline code, cut, escaped, unable to close its quotes.
func code(s string) string {
	return "`" + strings.ReplaceAll(slackutilsx.EscapeMessage(truncate(strings.ToValidUTF8(s, "\uFFFD"), 120)), "`", "'") + "`"
}

// who shows a principal: a Slack user as a mention, anyone else as text.
func who(principal string) string {
	if id, ok := strings.CutPrefix(principal, "slack:"); ok && userID.MatchString(id) {
		return "<@" + id + ">"
	}
	if principal == "" {
		principal = "unknown"
	}
	return "`" + strings.ReplaceAll(slackutilsx.EscapeMessage(truncate(principal, 100)), "`", "'") + "`"
}

// when shows a time in the reader's time zone (Slack's date formatting),
// with the UTC time as the fallback.
func when(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} at {time}|%s>", t.Unix(), t.UTC().Format(time.RFC3339))
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

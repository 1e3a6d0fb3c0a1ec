package slackbot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackutilsx"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// Sizes of what is posted.
const (
	// maxPostRunes is the most of an answer one message holds; a longer
	// answer is split.
	maxPostRunes = 3000
	// maxReasonRunes bounds a failed turn's reason as posted.
	maxReasonRunes = 500
)

// follower posts one turn's answers and tool activity into its thread.
type follower struct {
	b               *Bot
	channel, thread string
	// lines are the tool calls of the current model step, in order.
	lines []*toolLine
}

// toolLine is one tool call of a step, as it goes.
type toolLine struct {
	callID, tool string
	done, failed bool
	ms           int64
	parked       bool // waiting for a decision
	posted       bool // its result is posted
	parkPosted   bool // its "waiting" line is posted
}

// follow posts what a turn says from its session's stream, read from
// after, until the turn ends (through any park), for at most followFor. A
// failed read is followed again from the last event read, a second later.
func (f *follower) follow(ctx context.Context, h tool.Handle, sessionID, turnID string, after int64) {
	for ctx.Err() == nil {
		for e, err := range h.Follow(ctx, sessionID, after) {
			if err != nil {
				f.b.log.Warn("slackbot: reading a session's events", "session", sessionID, "err", err)
				break
			}
			after = e.Seq
			if e.TurnID == turnID && f.handle(ctx, e) {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	f.flush(context.WithoutCancel(ctx))
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		f.b.post(context.WithoutCancel(ctx), f.channel, f.thread, fmt.Sprintf("I stopped following this turn after %v; it goes on (session %s).", followFor, sessionID))
	}
}

// handle posts what an event of the turn says; true when the turn ended.
func (f *follower) handle(ctx context.Context, e api.Event) bool {
	switch e.Kind {
	case api.KindMessage:
		m, err := api.Decode[api.Message](e)
		if err != nil || m.Role != api.RoleAssistant || strings.TrimSpace(m.Text) == "" {
			return false
		}
		f.flush(ctx)
		for _, part := range splitText(m.Text, maxPostRunes) {
			f.b.post(ctx, f.channel, f.thread, part)
		}
	case api.KindActionsRequested:
		a, err := api.Decode[api.ActionsRequested](e)
		if err != nil {
			return false
		}
		f.flush(ctx) // what is left of the last step
		for _, act := range a.Actions {
			f.lines = append(f.lines, &toolLine{callID: act.CallID, tool: act.Tool})
		}
	case api.KindApprovalRequested:
		a, err := api.Decode[api.ApprovalRequested](e)
		if err != nil {
			return false
		}
		f.line(a.CallID, a.Tool).parked = true
		f.b.kickKeeper()
		if f.settled() {
			f.flush(ctx)
		}
	case api.KindActionResult:
		r, err := api.Decode[api.ActionResult](e)
		if err != nil {
			return false
		}
		l := f.line(r.CallID, r.Tool)
		l.done, l.failed, l.ms = true, r.IsError, r.DurationMs
		if f.settled() {
			f.flush(ctx)
		}
	case api.KindTurnCompleted:
		f.flush(ctx)
		return true
	case api.KindTurnFailed:
		fl, _ := api.Decode[api.TurnFailed](e)
		f.flush(ctx)
		reason := strings.TrimSpace(fl.Reason)
		if reason == "" {
			reason = "no reason given"
		}
		f.b.post(ctx, f.channel, f.thread, "⚠ The turn failed: "+truncate(reason, maxReasonRunes))
		return true
	}
	return false
}

// line returns the step's line of a call, adding one for a call it does
// not hold (a direct call of the turn, a parked call's late result).
func (f *follower) line(callID, tool string) *toolLine {
	for _, l := range f.lines {
		if l.callID == callID {
			return l
		}
	}
	l := &toolLine{callID: callID, tool: tool}
	f.lines = append(f.lines, l)
	return l
}

// settled reports whether every call of the step has its result or waits
// for a decision: the step's lines can be posted together.
func (f *follower) settled() bool {
	for _, l := range f.lines {
		if !l.done && !l.parked {
			return false
		}
	}
	return true
}

// flush posts the step's lines not yet posted, together in one context
// block, and forgets those finished.
func (f *follower) flush(ctx context.Context) {
	var out []string
	keep := f.lines[:0]
	for _, l := range f.lines {
		switch {
		case l.done && !l.posted:
			out = append(out, toolActivity(l.tool, !l.failed, l.ms))
			l.posted = true
		case l.parked && !l.done && !l.parkPosted:
			out = append(out, "⏸ "+slackutilsx.EscapeMessage(l.tool)+" waiting for approval")
			l.parkPosted = true
		}
		if !l.posted {
			keep = append(keep, l)
		}
	}
	f.lines = keep
	if len(out) == 0 {
		return
	}
	f.b.postActivity(ctx, f.channel, f.thread, out)
}

// toolActivity is a tool call's line: "⚙ inspect_pr ✓ 120 ms".
func toolActivity(tool string, ok bool, ms int64) string {
	mark := "✓"
	if !ok {
		mark = "✗"
	}
	return "⚙ " + slackutilsx.EscapeMessage(tool) + " " + mark + " " + duration(ms)
}

// duration formats a call's duration: 120 ms, 3.4 s, 2 min 5 s.
func duration(ms int64) string {
	switch {
	case ms < 1000:
		return fmt.Sprintf("%d ms", max(ms, 0))
	case ms < 60_000:
		return fmt.Sprintf("%.1f s", float64(ms)/1000)
	}
	return fmt.Sprintf("%d min %d s", ms/60_000, ms%60_000/1000)
}

// postActivity posts tool lines as one message of context blocks (a
// block holds at most 10 elements of at most 3000 characters: one element
// per block, lines joined).
func (b *Bot) postActivity(ctx context.Context, channelID, thread string, lines []string) {
	var blocks []slack.Block
	for _, chunk := range splitText(strings.Join(lines, "\n"), maxPostRunes) {
		if len(blocks) == 50 { // Slack's limit of blocks in a message
			break
		}
		blocks = append(blocks, slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, chunk, false, true)))
	}
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	fallback := truncate(strings.Join(lines, "\n"), maxPostRunes)
	if _, _, err := b.client.PostMessageContext(ctx, channelID, slack.MsgOptionBlocks(blocks...),
		slack.MsgOptionText(fallback, false), slack.MsgOptionTS(thread)); err != nil {
		b.log.Warn("slackbot: posting tool activity", "channel", channelID, "err", err)
	}
}

// splitText splits text into parts of at most limit runes, at paragraph
// breaks if it can, else at line breaks, else at spaces, else anywhere
// between runes; a boundary is taken only in the second half of a part,
// so that no part is tiny.
func splitText(text string, limit int) []string {
	text = strings.TrimSpace(text)
	var parts []string
	for utf8.RuneCountInString(text) > limit {
		cut := runeOffset(text, limit) // bytes of the first limit runes
		head := text[:cut]
		at := -1
		for _, sep := range []string{"\n\n", "\n", " "} {
			if i := strings.LastIndex(head, sep); i > 0 && utf8.RuneCountInString(head[:i]) >= limit/2 {
				at = i
				break
			}
		}
		if at < 0 {
			at = cut
		}
		if p := strings.TrimSpace(text[:at]); p != "" {
			parts = append(parts, p)
		}
		text = strings.TrimSpace(text[at:])
	}
	if text != "" {
		parts = append(parts, text)
	}
	return parts
}

// runeOffset returns the byte offset of the rune after the first n.
func runeOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// truncate cuts s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return s[:runeOffset(s, n-1)] + "…"
}

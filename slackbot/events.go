package slackbot

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/httpjson"
	"github.com/agentsdk/agentsdk/tool"
)

// KV keys of the channel's state, in the agent's namespace.
const (
	keyPrefix    = "slackbot/"
	keySignature = keyPrefix + "sig/"     // + signature: a request seen (replays)
	keyEvent     = keyPrefix + "event/"   // + event_id: an event acted on (Slack's retries)
	keyThread    = keyPrefix + "thread/"  // + channel/thread ts → session id
	keySession   = keyPrefix + "session/" // + session id → its thread (threadRef)
	keyCard      = keyPrefix + "card/"    // + call id → its card (cardRecord)
	keyOpen      = keyPrefix + "open/"    // + call id: a card not yet closed
)

// threadTTL is how long a thread's session is remembered.
const threadTTL = 90 * 24 * time.Hour

var (
	// conversationID, messageTS and eventID are the shapes of Slack's ids
	// the channel uses in keys.
	conversationID = regexp.MustCompile(`^[A-Z0-9]{2,40}$`)
	messageTS      = regexp.MustCompile(`^[0-9]{1,12}\.[0-9]{1,9}$`)
	eventID        = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
	// mention is a user mention in a message's text: <@U…> or <@U…|name>.
	mention = regexp.MustCompile(`<@([UW][A-Z0-9]+)(\|[^>]*)?>`)
)

// message is a message for the agent: a mention in a channel or a
// direct message.
type message struct {
	channel, user, text, ts, thread string
	isMention                       bool
}

// threadRef is where a session's thread is.
type threadRef struct {
	Channel string `json:"channel"`
	Thread  string `json:"thread"`
}

// guarded makes a route's handler of fn: a panic is answered, a request
// before Attach is 503, a replayed one refused, and fn gets the body read.
func (b *Bot) guarded(fn func(h tool.Handle, w http.ResponseWriter, r *http.Request, body []byte)) func(tool.Handle, http.ResponseWriter, *http.Request) {
	return func(h tool.Handle, w http.ResponseWriter, r *http.Request) {
		defer b.recovered(w, r)
		if !b.ready(w) || !b.checkReplay(r.Context(), h.Host.KV, w, r) {
			return
		}
		if body, ok := readBody(w, r); ok {
			fn(h, w, r, body)
		}
	}
}

// events serves POST /events: the Events API.
func (b *Bot) events(h tool.Handle, w http.ResponseWriter, r *http.Request, body []byte) {
	var outer struct {
		Type      string          `json:"type"`
		Challenge string          `json:"challenge"`
		EventID   string          `json:"event_id"`
		Event     json.RawMessage `json:"event"`
	}
	if err := json.Unmarshal(body, &outer); err != nil {
		httpjson.Error(w, api.Errorf(api.CodeMalformedJSON, "the event is not a JSON object: %v", err))
		return
	}
	switch outer.Type {
	case slackevents.URLVerification:
		if outer.Challenge == "" || len(outer.Challenge) > 1024 {
			badRequest(w, "url_verification without a challenge")
			return
		}
		httpjson.Write(w, http.StatusOK, map[string]string{"challenge": outer.Challenge})
	case slackevents.AppRateLimited:
		b.log.Warn("slackbot: Slack is rate-limiting the app's events")
		httpjson.Write(w, http.StatusOK, map[string]bool{"ok": true})
	case slackevents.CallbackEvent:
		b.callback(h, w, r, body, outer.EventID, outer.Event)
	case "":
		badRequest(w, "the event has no type")
	default:
		badRequest(w, "unknown event type %q (expected url_verification or event_callback)", truncate(outer.Type, 64))
	}
}

// readBody reads a request's body (the serve host read it under the
// route's limit already).
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	switch {
	case err != nil:
		badRequest(w, "reading the request body: %v", err)
		return nil, false
	case len(body) > MaxBodyBytes:
		httpjson.Error(w, api.Errorf(api.CodeBodyTooLarge, "the request body is over %d bytes", MaxBodyBytes))
		return nil, false
	}
	return body, true
}

// callback handles an event_callback: it acknowledges at once and answers
// a mention or a direct message in the background, once per event id.
func (b *Bot) callback(h tool.Handle, w http.ResponseWriter, r *http.Request, body []byte, id string, inner json.RawMessage) {
	if !eventID.MatchString(id) {
		badRequest(w, "event_callback without a valid event_id")
		return
	}
	if len(inner) == 0 || string(inner) == "null" {
		badRequest(w, "event_callback without an event")
		return
	}
	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err != nil {
		badRequest(w, "the event could not be read: %v", truncate(err.Error(), 300))
		return
	}
	var m message
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		if e.BotID != "" || e.Edited != nil {
			ignored(w)
			return
		}
		m = message{channel: e.Channel, user: e.User, text: e.Text, ts: e.TimeStamp, thread: e.ThreadTimeStamp, isMention: true}
	case *slackevents.MessageEvent:
		// Direct messages only; not the bot's own, nor edits, deletions
		// or other subtypes.
		if e.ChannelType != "im" || e.SubType != "" || e.BotID != "" {
			ignored(w)
			return
		}
		m = message{channel: e.Channel, user: e.User, text: e.Text, ts: e.TimeStamp, thread: e.ThreadTimeStamp}
	default:
		ignored(w) // an event the channel does not act on
		return
	}
	switch {
	case !conversationID.MatchString(m.channel):
		badRequest(w, "the event has no valid channel")
		return
	case !userID.MatchString(m.user):
		badRequest(w, "the event has no valid user")
		return
	case !messageTS.MatchString(m.ts) || m.thread != "" && !messageTS.MatchString(m.thread):
		badRequest(w, "the event has no valid ts")
		return
	}
	// Slack retries an event it thinks was not received: act once.
	_, err = h.Host.KV.CompareAndSet(r.Context(), keyEvent+id, 0, []byte(m.channel), &tool.KVSetOptions{TTL: eventTTL})
	switch {
	case errors.Is(err, tool.ErrVersionConflict):
		b.log.Info("slackbot: an event already acted on", "event", id, "retry", r.Header.Get(headerRetryNum))
		ignored(w)
		return
	case err != nil:
		b.log.Error("slackbot: recording an event", "event", id, "err", err)
		httpjson.Error(w, api.Errorf(api.CodeInternal, "recording the event: %v", err))
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]bool{"ok": true})
	b.accepted.Add(1)
	b.goBackground(r.Context(), "answering a message", followFor+time.Minute, func(ctx context.Context) { b.converse(ctx, h, m) })
}

// ignored acknowledges an event the channel does not act on.
func ignored(w http.ResponseWriter) { httpjson.Write(w, http.StatusOK, map[string]bool{"ok": true}) }

// converse sends a message into its thread's session and posts what the
// turn answers.
func (b *Bot) converse(ctx context.Context, h tool.Handle, m message) {
	bot := b.botUserID(ctx)
	if bot != "" && m.user == bot {
		return
	}
	thread := m.thread
	if thread == "" {
		thread = m.ts // a new top-level message: the answer goes in a thread under it
	}
	text := stripMentions(m.text, bot, m.isMention)
	if text == "" {
		b.post(ctx, m.channel, thread, "Ask me something: write your question after the mention.")
		return
	}
	select {
	case b.followers <- struct{}{}:
		defer func() { <-b.followers }()
	default:
		b.post(ctx, m.channel, thread, "I am answering too many conversations at once; please send that again in a minute.")
		return
	}
	key := m.channel + "/" + thread
	// Where the turn's events will start: after the session's last event.
	var after int64
	var known string // the thread's session, if it has one
	if id, err := h.Host.KV.Get(ctx, keyThread+key); err == nil {
		if s, err := h.GetSession(ctx, ChannelID, string(id.Value)); err == nil {
			after, known = s.LastSeq, s.ID
		}
	}
	send := func() (string, string, error) {
		return h.Send(ctx, ChannelID, text, &tool.SendOptions{Key: key, Principal: "slack:" + m.user})
	}
	sessionID, turnID, err := send()
	if errors.Is(err, api.ErrSessionBusy) && known != "" && turnEnds(ctx, h, known, after, busyWait) {
		// A reply to an answer just posted, while its turn was still
		// ending (recording its usage): it is no "previous message".
		sessionID, turnID, err = send()
	}
	switch {
	case errors.Is(err, api.ErrSessionBusy):
		b.post(ctx, m.channel, thread, "I am still working on the previous message (or waiting for an approval); send this one again when I have answered.")
		return
	case err != nil:
		b.log.Error("slackbot: sending a message to its session", "channel", m.channel, "thread", thread, "err", err)
		b.post(ctx, m.channel, thread, "I could not start on that: "+truncate(api.AsError(err).Message, 300))
		return
	}
	b.remember(ctx, h.Host.KV, sessionID, key, threadRef{Channel: m.channel, Thread: thread})
	f := &follower{b: b, channel: m.channel, thread: thread}
	f.follow(ctx, h, sessionID, turnID, after)
}

// remember records a thread's session, both ways: the card keeper finds
// a session's thread, and the next message in the thread where its turn
// starts.
func (b *Bot) remember(ctx context.Context, kv tool.KV, sessionID, key string, ref threadRef) {
	v, _ := json.Marshal(ref)
	if _, err := kv.Set(ctx, keySession+sessionID, v, &tool.KVSetOptions{TTL: threadTTL}); err != nil {
		b.log.Warn("slackbot: recording a session's thread", "session", sessionID, "err", err)
	}
	if _, err := kv.Set(ctx, keyThread+key, []byte(sessionID), &tool.KVSetOptions{TTL: threadTTL}); err != nil {
		b.log.Warn("slackbot: recording a thread's session", "session", sessionID, "err", err)
	}
}

// sessionThread returns the thread of a session the channel opened.
func (b *Bot) sessionThread(ctx context.Context, kv tool.KV, sessionID string) (threadRef, bool) {
	e, err := kv.Get(ctx, keySession+sessionID)
	if err != nil {
		return threadRef{}, false
	}
	var ref threadRef
	if json.Unmarshal(e.Value, &ref) != nil || ref.Channel == "" {
		return threadRef{}, false
	}
	return ref, true
}

// stripMentions removes the bot's mentions from a message's text; when
// the bot's id is unknown, a mention's leading mentions.
func stripMentions(text, bot string, isMention bool) string {
	if bot != "" {
		text = mention.ReplaceAllStringFunc(text, func(s string) string {
			if mention.FindStringSubmatch(s)[1] == bot {
				return ""
			}
			return s
		})
	} else if isMention {
		for {
			t := strings.TrimSpace(text)
			loc := mention.FindStringIndex(t)
			if loc == nil || loc[0] != 0 {
				text = t
				break
			}
			text = t[loc[1]:]
		}
	}
	return strings.TrimSpace(text)
}

// post posts a short text into a thread, escaped.
func (b *Bot) post(ctx context.Context, channelID, thread, text string) {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	opts := []slack.MsgOption{slack.MsgOptionText(text, true)}
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	if _, _, err := b.client.PostMessageContext(ctx, channelID, opts...); err != nil {
		b.log.Warn("slackbot: posting a message", "channel", channelID, "err", err)
	}
}

// busyWait is how long a message to a busy session waits for its running
// turn to end before it is refused: long enough for a turn that has
// answered to close, far shorter than one waiting for an approval.
const busyWait = 3 * time.Second

// turnEnds reports whether a turn of the session ends, after seq after,
// within wait.
func turnEnds(ctx context.Context, h tool.Handle, sessionID string, after int64, wait time.Duration) bool {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for e, err := range h.Follow(wctx, sessionID, after) {
		if err != nil {
			return false
		}
		if e.Kind == api.KindTurnCompleted || e.Kind == api.KindTurnFailed {
			return true
		}
	}
	return false
}

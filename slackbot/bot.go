// Package slackbot is the built-in Slack channel: the Events API and
// interactivity endpoints of a Slack app, mounted by the serve host at
// /<slug>/channels/slack/events and /<slug>/channels/slack/interactivity.
//
//   - A mention of the bot in a channel, or a direct message, is a message
//     into a session: one session per Slack thread (the session key is
//     <channel>/<thread ts>), opened by the first message and resumed by
//     the replies. The answers, and a compact line per tool call, are
//     posted into the thread as the turn streams them.
//   - Every parked call gets an approval card (Block Kit, Approve / Deny):
//     in its session's thread when the session is on this channel, and in
//     Config.ApprovalsChannel when one is configured. A click decides the
//     call as the person who clicked (principal slack:<user id>); Deny asks
//     for a reason in a modal. A card is updated when its call is decided,
//     however it was decided (Slack, HTTP, the CLI) or when it expires.
//
// Every request is checked against Slack's signature (v0, HMAC-SHA256 of
// the timestamp and the raw body with the signing secret), its timestamp
// (±5 minutes) and, in the store shared by every host, against replays,
// before anything is parsed. Slack's retries of an event are recognised
// by its event_id and acted on once.
//
// The state the channel keeps lives in the agent's KV namespace under
// slackbot/: replayed signatures, events seen, threads and their
// sessions, cards.
//
//	bot, err := slackbot.New(slackbot.Config{BotToken: os.Getenv("SLACK_BOT_TOKEN"), SigningSecret: os.Getenv("SLACK_SIGNING_SECRET")})
//	…
//	h, err := host.New(set, &host.Options{Channels: append(channels, bot.Channel()), Slack: bot.Client(), …})
//	…
//	err = h.Start(ctx)
//	bot.Attach(ctx, h.Handle())
//
// The channel is made like any other: everything it does to the host —
// send a message into a thread's session, follow the turn it started,
// read and decide parked calls, keep its state in KV — goes through the
// tool.Handle it is attached to.
package slackbot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"

	"github.com/agentsdk/agentsdk/channel"
	"github.com/agentsdk/agentsdk/tool"
)

// ChannelID is the id of the channel the bot defines.
const ChannelID = "slack"

// Config configures a [Bot].
type Config struct {
	// BotToken (xoxb-…) and SigningSecret come from the environment
	// (agentmain reads the variables agent.yaml names). Both are required.
	BotToken, SigningSecret string
	// APIURL is the Web API's base URL, ending with /; "" means slack-go's
	// default (https://slack.com/api/).
	APIURL string
	// ApprovalsChannel, if set, gets a card for every parked call, not
	// only those of Slack sessions (which get theirs in their thread).
	ApprovalsChannel string
	// Allow lists who may decide approvals: user ids (U…, W…) and user
	// group ids (S…). Empty: anyone in the workspace.
	Allow []string
	// Logger receives the channel's logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Limits and periods.
const (
	// MaxBodyBytes bounds a request body of either route.
	MaxBodyBytes = 1 << 20
	// maxSkew is how far a request's timestamp may be from now.
	maxSkew = 5 * time.Minute
	// replayTTL is how long a signature is remembered: longer than the
	// timestamps accepted.
	replayTTL = 6 * time.Minute
	// eventTTL is how long an event id is remembered (Slack retries within
	// about an hour).
	eventTTL = time.Hour
	// followFor bounds how long a turn's answers are followed and posted.
	followFor = 30 * time.Minute
	// keeperEvery is the card keeper's period.
	keeperEvery = time.Second
	// groupsTTL is how long a user group's members are cached.
	groupsTTL = time.Minute
	// maxFollowers bounds the turns followed at once.
	maxFollowers = 256
	// apiTimeout bounds each Web API call.
	apiTimeout = 15 * time.Second
)

// Bot is the Slack channel of an agent. Make it with [New], give its
// [Bot.Channel] and [Bot.Client] to the host, and [Bot.Attach] it to the
// host once started.
type Bot struct {
	cfg     Config
	client  *slack.Client
	log     *slog.Logger
	now     func() time.Time
	channel *channel.Channel
	users   map[string]bool // Config.Allow's users
	groups  []string        // Config.Allow's groups

	mu         sync.Mutex
	h          tool.Handle     // Attach's
	ctx        context.Context // Attach's; nil before Attach
	botUser    string          // the bot's user id (auth.test), once known
	botAsked   time.Time       // when auth.test was last tried
	groupCache map[string]groupMembers
	carded     map[string]bool      // calls whose card claim is settled (posted, or another host's)
	retryAt    map[string]time.Time // calls whose card failed: not before
	kick       chan struct{}        // runs the keeper now

	followers chan struct{} // a slot per followed turn
	wg        sync.WaitGroup
	accepted  atomic.Int64 // events acted on (tests)
}

type groupMembers struct {
	users map[string]bool
	at    time.Time
	err   error
}

var (
	userID  = regexp.MustCompile(`^[UW][A-Z0-9]{2,40}$`)
	groupID = regexp.MustCompile(`^S[A-Z0-9]{2,40}$`)
)

// New checks cfg and makes the Slack client.
func New(cfg Config) (*Bot, error) {
	switch {
	case strings.TrimSpace(cfg.BotToken) == "":
		return nil, errors.New("slackbot: the bot token is empty: set the variable agent.yaml's slack.botTokenEnv names (SLACK_BOT_TOKEN by default)")
	case strings.TrimSpace(cfg.SigningSecret) == "":
		return nil, errors.New("slackbot: the signing secret is empty: set the variable agent.yaml's slack.signingSecretEnv names (SLACK_SIGNING_SECRET by default)")
	case cfg.APIURL != "" && !strings.HasSuffix(cfg.APIURL, "/"):
		return nil, fmt.Errorf("slackbot: the API URL %q must end with /", cfg.APIURL)
	case strings.ContainsAny(cfg.ApprovalsChannel, " \t\r\n"):
		return nil, fmt.Errorf("slackbot: the approvals channel %q is not a channel id (C…)", cfg.ApprovalsChannel)
	}
	b := &Bot{cfg: cfg, log: cfg.Logger, now: cfg.Now, users: map[string]bool{},
		groupCache: map[string]groupMembers{}, carded: map[string]bool{}, retryAt: map[string]time.Time{},
		kick: make(chan struct{}, 1), followers: make(chan struct{}, maxFollowers)}
	for _, a := range cfg.Allow {
		switch {
		case userID.MatchString(a):
			b.users[a] = true
		case groupID.MatchString(a):
			b.groups = append(b.groups, a)
		default:
			return nil, fmt.Errorf("slackbot: allow: %q is neither a user id (U…, W…) nor a user group id (S…)", a)
		}
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.now == nil {
		b.now = time.Now
	}
	// Rate-limited calls (429) are retried after Slack's Retry-After.
	opts := []slack.Option{slack.OptionHTTPClient(&http.Client{Timeout: apiTimeout}), slack.OptionRetry(3)}
	if cfg.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(cfg.APIURL))
	}
	b.client = slack.New(cfg.BotToken, opts...)
	ch, err := channel.New(ChannelID, channel.Config{
		Description: "Slack: a mention or a direct message opens a session per thread; approval cards",
		Routes: []channel.Route{
			{Method: http.MethodPost, Path: "/events", Auth: channel.Verify(b.verify), MaxBodyBytes: MaxBodyBytes, Handler: b.guarded(b.events)},
			{Method: http.MethodPost, Path: "/interactivity", Auth: channel.Verify(b.verify), MaxBodyBytes: MaxBodyBytes, Handler: b.guarded(b.interactivity)},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("slackbot: %w", err)
	}
	b.channel = ch
	return b, nil
}

// Channel returns the "slack" channel: POST /events and POST
// /interactivity, both verified with Slack's signature.
func (b *Bot) Channel() *channel.Channel { return b.channel }

// Client returns the bot's Slack client (host.Options.Slack, that is
// what a tool reaches with platform.Slack(call.Host)).
func (b *Bot) Client() *slack.Client { return b.client }

// Attach connects the bot to its host's handle (host.Host.Handle), once
// the host has started: the routes answer 503 until then. It starts the
// card keeper, which runs until ctx ends.
func (b *Bot) Attach(ctx context.Context, h tool.Handle) {
	if ctx == nil {
		b.log.Error("slackbot: Attach needs a context; the routes stay unavailable")
		return
	}
	b.mu.Lock()
	if b.ctx != nil {
		b.mu.Unlock()
		b.log.Warn("slackbot: attached twice; the second Attach is ignored")
		return
	}
	b.h, b.ctx = h, ctx
	b.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.keep(ctx)
	}()
}

// attached returns the host's handle and Attach's context; a nil context
// before Attach.
func (b *Bot) attached() (tool.Handle, context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.h, b.ctx
}

// kv returns the host's KV (the agent's namespace).
func (b *Bot) kv() tool.KV {
	h, _ := b.attached()
	return h.Host.KV
}

// goBackground runs fn in the background: under parent's values but not
// its cancellation (a request's context ends with its answer), within
// limit, and ended with Attach's context.
func (b *Bot) goBackground(parent context.Context, what string, limit time.Duration, fn func(ctx context.Context)) {
	_, actx := b.attached()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), limit)
	stop := context.AfterFunc(actx, cancel)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer stop()
		defer cancel()
		defer func() {
			if v := recover(); v != nil {
				b.log.Error("slackbot: panic", "while", what, "panic", v)
			}
		}()
		fn(ctx)
	}()
}

// wait waits for the bot's goroutines (tests: after Attach's context
// ended).
func (b *Bot) wait() { b.wg.Wait() }

// botUserID returns the bot's user id, asking auth.test once (again at
// most once a minute after a failure); "" while unknown.
func (b *Bot) botUserID(ctx context.Context) string {
	b.mu.Lock()
	if b.botUser != "" || b.now().Sub(b.botAsked) < time.Minute {
		defer b.mu.Unlock()
		return b.botUser
	}
	b.botAsked = b.now()
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	resp, err := b.client.AuthTestContext(ctx)
	if err != nil {
		b.log.Warn("slackbot: auth.test", "err", err)
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.botUser = resp.UserID
	return b.botUser
}

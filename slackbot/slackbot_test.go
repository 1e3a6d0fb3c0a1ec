package slackbot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/channel"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/slacktest"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

const (
	secret   = "8f742231b10e8888abcd99yyyzzz85a5"
	apiToken = "test-token"
	botUser  = "UBOT0001"
	general  = "CGENERAL1"
	wait     = 10 * time.Second
)

// env is a host on SQLite with the bot attached, served over HTTP, its
// model a scripted fake, its Slack a fake Web API.
type env struct {
	t      *testing.T
	api    *slacktest.Server
	fake   *fakemodel.Server
	bot    *Bot
	h      *host.Host
	base   string // the serve host's URL
	send   *slacktest.Sender
	ran    *atomic.Int32 // runs of deploy
	cancel context.CancelFunc
}

type deployInput struct {
	Service string `json:"service"`
}

// tools: deploy (always gated), expiring (gated, expires at once),
// inspect (not gated).
func tools(t *testing.T, ran *atomic.Int32) *tool.Set {
	deploy, err := tool.New("deploy", tool.Config{Description: "Deploy a service.", NeedsApproval: tool.Always},
		func(ctx context.Context, call *tool.Call, in deployInput) (any, error) {
			ran.Add(1)
			return map[string]string{"deployed": in.Service}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	expiring, err := tool.New("expiring", tool.Config{Description: "Expires fast.", NeedsApproval: tool.Always, ApprovalTimeout: 3 * time.Second},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "ran", nil })
	if err != nil {
		t.Fatal(err)
	}
	inspect, err := tool.New("inspect", tool.Config{Description: "Inspect a service."},
		func(ctx context.Context, call *tool.Call, in deployInput) (any, error) { return "fine", nil })
	if err != nil {
		t.Fatal(err)
	}
	release, err := tool.New("release", tool.Config{Description: "Release a service to production.", NeedsApproval: tool.Always,
		Approval: &tool.ApprovalPolicy{Roles: []string{"deployer"}, NotRequester: true, Quorum: 2}},
		func(ctx context.Context, call *tool.Call, in deployInput) (any, error) {
			ran.Add(1)
			return map[string]string{"released": in.Service}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(deploy, expiring, inspect, release)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func newEnv(t *testing.T, cfg Config, script ...fakemodel.Reply) *env {
	t.Helper()
	return newEnvWith(t, cfg, nil, script...)
}

// newEnvWith is newEnv with the host options opts changes.
func newEnvWith(t *testing.T, cfg Config, opts func(*host.Options), script ...fakemodel.Reply) *env {
	t.Helper()
	e := &env{t: t, api: slacktest.NewServer(), fake: fakemodel.New(script...), ran: &atomic.Int32{}}
	e.api.Token = "xoxb-test"
	t.Cleanup(e.api.Close)
	t.Cleanup(e.fake.Close)
	cfg.BotToken, cfg.SigningSecret, cfg.APIURL = "xoxb-test", secret, e.api.APIURL()
	bot, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.bot = bot
	state := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(state, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: e.fake.AnthropicURL(), MaxTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	o := &host.Options{StateRoot: state, Store: st, Model: p, LeaseTTL: time.Second,
		Channels: []*channel.Channel{bot.Channel()}, Slack: bot.Client()}
	if opts != nil {
		opts(o)
	}
	h, err := host.New(tools(t, e.ran), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	e.h = h
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	t.Cleanup(func() { cancel(); bot.wait() })
	bot.Attach(ctx, h.Handle())
	srv, err := serve.New(h, &serve.Options{Slug: "agent", Token: apiToken, ApprovalWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	e.base = ts.URL
	e.send = &slacktest.Sender{URL: ts.URL + serve.ChannelPath("agent", ChannelID), Secret: secret}
	return e
}

// post sends a signed request and returns its status and body.
func (e *env) post(path string, body []byte, opts *slacktest.SendOptions) (int, string) {
	e.t.Helper()
	resp, b, err := e.send.Send(path, body, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// mention sends an app_mention by user in channel (in thread, if set) and
// expects it accepted.
func (e *env) mention(channelID, user, text, thread string) (ts string) {
	e.t.Helper()
	ts = slacktest.NewTS()
	if status, body := e.post("/events", slacktest.EventCallback(slacktest.Event{Type: "app_mention", Channel: channelID, User: user,
		Text: "<@" + botUser + "> " + text, TS: ts, ThreadTS: thread}), nil); status != http.StatusOK {
		e.t.Fatalf("mention: %d %s", status, body)
	}
	return ts
}

// posted waits until a message with text containing want is posted in
// thread, and returns it.
func (e *env) posted(thread, want string) slacktest.Call {
	e.t.Helper()
	var found slacktest.Call
	calls, ok := e.api.WaitFor("chat.postMessage", wait, func(cs []slacktest.Call) bool {
		for _, c := range cs {
			if c.ThreadTS() == thread && (strings.Contains(c.Text(), want) || strings.Contains(c.BlockText(), want)) {
				found = c
				return true
			}
		}
		return false
	})
	if !ok {
		e.t.Fatalf("nothing posted in thread %s with %q; posted: %s", thread, want, texts(calls))
	}
	return found
}

// card waits for an approval card posted in channelID (thread, if set)
// and returns its call id and the post.
func (e *env) card(channelID, thread string) (string, slacktest.Call) {
	e.t.Helper()
	var found slacktest.Call
	var callID string
	calls, ok := e.api.WaitFor("chat.postMessage", wait, func(cs []slacktest.Call) bool {
		for _, c := range cs {
			if id := c.Button(actionApprove); id != "" && c.Channel() == channelID && c.ThreadTS() == thread {
				found, callID = c, id
				return true
			}
		}
		return false
	})
	if !ok {
		e.t.Fatalf("no card in %s/%s; posted: %s", channelID, thread, texts(calls))
	}
	return callID, found
}

// updated waits for a chat.update of the message ts whose blocks contain
// want.
func (e *env) updated(channelID, ts, want string) slacktest.Call {
	e.t.Helper()
	var found slacktest.Call
	calls, ok := e.api.WaitFor("chat.update", wait, func(cs []slacktest.Call) bool {
		for _, c := range cs {
			if c.Channel() == channelID && c.TS() == ts && strings.Contains(c.BlockText(), want) {
				found = c
				return true
			}
		}
		return false
	})
	if !ok {
		e.t.Fatalf("card %s/%s not updated with %q; updates: %s", channelID, ts, want, texts(calls))
	}
	if found.Button(actionApprove) != "" || found.Button(actionDeny) != "" {
		e.t.Errorf("the updated card still has buttons: %s", found.Params.Get("blocks"))
	}
	return found
}

// ephemeral waits for an ephemeral message to user containing want.
func (e *env) ephemeral(user, want string) {
	e.t.Helper()
	calls, ok := e.api.WaitFor("chat.postEphemeral", wait, func(cs []slacktest.Call) bool {
		for _, c := range cs {
			if c.Params.Get("user") == user && strings.Contains(c.Text(), want) {
				return true
			}
		}
		return false
	})
	if !ok {
		e.t.Fatalf("no ephemeral %q to %s; ephemerals: %s", want, user, texts(calls))
	}
}

// click clicks a card's button.
func (e *env) click(user, action, callID string, card slacktest.Call) (int, string) {
	e.t.Helper()
	return e.post("/interactivity", slacktest.BlockActions(slacktest.Click{User: user, Channel: card.Channel(), MessageTS: card.AnsweredTS(),
		ThreadTS: card.ThreadTS(), ActionID: action, BlockID: "approval", Value: callID}), nil)
}

func (e *env) approval(callID string) api.Approval {
	e.t.Helper()
	a, err := e.h.Approvals().Get(context.Background(), callID)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// sessions lists the host's sessions.
func (e *env) sessions() []api.Session {
	e.t.Helper()
	list, _, err := e.h.Sessions().List(context.Background(), store.Page{Limit: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	return list
}

// turns counts the model turns of a session.
func (e *env) turns(sessionID string) int {
	evs, err := e.h.Sessions().Events(context.Background(), sessionID, 0, 10000)
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Kind == api.KindTurnStarted {
			n++
		}
	}
	return n
}

func texts(calls []slacktest.Call) string {
	var b strings.Builder
	for _, c := range calls {
		fmt.Fprintf(&b, "\n  %s %s/%s %q %s", c.Method, c.Channel(), c.ThreadTS(), truncate(c.Text(), 200), truncate(c.Params.Get("blocks"), 300))
	}
	return b.String()
}

// eventually waits until ok holds.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSignatures: a valid signature is accepted; a wrong secret, a stale
// or future timestamp, a replay, a body altered after signing and missing
// headers are 401 — and a refused request starts nothing.
func TestSignatures(t *testing.T) {
	e := newEnv(t, Config{}, fakemodel.Reply{Text: []string{"Hi."}})
	mention := func() []byte {
		return slacktest.EventCallback(slacktest.Event{Type: "app_mention", Channel: general, User: "UALICE01", Text: "<@" + botUser + "> hello"})
	}
	now := time.Now()
	refused := map[string]struct {
		body []byte
		opts *slacktest.SendOptions
	}{
		"wrong secret":   {mention(), &slacktest.SendOptions{Secret: "not-the-secret"}},
		"stale":          {mention(), &slacktest.SendOptions{At: now.Add(-6 * time.Minute)}},
		"future":         {mention(), &slacktest.SendOptions{At: now.Add(6 * time.Minute)}},
		"altered body":   {mention(), &slacktest.SendOptions{Mutate: func(b []byte) []byte { return bytes.Replace(b, []byte("hello"), []byte("hellO"), 1) }}},
		"not v0":         {mention(), &slacktest.SendOptions{Signature: "v1=00"}},
		"not hex":        {mention(), &slacktest.SendOptions{Signature: "v0=zz"}},
		"empty":          {mention(), &slacktest.SendOptions{Signature: "v0="}},
		"interactivity ": {slacktest.BlockActions(slacktest.Click{User: "UALICE01", ActionID: "approve", Value: "x"}), &slacktest.SendOptions{Secret: "nope"}},
	}
	for name, c := range refused {
		path := "/events"
		if strings.HasPrefix(name, "interactivity") {
			path = "/interactivity"
		}
		if status, body := e.post(path, c.body, c.opts); status != http.StatusUnauthorized {
			t.Errorf("%s: %d %s", name, status, body)
		}
	}
	// No headers at all.
	req, _ := http.NewRequest("POST", e.send.URL+"/events", bytes.NewReader(mention()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unsigned: %d", resp.StatusCode)
	}

	// A replay: the same request (same timestamp, same body) twice.
	body := mention()
	at := time.Now()
	if status, b := e.post("/events", body, &slacktest.SendOptions{At: at}); status != http.StatusOK {
		t.Fatalf("valid: %d %s", status, b)
	}
	if status, b := e.post("/events", body, &slacktest.SendOptions{At: at}); status != http.StatusUnauthorized || !strings.Contains(b, "replayed") {
		t.Errorf("replay: %d %s", status, b)
	}
	// The same signature in upper-case hex is the same signature.
	sig := slacktest.Sign(secret, strconv.FormatInt(at.Unix(), 10), body)
	if status, b := e.post("/events", body, &slacktest.SendOptions{At: at, Signature: "v0=" + strings.ToUpper(sig[3:])}); status != http.StatusUnauthorized || !strings.Contains(b, "replayed") {
		t.Errorf("replay in upper case: %d %s", status, b)
	}
	// A replayed url_verification too.
	uv := slacktest.URLVerification("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P")
	if status, b := e.post("/events", uv, &slacktest.SendOptions{At: at}); status != http.StatusOK || !strings.Contains(b, `"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"`) {
		t.Errorf("url_verification: %d %s", status, b)
	}
	if status, _ := e.post("/events", uv, &slacktest.SendOptions{At: at}); status != http.StatusUnauthorized {
		t.Errorf("url_verification replayed: %d", status)
	}

	// Only the valid mention started anything: one session, one answer.
	eventually(t, "the answer", func() bool { return len(e.api.Calls("chat.postMessage")) >= 1 })
	time.Sleep(300 * time.Millisecond)
	if got := e.sessions(); len(got) != 1 {
		t.Errorf("sessions: %+v", got)
	}
	if got := e.bot.accepted.Load(); got != 1 {
		t.Errorf("events acted on: %d", got)
	}
	if got := e.api.Calls("chat.postMessage"); len(got) != 1 || got[0].Text() != "Hi." {
		t.Errorf("posted: %s", texts(got))
	}
}

// TestHostileInput: malformed, unknown and incomplete requests with valid
// signatures are 4xx, never 5xx, and start nothing.
func TestHostileInput(t *testing.T) {
	e := newEnv(t, Config{})
	events := []string{
		``, `not json`, `[1,2]`, `"str"`, `{}`, `{"type":7}`, `{"type":"nonsense"}`,
		`{"type":"url_verification"}`,
		`{"type":"event_callback"}`,
		`{"type":"event_callback","event_id":"Ev1"}`,
		`{"type":"event_callback","event_id":"Ev1","event":null}`,
		`{"type":"event_callback","event_id":"Ev1","event":{"type":"no_such_event"}}`,
		`{"type":"event_callback","event_id":"Ev1","event":{"type":"app_mention"}}`,
		`{"type":"event_callback","event_id":"Ev2","event":{"type":"app_mention","user":"UALICE01","channel":"C1X","ts":"nope","text":"hi"}}`,
		`{"type":"event_callback","event_id":"Ev3","event":{"type":"app_mention","user":"../../x","channel":"C1X","ts":"1.2","text":"hi"}}`,
		`{"type":"event_callback","event_id":"Ev4","event":{"type":"app_mention","user":"UALICE01","channel":"c/../x","ts":"1.2","text":"hi"}}`,
		`{"type":"event_callback","event_id":"Ev 5","event":{"type":"app_mention","user":"UALICE01","channel":"C1X","ts":"1.2","text":"hi"}}`,
		`{"type":"event_callback","event_id":"Ev6","event":{"type":"app_mention","user":{"id":1},"channel":"C1X","ts":"1.2"}}`,
	}
	for _, body := range events {
		status, b := e.post("/events", []byte(body), nil)
		if status < 400 || status >= 500 {
			t.Errorf("event %s: %d %s", body, status, b)
		}
	}
	interactions := []string{
		``, `%zz`, `payload=`, `payload=notjson`, `payload=%7B%7D`,
		form(`{"type":"block_actions","user":{"id":"UALICE01"}}`),
		form(`{"type":"block_actions","user":{"id":"UALICE01"},"actions":[{"action_id":"launch","value":"x"}]}`),
		form(`{"type":"block_actions","user":{"id":"UALICE01"},"actions":[{"action_id":"approve","value":""}]}`),
		form(`{"type":"block_actions","user":{"id":"UALICE01"},"actions":[{"action_id":"approve","value":"a b"}]}`),
		form(`{"type":"block_actions","actions":[{"action_id":"approve","value":"tool_x"}]}`),
		form(`{"type":"shortcut","user":{"id":"UALICE01"}}`),
		form(`{"type":"view_submission","user":{"id":"UALICE01"},"view":{"callback_id":"other"}}`),
		form(`{"type":"view_submission","user":{"id":"UALICE01"},"view":{"callback_id":"agentsdk_deny","private_metadata":"{"}}`),
		form(`{"type":"view_submission","user":{"id":"UALICE01"},"view":{"callback_id":"agentsdk_deny","private_metadata":"{\"callId\":\"\"}"}}`),
		form(`{"type":"block_actions","user":{"id":"UALICE01"},"actions":[null]}`),
	}
	for _, body := range interactions {
		status, b := e.post("/interactivity", []byte(body), nil)
		if status < 400 || status >= 500 {
			t.Errorf("interaction %s: %d %s", body, status, b)
		}
	}
	// Events the channel does not act on are acknowledged and ignored.
	for _, ev := range []slacktest.Event{
		{Type: "message", Channel: "CPUBLIC1", ChannelType: "channel", User: "UALICE01", Text: "chatter"},
		{Type: "message", Channel: "DIRECT01", ChannelType: "im", User: "UALICE01", Text: "edited", SubType: "message_changed"},
		{Type: "message", Channel: "DIRECT01", ChannelType: "im", User: botUser, Text: "my own", BotID: "BBOT0001"},
		{Type: "app_mention", Channel: general, User: "UOTHER01", Text: "<@" + botUser + "> from a bot", BotID: "BOTHER01"},
		{Type: "reaction_added", User: "UALICE01"},
	} {
		if status, b := e.post("/events", slacktest.EventCallback(ev), nil); status != http.StatusOK {
			t.Errorf("ignored event %+v: %d %s", ev, status, b)
		}
	}
	// A view closed is fine too.
	if status, b := e.post("/interactivity", []byte(form(`{"type":"view_closed","user":{"id":"UALICE01"},"view":{"callback_id":"agentsdk_deny"}}`)), nil); status != http.StatusOK {
		t.Errorf("view_closed: %d %s", status, b)
	}
	time.Sleep(200 * time.Millisecond)
	if n := e.bot.accepted.Load(); n != 0 || len(e.sessions()) != 0 || len(e.api.Calls("")) != 0 {
		t.Errorf("hostile input started something: %d events, %d sessions, calls: %s", n, len(e.sessions()), texts(e.api.Calls("")))
	}
}

func form(payload string) string {
	return "payload=" + strings.NewReplacer("%", "%25", "&", "%26", "+", "%2B", "=", "%3D", " ", "+").Replace(payload)
}

// TestNotAttached: before Attach the routes answer 503.
func TestNotAttached(t *testing.T) {
	b, err := New(Config{BotToken: "xoxb-x", SigningSecret: secret})
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range b.Channel().Routes() {
		w := httptest.NewRecorder()
		rt.Handler(tool.Handle{}, w, httptest.NewRequest("POST", rt.Path, strings.NewReader("{}")))
		if w.Code != http.StatusServiceUnavailable {
			t.Errorf("%s: %d %s", rt.Path, w.Code, w.Body)
		}
	}
}

// TestConfig: New refuses what cannot work.
func TestConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no token":     {SigningSecret: "s"},
		"no secret":    {BotToken: "t"},
		"api url":      {BotToken: "t", SigningSecret: "s", APIURL: "http://x/api"},
		"allow":        {BotToken: "t", SigningSecret: "s", Allow: []string{"alice"}},
		"allow lower":  {BotToken: "t", SigningSecret: "s", Allow: []string{"u123"}},
		"channel name": {BotToken: "t", SigningSecret: "s", ApprovalsChannel: "my approvals"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New(Config{BotToken: "t", SigningSecret: "s", Allow: []string{"U012AB3CD", "W0123", "S0614TZR7"}}); err != nil {
		t.Error(err)
	}
}

// TestConversation: a mention opens a session answered in the thread; a
// reply in the thread continues it; Slack's retry of an event starts
// nothing; a direct message is a session too.
func TestConversation(t *testing.T) {
	e := newEnv(t, Config{},
		fakemodel.Reply{Text: []string{"Hello ", "from the agent."}},
		fakemodel.Reply{Text: []string{"Second answer."}},
		fakemodel.Reply{Text: []string{"In private."}},
	)
	first := slacktest.EventCallback(slacktest.Event{EventID: "EvFIRST01", Type: "app_mention", Channel: general, User: "UALICE01",
		Text: "<@" + botUser + "> what is up?", TS: "1700000000.000100"})
	if status, b := e.post("/events", first, nil); status != http.StatusOK {
		t.Fatalf("mention: %d %s", status, b)
	}
	thread := "1700000000.000100"
	e.posted(thread, "Hello from the agent.")
	list := e.sessions()
	if len(list) != 1 || list[0].Channel != ChannelID || list[0].Principal != "slack:UALICE01" {
		t.Fatalf("sessions: %+v", list)
	}
	if reqs := e.fake.Requests(); len(reqs) != 1 || !strings.Contains(string(reqs[0]), `"what is up?"`) || strings.Contains(string(reqs[0]), "<@") {
		t.Errorf("the model was sent: %s", reqs)
	}

	// Slack retries the first event (new timestamp, same event_id).
	if status, b := e.post("/events", first, &slacktest.SendOptions{At: time.Now().Add(time.Second), RetryNum: 1}); status != http.StatusOK {
		t.Fatalf("retry: %d %s", status, b)
	}
	if n := e.bot.accepted.Load(); n != 1 {
		t.Errorf("the retry was acted on: %d events", n)
	}

	// A reply in the thread continues the session.
	e.mention(general, "UBOB0001", "and then?", thread)
	e.posted(thread, "Second answer.")
	if list := e.sessions(); len(list) != 1 {
		t.Fatalf("sessions after the reply: %+v", list)
	}
	if n := e.turns(list[0].ID); n != 2 {
		t.Errorf("turns: %d", n)
	}

	// A direct message: its own session, answered in a thread under it.
	dm := slacktest.NewTS()
	if status, b := e.post("/events", slacktest.EventCallback(slacktest.Event{Type: "message", ChannelType: "im", Channel: "DALICE01",
		User: "UALICE01", Text: "psst", TS: dm}), nil); status != http.StatusOK {
		t.Fatalf("dm: %d %s", status, b)
	}
	c := e.posted(dm, "In private.")
	if c.Channel() != "DALICE01" {
		t.Errorf("dm answered in %s", c.Channel())
	}
	if list := e.sessions(); len(list) != 2 {
		t.Errorf("sessions after the dm: %+v", list)
	}
	if n := len(e.fake.Requests()); n != 3 {
		t.Errorf("model calls: %d", n)
	}
}

// TestBusy: a message while the thread's turn runs is answered, not lost.
func TestBusy(t *testing.T) {
	release := make(chan struct{})
	e := newEnv(t, Config{}, fakemodel.Reply{Text: []string{"Slow answer."}, Until: release})
	thread := e.mention(general, "UALICE01", "take your time", "")
	eventually(t, "the turn", func() bool { return len(e.fake.Requests()) == 1 })
	e.mention(general, "UALICE01", "are you there?", thread)
	e.posted(thread, "still working on the previous message")
	close(release)
	e.posted(thread, "Slow answer.")
}

// TestFailedTurn: a failed turn posts its reason.
func TestFailedTurn(t *testing.T) {
	e := newEnv(t, Config{}, fakemodel.Reply{Status: 400})
	thread := e.mention(general, "UALICE01", "break", "")
	e.posted(thread, "The turn failed")
}

// TestLongAnswerAndActivity: a long answer is split into several posts;
// one model step's tool calls are one compact message.
func TestLongAnswerAndActivity(t *testing.T) {
	para := strings.TrimSpace(strings.Repeat("Grüße aus dem Modell, ", 60)) // 1319 runes, multi-byte
	long := strings.Join([]string{para, para, para, para, para}, "\n\n")
	e := newEnv(t, Config{},
		fakemodel.Reply{Calls: []fakemodel.Call{
			{ID: "i1", Name: "inspect", Input: `{"service":"api"}`},
			{ID: "i2", Name: "inspect", Input: `{"service":"web"}`},
		}},
		fakemodel.Reply{Text: []string{long}},
	)
	thread := e.mention(general, "UALICE01", "inspect both", "")
	e.posted(thread, "Grüße")
	eventually(t, "every part", func() bool {
		var got []string
		for _, c := range e.api.Calls("chat.postMessage") {
			if strings.Contains(c.Text(), "Grüße") {
				got = append(got, c.Text())
			}
		}
		return strings.Join(got, "\n\n") == long
	})
	var parts, activity []slacktest.Call
	for _, c := range e.api.Calls("chat.postMessage") {
		switch {
		case strings.Contains(c.Text(), "Grüße"):
			parts = append(parts, c)
		case strings.Contains(c.BlockText(), "inspect"):
			activity = append(activity, c)
		}
	}
	if len(parts) < 2 {
		t.Errorf("the long answer is in %d part(s)", len(parts))
	}
	for i, p := range parts {
		if n := len([]rune(p.Text())); n > maxPostRunes || !strings.HasSuffix(p.Text(), ",") && i != len(parts)-1 {
			t.Errorf("a part of %d runes ends %q", n, p.Text()[max(0, len(p.Text())-20):])
		}
	}
	if len(activity) != 1 {
		t.Fatalf("tool activity in %d messages: %s", len(activity), texts(activity))
	}
	blocks, err := activity[0].Blocks()
	if err != nil || len(blocks.BlockSet) != 1 || blocks.BlockSet[0].BlockType() != "context" {
		t.Fatalf("activity blocks: %v %s", err, activity[0].Params.Get("blocks"))
	}
	lines := strings.Split(activity[0].Text(), "\n")
	if len(lines) != 2 {
		t.Fatalf("activity lines: %q", lines)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "⚙ inspect ✓ ") || !strings.HasSuffix(l, " ms") {
			t.Errorf("activity line %q", l)
		}
	}
}

// TestApproveInSlack: a gated call posts a card in the thread; a user not
// allowed changes nothing; an allowed click approves once (the tool runs
// once, the card is updated); a second click is told it was decided.
func TestApproveInSlack(t *testing.T) {
	e := newEnv(t, Config{Allow: []string{"UALLOW01", "SDEPLOY01"}},
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "d1", Name: "deploy", Input: `{"service":"checkout <!channel> & co"}`}}},
		fakemodel.Reply{Text: []string{"Deployed."}},
	)
	e.api.SetUserGroup("SDEPLOY01", "UGROUP01")
	thread := e.mention(general, "UALICE01", "deploy checkout", "")
	callID, card := e.card(general, thread)
	blocks := card.BlockText()
	for _, want := range []string{"deploy", "checkout &lt;!channel&gt; &amp; co", "<@UALICE01>", "<!date^", callID, "Deny"} {
		if !strings.Contains(blocks, want) {
			t.Errorf("the card lacks %q: %s", want, blocks)
		}
	}
	e.posted(thread, "deploy waiting for approval")

	// Not allowed: an ephemeral answer, nothing decided.
	if status, b := e.click("UNOPE001", actionApprove, callID, card); status != http.StatusOK {
		t.Fatalf("click: %d %s", status, b)
	}
	e.ephemeral("UNOPE001", "not allowed")
	if a := e.approval(callID); a.Status != api.ApprovalPending {
		t.Fatalf("after a click not allowed: %+v", a)
	}

	// A member of an allowed group approves.
	if status, b := e.click("UGROUP01", actionApprove, callID, card); status != http.StatusOK {
		t.Fatalf("click: %d %s", status, b)
	}
	if a := e.approval(callID); a.Status != api.ApprovalApproved || a.DecidedBy != "slack:UGROUP01" {
		t.Fatalf("after the click: %+v", a)
	}
	e.updated(general, card.AnsweredTS(), "Approved by <@UGROUP01>")
	e.posted(thread, "Deployed.")
	e.posted(thread, "deploy ✓")

	// A second click, by an allowed user: told, nothing changes.
	if status, b := e.click("UALLOW01", actionApprove, callID, card); status != http.StatusOK {
		t.Fatalf("second click: %d %s", status, b)
	}
	e.ephemeral("UALLOW01", "Already decided: approved by <@UGROUP01>")
	if n := e.ran.Load(); n != 1 {
		t.Errorf("deploy ran %d times", n)
	}
	if a := e.approval(callID); a.DecidedBy != "slack:UGROUP01" {
		t.Errorf("the decision changed: %+v", a)
	}
	if n := len(e.api.Calls("usergroups.users.list")); n != 1 {
		t.Errorf("the group was read %d times (cached for a minute)", n)
	}
	if n := len(e.api.Calls("views.open")); n != 0 {
		t.Errorf("views opened: %d", n)
	}
}

// TestDenyInSlack: Deny opens a modal; its submission denies with the
// reason, and the card shows it.
func TestDenyInSlack(t *testing.T) {
	e := newEnv(t, Config{Allow: []string{"UALLOW01"}},
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "d1", Name: "deploy", Input: `{"service":"api"}`}}},
		fakemodel.Reply{Text: []string{"Not deployed, then."}},
	)
	thread := e.mention(general, "UALICE01", "deploy api", "")
	callID, card := e.card(general, thread)
	if status, b := e.click("UALLOW01", actionDeny, callID, card); status != http.StatusOK {
		t.Fatalf("click: %d %s", status, b)
	}
	opened := e.api.Calls("views.open")
	if len(opened) != 1 || opened[0].Params.Get("trigger_id") == "" {
		t.Fatalf("views.open: %s", texts(opened))
	}
	view, err := opened[0].View()
	if err != nil || view.CallbackID != denyCallback || !strings.Contains(view.PrivateMetadata, callID) {
		t.Fatalf("the modal: %v %+v", err, view)
	}
	if a := e.approval(callID); a.Status != api.ApprovalPending {
		t.Fatalf("deny decided before the reason: %+v", a)
	}
	submit := func(user, reason string) (int, string) {
		return e.post("/interactivity", slacktest.ViewSubmission(slacktest.Submission{User: user, CallbackID: view.CallbackID,
			PrivateMetadata: view.PrivateMetadata, Values: map[string]map[string]string{reasonBlock: {reasonAction: reason}}}), nil)
	}
	// No reason: the modal says so.
	if status, b := submit("UALLOW01", "  "); status != http.StatusOK || !strings.Contains(b, `"response_action":"errors"`) {
		t.Errorf("empty reason: %d %s", status, b)
	}
	// Not allowed: the modal says so.
	if status, b := submit("UNOPE001", "no"); status != http.StatusOK || !strings.Contains(b, "not allowed") {
		t.Errorf("not allowed: %d %s", status, b)
	}
	if status, b := submit("UALLOW01", "not on a Friday"); status != http.StatusOK || strings.TrimSpace(b) != "" {
		t.Fatalf("submission: %d %q", status, b)
	}
	a := e.approval(callID)
	if a.Status != api.ApprovalDenied || a.Reason != "not on a Friday" || a.DecidedBy != "slack:UALLOW01" {
		t.Fatalf("after the submission: %+v", a)
	}
	e.updated(general, card.AnsweredTS(), "Denied by <@UALLOW01>")
	e.updated(general, card.AnsweredTS(), "not on a Friday")
	e.posted(thread, "Not deployed, then.")
	e.posted(thread, "deploy ✗")
	if n := e.ran.Load(); n != 0 {
		t.Errorf("deploy ran %d times", n)
	}
	// Submitting again: already decided.
	if status, b := submit("UALLOW01", "again"); status != http.StatusOK || !strings.Contains(b, "Already decided") {
		t.Errorf("second submission: %d %s", status, b)
	}
	// Deny on a decided card: told, no modal.
	if status, _ := e.click("UALLOW01", actionDeny, callID, card); status != http.StatusOK {
		t.Fatal(status)
	}
	e.ephemeral("UALLOW01", "Already decided")
	if n := len(e.api.Calls("views.open")); n != 1 {
		t.Errorf("views opened: %d", n)
	}
}

// TestCardOnHTTPDecision: a direct call outside Slack gets a card in the
// approvals channel; approving it over the HTTP API updates the card.
func TestCardOnHTTPDecision(t *testing.T) {
	e := newEnv(t, Config{ApprovalsChannel: "CAPPROVE1"})
	_, err := e.h.CallTool(context.Background(), "deploy", map[string]string{"service": "billing"}, &host.CallOptions{Principal: "alice"})
	var pending *host.ApprovalPendingError
	if !errors.As(err, &pending) {
		t.Fatalf("not parked: %v", err)
	}
	callID, card := e.card("CAPPROVE1", "")
	if callID != pending.CallID || !strings.Contains(card.BlockText(), "`alice`") {
		t.Fatalf("card %s for %s: %s", callID, pending.CallID, card.Params.Get("blocks"))
	}
	req, _ := http.NewRequest("POST", e.base+"/agent/v1/approvals/"+callID, strings.NewReader(`{"approved":true,"reason":"fine"}`))
	req.Header.Set("Authorization", "Bearer "+apiToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("approve over HTTP: %d %s", resp.StatusCode, b)
	}
	up := e.updated("CAPPROVE1", card.AnsweredTS(), "Approved by")
	if !strings.Contains(up.Text(), "Approved") {
		t.Errorf("fallback text: %q", up.Text())
	}
	eventually(t, "deploy to run", func() bool { return e.ran.Load() == 1 })
	// The card is closed: no more updates.
	eventually(t, "the card to close", func() bool {
		_, err := e.bot.kv().Get(context.Background(), keyOpen+callID)
		return errors.Is(err, tool.ErrKeyNotFound)
	})
	n := len(e.api.Calls("chat.update"))
	time.Sleep(1500 * time.Millisecond)
	if m := len(e.api.Calls("chat.update")); m != n {
		t.Errorf("updated again: %d → %d", n, m)
	}
}

// TestCardInThreadAndChannel: a Slack session's call gets its card in
// the thread and in the approvals channel; deciding with Resolve from Go
// updates both.
func TestCardInThreadAndChannel(t *testing.T) {
	e := newEnv(t, Config{ApprovalsChannel: "CAPPROVE1"},
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "d1", Name: "deploy", Input: `{"service":"api"}`}}},
		fakemodel.Reply{Text: []string{"Done."}},
	)
	thread := e.mention(general, "UALICE01", "deploy", "")
	callID, inThread := e.card(general, thread)
	id2, inChannel := e.card("CAPPROVE1", "")
	if id2 != callID {
		t.Fatalf("cards for %s and %s", callID, id2)
	}
	if _, err := e.h.Approvals().Resolve(context.Background(), callID, host.Decision{Approved: false, Reason: "no", By: "bob"}); err != nil {
		t.Fatal(err)
	}
	e.updated(general, inThread.AnsweredTS(), "Denied by `bob`")
	e.updated("CAPPROVE1", inChannel.AnsweredTS(), "Denied by `bob`")
	e.posted(thread, "Done.")
	var cards int
	for _, c := range e.api.Calls("chat.postMessage") {
		if c.Button(actionApprove) != "" {
			cards++
		}
	}
	if cards != 2 {
		t.Errorf("%d cards posted", cards)
	}
}

// TestExpiredCard: a call nobody decides expires, and its card says so.
func TestExpiredCard(t *testing.T) {
	e := newEnv(t, Config{ApprovalsChannel: "CAPPROVE1"})
	_, err := e.h.CallTool(context.Background(), "expiring", map[string]any{}, nil)
	var pending *host.ApprovalPendingError
	if !errors.As(err, &pending) {
		t.Fatalf("not parked: %v", err)
	}
	_, card := e.card("CAPPROVE1", "")
	e.updated("CAPPROVE1", card.AnsweredTS(), "Nobody decided before it expired")
	// A click on the expired card: told, nothing runs.
	if status, _ := e.click("UALICE01", actionApprove, pending.CallID, card); status != http.StatusOK {
		t.Fatal(status)
	}
	e.ephemeral("UALICE01", "expired")
}

// TestOneCardAcrossBots: two bots (as on two hosts) sharing a store post
// one card per call.
func TestOneCardAcrossBots(t *testing.T) {
	e := newEnv(t, Config{ApprovalsChannel: "CAPPROVE1"})
	other, err := New(Config{BotToken: "xoxb-test", SigningSecret: secret, APIURL: e.api.APIURL(), ApprovalsChannel: "CAPPROVE1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); other.wait() })
	other.Attach(ctx, e.h.Handle())
	for range 5 {
		e.h.CallTool(context.Background(), "deploy", map[string]string{"service": "x"}, nil)
	}
	eventually(t, "five cards", func() bool { return len(e.api.Calls("chat.postMessage")) >= 5 })
	time.Sleep(1500 * time.Millisecond) // both keepers run again
	seen := map[string]int{}
	for _, c := range e.api.Calls("chat.postMessage") {
		seen[c.Button(actionApprove)]++
	}
	if len(seen) != 5 {
		t.Errorf("cards for %d calls", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%d cards for %s", n, id)
		}
	}
}

// TestClickWhileTheCardIsPosted: a click that lands while the card's post
// is still on its way (Slack has it, the bot has not recorded it) still
// gets the card updated once the post is recorded.
func TestClickWhileTheCardIsPosted(t *testing.T) {
	e := newEnv(t, Config{},
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "d1", Name: "deploy", Input: `{"service":"api"}`}}},
		fakemodel.Reply{Text: []string{"Deployed."}},
	)
	release := e.api.Stall("chat.postMessage")
	defer release()
	thread := e.mention(general, "UALICE01", "deploy api", "")
	callID, card := e.card(general, thread) // received by Slack, not yet answered
	if status, b := e.click("UALICE01", actionApprove, callID, card); status != http.StatusOK {
		t.Fatalf("click: %d %s", status, b)
	}
	if a := e.approval(callID); a.Status != api.ApprovalApproved {
		t.Fatalf("after the click: %+v", a)
	}
	time.Sleep(200 * time.Millisecond) // let the click's own update of the card run first
	release()
	e.updated(general, card.AnsweredTS(), "Approved by <@UALICE01>")
	e.posted(thread, "Deployed.")
}

package main_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/slacktest"
)

// The built-in Slack channel (slackbot) on the real binary: agent-sdk
// serve of an agent whose agent.yaml has slack:, its model a scripted fake
// Anthropic API, its Slack Web API the fake of internal/slacktest, and
// Slack's requests (Events API callbacks, button clicks) signed as Slack
// signs them. The agent is init's with the tools of testdata/slack: deploy
// (always gated; each run appends a line to <state>/deploy-runs) and
// status (not gated).

const (
	slSecret  = "8f742231b10e8888abcd99yyyzzz85a5"
	slToken   = "xoxb-e2e-bot-token"
	slBot     = "UBOT0001"  // the bot's user id (the fake's auth.test)
	slAllowed = "UALLOWED1" // agent.yaml's slack.approvals.allow
	slOther   = "UOTHER001" // anyone else in the workspace
	slGeneral = "CGENERAL1"
	slWait    = 30 * time.Second
)

// slEnv is a served agent with its fake model and fake Slack.
type slEnv struct {
	t    *testing.T
	s    *server
	api  *slacktest.Server
	fake *fakemodel.Server
	send *slacktest.Sender // signs with the right secret
	runs string            // deploy's runs, a line each
}

func slStart(t *testing.T, script ...fakemodel.Reply) *slEnv {
	t.Helper()
	api := slacktest.NewServer()
	api.Token = slToken // anything else is invalid_auth
	t.Cleanup(api.Close)
	fake := fakemodel.New(script...)
	t.Cleanup(fake.Close)
	dir := filepath.Join(t.TempDir(), "slackagent")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	yaml := "model:\n  provider: anthropic\n  name: fake-model\nmaxSteps: 4\n" +
		"slack:\n  apiURL: " + api.APIURL() + "\n  approvals:\n    allow: [" + slAllowed + "]\n"
	if err := addFixtures(dir, "slack", yaml); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"SLACK_BOT_TOKEN=" + slToken, "SLACK_SIGNING_SECRET=" + slSecret,
		"ANTHROPIC_BASE_URL=" + fake.AnthropicURL(), "ANTHROPIC_API_KEY=test-key",
	}
	s := startServerEnv(t, dir, env)
	e := &slEnv{t: t, s: s, api: api, fake: fake,
		send: &slacktest.Sender{URL: strings.TrimSuffix(s.base, "/v1") + "/channels/slack", Secret: slSecret},
		runs: filepath.Join(dir, ".agent-sdk", "deploy-runs")}
	// The channel is mounted: a request without Slack's headers is refused
	// by its verifier, not by the API's bearer token (or a 404).
	req, _ := http.NewRequest("POST", e.send.URL+"/events", strings.NewReader(`{}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Error struct{ Message string }
	}
	json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(v.Error.Message, "the request failed the channel's verification") {
		t.Fatalf("the slack channel is not mounted at %s/events (an unsigned request got %d %q): agent.yaml's slack: is not wired into serve\n%s",
			e.send.URL, resp.StatusCode, v.Error.Message, s.logs())
	}
	return e
}

// post sends a request to one of the channel's routes, signed with opts
// (nil: as Slack signs it), and returns the status and body.
func (e *slEnv) post(path string, body []byte, opts *slacktest.SendOptions) (int, string) {
	e.t.Helper()
	resp, b, err := e.send.Send(path, body, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// deliver posts an event as Slack does and wants it acknowledged.
func (e *slEnv) deliver(body []byte, opts *slacktest.SendOptions) {
	e.t.Helper()
	if status, b := e.post("/events", body, opts); status != 200 || strings.TrimSpace(b) != `{"ok":true}` {
		e.t.Fatalf("event: %d %s\n%s", status, b, e.s.logs())
	}
}

// slMention is an app_mention of the bot by user in #general with ts, in
// thread if set.
func slMention(eventID, user, text, ts, thread string) []byte {
	return slacktest.EventCallback(slacktest.Event{EventID: eventID, Type: "app_mention", Channel: slGeneral, User: user,
		Text: "<@" + slBot + "> " + text, TS: ts, ThreadTS: thread})
}

// posted waits for a chat.postMessage in channel's thread whose text or
// blocks contain want, and returns it.
func (e *slEnv) posted(channel, thread, want string) slacktest.Call {
	e.t.Helper()
	var found slacktest.Call
	calls, ok := e.api.WaitFor("chat.postMessage", slWait, func(cs []slacktest.Call) bool {
		for _, c := range cs {
			if c.Channel() == channel && c.ThreadTS() == thread && (strings.Contains(c.Text(), want) || strings.Contains(c.BlockText(), want)) {
				found = c
				return true
			}
		}
		return false
	})
	if !ok {
		e.t.Fatalf("nothing posted in %s/%s with %q; posted:%s\n%s", channel, thread, want, slTexts(calls), e.s.logs())
	}
	if !found.OK() || found.Token != slToken {
		e.t.Errorf("the post was refused or sent with another token (%q): %s", found.Token, found.Answer)
	}
	return found
}

// card waits for the approval card posted in a thread and returns its
// call id and the post.
func (e *slEnv) card(thread string) (string, slacktest.Call) {
	e.t.Helper()
	var found slacktest.Call
	calls, ok := e.api.WaitFor("chat.postMessage", slWait, func(cs []slacktest.Call) bool {
		for _, c := range cs {
			if c.Channel() == slGeneral && c.ThreadTS() == thread && c.Button("approve") != "" {
				found = c
				return true
			}
		}
		return false
	})
	if !ok {
		e.t.Fatalf("no approval card in %s/%s; posted:%s\n%s", slGeneral, thread, slTexts(calls), e.s.logs())
	}
	callID := found.Button("approve")
	if found.Button("deny") != callID || !strings.Contains(found.BlockText(), "Approval needed:* `deploy`") || !strings.Contains(found.BlockText(), callID) {
		e.t.Errorf("the card: %s", found.Params.Get("blocks"))
	}
	return callID, found
}

// updates returns the chat.update calls of a card's message.
func (e *slEnv) updates(card slacktest.Call) []slacktest.Call {
	var out []slacktest.Call
	for _, c := range e.api.Calls("chat.update") {
		if c.Channel() == card.Channel() && c.TS() == card.AnsweredTS() {
			out = append(out, c)
		}
	}
	return out
}

// updated waits until a card has been updated, and checks that every
// update of it dropped the buttons and shows want (the decision and who).
func (e *slEnv) updated(card slacktest.Call, want string) {
	e.t.Helper()
	_, ok := e.api.WaitFor("chat.update", slWait, func([]slacktest.Call) bool { return len(e.updates(card)) > 0 })
	if !ok {
		e.t.Fatalf("the card %s was never updated; updates:%s\n%s", card.AnsweredTS(), slTexts(e.api.Calls("chat.update")), e.s.logs())
	}
	for _, u := range e.updates(card) {
		if u.Button("approve") != "" || u.Button("deny") != "" || !strings.Contains(u.BlockText(), want) || !u.OK() {
			e.t.Errorf("an update of the card, want no buttons and %q: %s", want, u.Params.Get("blocks"))
		}
	}
}

// click clicks a card's button as user.
func (e *slEnv) click(user, action, callID string, card slacktest.Call, opts *slacktest.SendOptions) (int, string) {
	e.t.Helper()
	return e.post("/interactivity", slacktest.BlockActions(slacktest.Click{User: user, Channel: card.Channel(), MessageTS: card.AnsweredTS(),
		ThreadTS: card.ThreadTS(), ActionID: action, BlockID: "approval", Value: callID}), opts)
}

// ephemerals counts the ephemeral messages to user containing want.
func (e *slEnv) ephemerals(user, want string) int {
	n := 0
	for _, c := range e.api.Calls("chat.postEphemeral") {
		if c.Params.Get("user") == user && strings.Contains(c.Text(), want) {
			n++
		}
	}
	return n
}

// ephemeral waits until user has been told want n times.
func (e *slEnv) ephemeral(user, want string, n int) {
	e.t.Helper()
	calls, ok := e.api.WaitFor("chat.postEphemeral", slWait, func([]slacktest.Call) bool { return e.ephemerals(user, want) >= n })
	if !ok {
		e.t.Fatalf("%s was not told %q (%d times); ephemerals:%s\n%s", user, want, n, slTexts(calls), e.s.logs())
	}
}

// approval returns a call's approval as the API lists it.
func (e *slEnv) approval(callID string) map[string]any {
	e.t.Helper()
	status, v, _ := e.s.request(e.t, "GET", "/approvals?limit=1000", e.s.token, "")
	if status != 200 {
		e.t.Fatalf("approvals: %d %v", status, v)
	}
	list, _ := v["approvals"].([]any)
	for _, a := range list {
		if a := a.(map[string]any); a["callId"] == callID {
			return a
		}
	}
	e.t.Fatalf("no approval for %s: %v", callID, v)
	return nil
}

// newSession returns the one session listed now and not in before.
func (e *slEnv) newSession(before []map[string]any) map[string]any {
	e.t.Helper()
	old := map[any]bool{}
	for _, s := range before {
		old[s["id"]] = true
	}
	var found []map[string]any
	for _, s := range ghSessions(e.t, e.s) {
		if !old[s["id"]] {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		e.t.Fatalf("new sessions: %v (before: %v)", found, before)
	}
	return found[0]
}

// results returns a session's stored action.result events of a call.
func (e *slEnv) results(sessionID, callID string) []map[string]any {
	var out []map[string]any
	for _, ev := range ghEvents(e.t, e.s, sessionID) {
		if ev["kind"] == "action.result" && ghData(ev)["callId"] == callID {
			out = append(out, ev)
		}
	}
	return out
}

// turns counts a session's completed turns.
func (e *slEnv) turns(sessionID string) int {
	return strings.Count(ghKinds(ghEvents(e.t, e.s, sessionID)), "turn.completed")
}

func slTexts(calls []slacktest.Call) string {
	var b strings.Builder
	for _, c := range calls {
		blocks := c.Params.Get("blocks")
		if len(blocks) > 300 {
			blocks = blocks[:300] + "…"
		}
		b.WriteString("\n  " + c.Method + " " + c.Channel() + "/" + c.ThreadTS() + " ts=" + c.TS() + " user=" + c.Params.Get("user") + " " + c.Text() + " " + blocks)
	}
	return b.String()
}

// A mention opens a session answered in its thread, a reply in the thread
// continues it, Slack's retry of an event starts nothing, and a direct
// message thread is a session too. A gated call gets a card in its thread:
// a click by someone not allowed changes nothing, Approve by someone
// allowed runs the call once and updates the card, later clicks change
// nothing. A call approved over HTTP updates its card too. Requests with
// a forged signature, on either route, are 401 and start nothing.
func TestSlackChannel(t *testing.T) {
	e := slStart(t,
		fakemodel.Reply{Text: []string{"Hello ", "from the agent."}},
		fakemodel.Reply{Text: []string{"Second answer."}},
		fakemodel.Reply{Text: []string{"In private."}},
		fakemodel.Reply{Text: []string{"Still private."}},
		fakemodel.Reply{Text: []string{"Checking, then deploying."}, Calls: []fakemodel.Call{
			{ID: "m1", Name: "status", Input: `{"service":"api"}`},
			{ID: "m2", Name: "deploy", Input: `{"service":"api"}`},
		}},
		fakemodel.Reply{Text: []string{"Deployed api."}},
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "m3", Name: "deploy", Input: `{"service":"web"}`}}},
		fakemodel.Reply{Text: []string{"Deployed web."}},
	)
	s := e.s

	// Forged: the wrong secret, on either route. 401, and nothing at all
	// happens: no session, no model request, no Web API call.
	forged := &slacktest.SendOptions{Secret: "not-the-signing-secret"}
	if status, b := e.post("/events", slMention("EvFORGED1", slAllowed, "deploy everything", slacktest.NewTS(), ""), forged); status != 401 {
		t.Errorf("a forged mention: %d %s", status, b)
	}
	if status, b := e.post("/interactivity", slacktest.BlockActions(slacktest.Click{User: slAllowed, Channel: slGeneral, MessageTS: slacktest.NewTS(),
		ActionID: "approve", BlockID: "approval", Value: "tool_deploy_x"}), forged); status != 401 {
		t.Errorf("a forged click: %d %s", status, b)
	}
	if list := ghSessions(t, s); len(list) != 0 {
		t.Fatalf("sessions after forged requests: %v", list)
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Fatalf("the model got %d requests from forged requests", n)
	}
	if calls := e.api.Calls(""); len(calls) != 0 {
		t.Fatalf("forged requests made Web API calls:%s", slTexts(calls))
	}

	// 1. A mention opens a session; the answer goes into its thread.
	thread := slacktest.NewTS()
	first := slMention("EvMENTION1", "UALICE001", "what is up?", thread, "")
	e.deliver(first, nil)
	e.posted(slGeneral, thread, "Hello from the agent.")
	list := ghSessions(t, s)
	if len(list) != 1 || list[0]["channel"] != "slack" || list[0]["principal"] != "slack:UALICE001" {
		t.Fatalf("sessions after the mention: %v", list)
	}
	sess := list[0]["id"].(string)
	ghWaitTurns(t, s, sess, 1)
	if !e.fake.Contains(0, `what is up?`) || e.fake.Contains(0, "<@"+slBot+">") {
		t.Errorf("the model was sent:\n%s", e.fake.Requests()[0])
	}

	// 2. Slack retries the event (same event_id, a new delivery): it is
	// acknowledged and not acted on.
	e.deliver(first, &slacktest.SendOptions{At: time.Now().Add(time.Second), RetryNum: 1})

	// A reply in the thread continues the session.
	e.deliver(slMention("EvMENTION2", "UBOB00001", "and then?", slacktest.NewTS(), thread), nil)
	e.posted(slGeneral, thread, "Second answer.")
	ghWaitTurns(t, s, sess, 2)
	list = ghSessions(t, s)
	if len(list) != 1 || list[0]["id"] != sess || list[0]["channel"] != "slack" {
		t.Fatalf("sessions after the reply: %v", list)
	}
	if n := e.turns(sess); n != 2 {
		t.Errorf("the thread's session has %d turns, want 2 (the retry started one?): %s", n, ghKinds(ghEvents(t, s, sess)))
	}
	// The thread holds the two messages and the two answers, nothing else
	// (a retry acted on would have made a third turn, or a busy notice).
	var said []string
	for _, ev := range ghEvents(t, s, sess) {
		if d := ghData(ev); ev["kind"] == "message" && d["role"] == "user" {
			said = append(said, d["text"].(string))
		}
	}
	if got := strings.Join(said, " | "); got != "what is up? | and then?" {
		t.Errorf("the session's messages: %s", got)
	}
	var answers []string
	for _, c := range e.api.Calls("chat.postMessage") {
		if c.ThreadTS() == thread {
			answers = append(answers, c.Text())
		}
	}
	if got := strings.Join(answers, " | "); got != "Hello from the agent. | Second answer." {
		t.Errorf("posted in the thread: %s", got)
	}
	if reqs := e.fake.Requests(); len(reqs) != 2 || !e.fake.Contains(1, "and then?") || !e.fake.Contains(1, "from the agent.") {
		t.Errorf("the model got %d requests, want 2, the second with the thread's history", len(reqs))
	}
	// The log is written in batches (a few ms late).
	eventually(t, 10*time.Second, "the retry logged as such", func() bool {
		return strings.Contains(s.logs(), "an event already acted on")
	})

	// A direct message opens its own session; a message in its thread
	// continues it.
	before := ghSessions(t, s)
	dm := slacktest.NewTS()
	e.deliver(slacktest.EventCallback(slacktest.Event{Type: "message", ChannelType: "im", Channel: "DALICE001", User: "UALICE001", Text: "psst", TS: dm}), nil)
	e.posted("DALICE001", dm, "In private.")
	dmSess := e.newSession(before)
	if dmSess["channel"] != "slack" {
		t.Errorf("the direct message's session: %v", dmSess)
	}
	ghWaitTurns(t, s, dmSess["id"].(string), 1)
	e.deliver(slacktest.EventCallback(slacktest.Event{Type: "message", ChannelType: "im", Channel: "DALICE001", User: "UALICE001",
		Text: "and more", TS: slacktest.NewTS(), ThreadTS: dm}), nil)
	e.posted("DALICE001", dm, "Still private.")
	ghWaitTurns(t, s, dmSess["id"].(string), 2)
	if list := ghSessions(t, s); len(list) != 2 {
		t.Errorf("sessions after the direct messages: %v", list)
	}

	// 3. A gated call: the model checks (not gated, runs) and deploys
	// (gated, parks). The card is posted in the thread.
	before = ghSessions(t, s)
	gated := slacktest.NewTS()
	e.deliver(slMention("", "UALICE001", "deploy api", gated, ""), nil)
	callID, card := e.card(gated)
	e.posted(slGeneral, gated, "Checking, then deploying.")
	e.posted(slGeneral, gated, "status ✓")
	e.posted(slGeneral, gated, "deploy waiting for approval")
	gSess := e.newSession(before)["id"].(string)
	if a := e.approval(callID); a["status"] != "pending" || a["sessionId"] != gSess || a["tool"] != "deploy" {
		t.Fatalf("the parked call: %v", a)
	}

	// Not allowed, or forged: nothing changes.
	if status, b := e.click(slOther, "approve", callID, card, nil); status != 200 {
		t.Errorf("a click by %s: %d %s", slOther, status, b)
	}
	e.ephemeral(slOther, "You are not allowed to decide approvals here.", 1)
	if status, b := e.click(slAllowed, "approve", callID, card, forged); status != 401 {
		t.Errorf("a forged click on the card: %d %s", status, b)
	}
	if a := e.approval(callID); a["status"] != "pending" {
		t.Fatalf("the call after a click not allowed and a forged one: %v", a)
	}
	if got := lines(e.runs); len(got) != 0 {
		t.Fatalf("deploy ran before it was approved: %v", got)
	}
	if u := e.updates(card); len(u) != 0 {
		t.Errorf("the card was updated before a decision:%s", slTexts(u))
	}

	// Approve, by someone allowed: the call runs once, the turn goes on,
	// the card shows the decision.
	if status, b := e.click(slAllowed, "approve", callID, card, nil); status != 200 {
		t.Fatalf("approve: %d %s", status, b)
	}
	var result map[string]any
	waitEvent(t, s, gSess, func(kind, data string) bool {
		if kind == "action.result" && strings.Contains(data, callID) {
			json.Unmarshal([]byte(data), &result)
			return true
		}
		return false
	})
	if d, _ := result["data"].(map[string]any); d == nil || d["tool"] != "deploy" || d["isError"] != false || !strings.Contains(string(mustMarshal(d["result"])), `"deployed":"api"`) {
		t.Errorf("the approved call's result on the stream: %v", result)
	}
	ghWaitTurns(t, s, gSess, 1)
	e.posted(slGeneral, gated, "Deployed api.")
	e.updated(card, "Approved by <@"+slAllowed+">")
	if a := e.approval(callID); a["status"] != "approved" || a["decidedBy"] != "slack:"+slAllowed {
		t.Errorf("the approval: %v", a)
	}

	// Clicked again, by them and by someone not allowed: an ephemeral
	// answer each, no second run.
	if status, b := e.click(slAllowed, "approve", callID, card, nil); status != 200 {
		t.Errorf("a second approve: %d %s", status, b)
	}
	e.ephemeral(slAllowed, "Already decided: approved by <@"+slAllowed+">", 1)
	if status, b := e.click(slOther, "approve", callID, card, nil); status != 200 {
		t.Errorf("a click by %s after the decision: %d %s", slOther, status, b)
	}
	e.ephemeral(slOther, "You are not allowed to decide approvals here.", 2)
	if got := lines(e.runs); len(got) != 1 || !strings.HasPrefix(got[0], callID+" api") {
		t.Errorf("deploy's runs: %v, want one, of %s", got, callID)
	}
	if r := e.results(gSess, callID); len(r) != 1 {
		t.Errorf("%d action.result events for %s, want 1", len(r), callID)
	}
	if n := e.turns(gSess); n != 1 {
		t.Errorf("the gated session has %d turns, want 1", n)
	}

	// 4. Another gated call, approved over HTTP: its card is updated too.
	before = ghSessions(t, s)
	viaHTTP := slacktest.NewTS()
	e.deliver(slMention("", "UALICE001", "deploy web", viaHTTP, ""), nil)
	callID2, card2 := e.card(viaHTTP)
	hSess := e.newSession(before)["id"].(string)
	// A forged click on it first: 401, still pending.
	if status, b := e.click(slAllowed, "approve", callID2, card2, forged); status != 401 {
		t.Errorf("a forged click on the second card: %d %s", status, b)
	}
	if a := e.approval(callID2); a["status"] != "pending" {
		t.Fatalf("the second call after a forged click: %v", a)
	}
	status, v, _ := s.request(t, "POST", "/approvals/"+callID2, s.token, `{"approved":true,"onBehalfOf":"ops"}`)
	if status != 200 {
		t.Fatalf("approving over HTTP: %d %v", status, v)
	}
	ghWaitTurns(t, s, hSess, 1)
	e.posted(slGeneral, viaHTTP, "Deployed web.")
	e.updated(card2, "Approved by `bearer-token:ops`")
	if got := lines(e.runs); len(got) != 2 || !strings.HasPrefix(got[1], callID2+" web") {
		t.Errorf("deploy's runs: %v", got)
	}
	if r := e.results(hSess, callID2); len(r) != 1 {
		t.Errorf("%d action.result events for %s, want 1", len(r), callID2)
	}

	// 5. A forged mention in a thread with a session, after all that:
	// 401, no turn.
	if status, b := e.post("/events", slMention("", "UALICE001", "deploy again", slacktest.NewTS(), thread), forged); status != 401 {
		t.Errorf("a forged reply: %d %s", status, b)
	}
	// The first card's update is the only one (a late duplicate update
	// would show here too) and nobody else was told anything.
	time.Sleep(1500 * time.Millisecond) // more than a round of the card keeper
	if n := e.turns(sess); n != 2 {
		t.Errorf("the first session has %d turns after a forged reply", n)
	}
	if n := len(e.fake.Requests()); n != 8 {
		t.Errorf("the model got %d requests, want 8", n)
	}
	if got := lines(e.runs); len(got) != 2 {
		t.Errorf("deploy ran %d times, want 2: %v", len(got), got)
	}
	for _, c := range e.api.Calls("") {
		if c.Token != slToken || !c.OK() {
			t.Errorf("a Web API call refused or with another token: %s %q %s", c.Method, c.Token, c.Answer)
		}
	}
	for _, c := range e.api.Calls("chat.postEphemeral") {
		if u := c.Params.Get("user"); u != slAllowed && u != slOther {
			t.Errorf("an ephemeral to %s: %s", u, c.Text())
		}
	}
	if n := len(e.updates(card)); n != 1 {
		t.Logf("note: the first card was updated %d times:%s", n, slTexts(e.updates(card)))
	}
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

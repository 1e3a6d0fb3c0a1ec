// Package slacktest is a fake Slack for tests: a Web API server speaking
// the wire format slack-go uses (form or JSON bodies, {"ok": …} answers)
// that records every call, and builders of the signed requests Slack sends
// an app (Events API callbacks, interactive payloads), byte for byte in
// Slack's shapes.
//
//	api := slacktest.NewServer()
//	defer api.Close()
//	client := slack.New("xoxb-test", slack.OptionAPIURL(api.APIURL()))
//	…
//	s := slacktest.Sender{URL: base + "/agent/channels/slack", Secret: "shh"}
//	resp, body, err := s.Send("/events", slacktest.EventCallback(slacktest.Event{Type: "app_mention", …}), nil)
package slacktest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
)

// Call is one request the fake Web API received.
type Call struct {
	// Method is the Web API method: chat.postMessage, views.open, ….
	Method string
	// Token is the token the call carried (the form's token field or the
	// Authorization header's bearer token).
	Token string
	// Params are the call's arguments: the form's fields, or a JSON body's
	// top-level members (strings as they are, anything else as its JSON).
	Params url.Values
	// Body is the raw request body.
	Body []byte
	// Answer is what the server answered.
	Answer json.RawMessage
	// Time is when it arrived.
	Time time.Time
}

// Text returns the call's text argument.
func (c Call) Text() string { return c.Params.Get("text") }

// Channel returns the call's channel argument.
func (c Call) Channel() string { return c.Params.Get("channel") }

// ThreadTS returns the call's thread_ts argument.
func (c Call) ThreadTS() string { return c.Params.Get("thread_ts") }

// TS returns the call's ts argument (chat.update: the message updated).
func (c Call) TS() string { return c.Params.Get("ts") }

// Blocks decodes the call's blocks argument (a message's Block Kit).
func (c Call) Blocks() (slack.Blocks, error) {
	var b slack.Blocks
	raw := c.Params.Get("blocks")
	if raw == "" {
		return b, nil
	}
	err := json.Unmarshal([]byte(raw), &b)
	return b, err
}

// Button returns the value of the call's message's button with the action
// id ("" without one).
func (c Call) Button(action string) string {
	var blocks []struct {
		Type     string `json:"type"`
		Elements []struct {
			Type     string `json:"type"`
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	json.Unmarshal([]byte(c.Params.Get("blocks")), &blocks)
	for _, b := range blocks {
		for _, el := range b.Elements {
			if b.Type == "actions" && el.Type == "button" && el.ActionID == action {
				return el.Value
			}
		}
	}
	return ""
}

// BlockText returns every text of the call's blocks (a message's Block
// Kit), decoded, one a line: what a reader sees, for assertions (the
// blocks argument itself is JSON with <, > and & escaped).
func (c Call) BlockText() string {
	var v any
	if json.Unmarshal([]byte(c.Params.Get("blocks")), &v) != nil {
		return ""
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range []string{"text", "value"} {
				if s, ok := v[k].(string); ok {
					out = append(out, s)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return strings.Join(out, "\n")
}

// OK reports whether the server answered the call {"ok": true}.
func (c Call) OK() bool {
	var a struct {
		OK bool `json:"ok"`
	}
	json.Unmarshal(c.Answer, &a)
	return a.OK
}

// AnsweredTS returns the ts of the message a chat.postMessage made (from
// the answer).
func (c Call) AnsweredTS() string {
	var a struct {
		TS string `json:"ts"`
	}
	json.Unmarshal(c.Answer, &a)
	return a.TS
}

// View decodes a views.open call's view.
func (c Call) View() (slack.ModalViewRequest, error) {
	var v slack.ModalViewRequest
	err := json.Unmarshal([]byte(c.Params.Get("view")), &v)
	return v, err
}

// Server is a fake Slack Web API. It is safe for concurrent use.
type Server struct {
	*httptest.Server
	// Token, if set, is the only token the server accepts
	// (invalid_auth otherwise).
	Token string
	// BotUserID, BotID and TeamID are what auth.test answers.
	BotUserID, BotID, TeamID string

	mu     sync.Mutex
	calls  []Call
	seq    int64
	groups map[string][]string
	fail   map[string]string
	stall  map[string]chan struct{}
	wake   chan struct{}
}

// NewServer starts a fake Web API at APIURL().
func NewServer() *Server {
	s := &Server{BotUserID: "UBOT0001", BotID: "BBOT0001", TeamID: "T0000001",
		groups: map[string][]string{}, fail: map[string]string{},
		stall: map[string]chan struct{}{}, wake: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// APIURL is the base URL for slack.OptionAPIURL (it ends with /).
func (s *Server) APIURL() string { return s.URL + "/api/" }

// SetUserGroup makes usergroups.users.list answer users for the group id.
func (s *Server) SetUserGroup(id string, users ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[id] = slices.Clone(users)
}

// Fail makes every later call of method answer {"ok":false,"error":code};
// an empty code clears it.
func (s *Server) Fail(method, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if code == "" {
		delete(s.fail, method)
		return
	}
	s.fail[method] = code
}

// Stall makes every later call of method wait, once received and
// recorded, until release is called before it is answered: a slow Slack.
func (s *Server) Stall(method string) (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	s.stall[method] = ch
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.stall[method] == ch {
				delete(s.stall, method)
			}
			close(ch)
		})
	}
}

// Calls returns the calls of method received so far ("" for all), in
// order.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Reset forgets the calls received so far.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}

// WaitFor waits up to timeout until ok holds for the calls of method
// received so far, and returns them with whether it did.
func (s *Server) WaitFor(method string, timeout time.Duration, ok func([]Call) bool) ([]Call, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		wake := s.wake
		s.mu.Unlock()
		calls := s.Calls(method)
		if ok(calls) {
			return calls, true
		}
		select {
		case <-wake:
		case <-time.After(100 * time.Millisecond):
		case <-deadline.C:
			calls = s.Calls(method)
			return calls, ok(calls)
		}
	}
}

// maxBody bounds what the fake reads of a request.
const maxBody = 4 << 20

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	method, ok := strings.CutPrefix(r.URL.Path, "/api/")
	if !ok || r.Method != http.MethodPost && r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	params, token, err := parseArgs(r, body)
	var answer map[string]any
	if err != nil {
		answer = map[string]any{"ok": false, "error": "invalid_arguments", "detail": err.Error()}
	} else {
		answer = s.answer(method, token, params)
	}
	raw, _ := json.Marshal(answer)
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: method, Token: token, Params: params, Body: body, Answer: raw, Time: time.Now()})
	close(s.wake)
	s.wake = make(chan struct{})
	stall := s.stall[method]
	s.mu.Unlock()
	if stall != nil {
		select {
		case <-stall:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(raw)
}

// parseArgs reads a call's arguments as slack-go sends them: a form
// (token in it) or JSON (token in Authorization), or a GET's query.
func parseArgs(r *http.Request, body []byte) (url.Values, string, error) {
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	params := url.Values{}
	switch {
	case r.Method == http.MethodGet:
		params = r.URL.Query()
	case ct == "application/json":
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, token, fmt.Errorf("the JSON body: %w", err)
		}
		for k, v := range m {
			var str string
			if json.Unmarshal(v, &str) == nil {
				params.Set(k, str)
			} else {
				params.Set(k, string(v))
			}
		}
	default:
		var err error
		if params, err = url.ParseQuery(string(body)); err != nil {
			return nil, token, fmt.Errorf("the form body: %w", err)
		}
	}
	if t := params.Get("token"); t != "" {
		token = t
	}
	return params, token, nil
}

func (s *Server) answer(method, token string, p url.Values) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case token == "":
		return map[string]any{"ok": false, "error": "not_authed"}
	case s.Token != "" && token != s.Token:
		return map[string]any{"ok": false, "error": "invalid_auth"}
	case s.fail[method] != "":
		return map[string]any{"ok": false, "error": s.fail[method]}
	}
	switch method {
	case "auth.test":
		return map[string]any{"ok": true, "url": "https://fake.slack.com/", "team": "Fake", "user": "agent",
			"team_id": s.TeamID, "user_id": s.BotUserID, "bot_id": s.BotID}
	case "chat.postMessage":
		if p.Get("channel") == "" {
			return map[string]any{"ok": false, "error": "channel_not_found"}
		}
		if p.Get("text") == "" && p.Get("blocks") == "" && p.Get("attachments") == "" {
			return map[string]any{"ok": false, "error": "no_text"}
		}
		if err := checkBlocks(p.Get("blocks")); err != nil {
			return map[string]any{"ok": false, "error": "invalid_blocks", "detail": err.Error()}
		}
		ts := s.nextTS()
		msg := map[string]any{"type": "message", "text": p.Get("text"), "user": s.BotUserID, "bot_id": s.BotID, "ts": ts}
		if t := p.Get("thread_ts"); t != "" {
			msg["thread_ts"] = t
		}
		return map[string]any{"ok": true, "channel": p.Get("channel"), "ts": ts, "message": msg}
	case "chat.update":
		if p.Get("channel") == "" {
			return map[string]any{"ok": false, "error": "channel_not_found"}
		}
		if p.Get("ts") == "" {
			return map[string]any{"ok": false, "error": "message_not_found"}
		}
		if err := checkBlocks(p.Get("blocks")); err != nil {
			return map[string]any{"ok": false, "error": "invalid_blocks", "detail": err.Error()}
		}
		return map[string]any{"ok": true, "channel": p.Get("channel"), "ts": p.Get("ts"), "text": p.Get("text")}
	case "chat.postEphemeral":
		if p.Get("channel") == "" {
			return map[string]any{"ok": false, "error": "channel_not_found"}
		}
		if p.Get("user") == "" {
			return map[string]any{"ok": false, "error": "user_not_in_channel"}
		}
		return map[string]any{"ok": true, "message_ts": s.nextTS()}
	case "views.open":
		if p.Get("trigger_id") == "" {
			return map[string]any{"ok": false, "error": "invalid_trigger_id"}
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(p.Get("view")), &v); err != nil {
			return map[string]any{"ok": false, "error": "invalid_arguments"}
		}
		s.seq++
		v["id"] = "V" + strconv.FormatInt(1000+s.seq, 10)
		return map[string]any{"ok": true, "view": v}
	case "usergroups.users.list":
		users, ok := s.groups[p.Get("usergroup")]
		if !ok {
			return map[string]any{"ok": false, "error": "no_such_subteam"}
		}
		return map[string]any{"ok": true, "users": append([]string{}, users...)}
	}
	return map[string]any{"ok": false, "error": "unknown_method"}
}

// checkBlocks checks that blocks, if given, is a JSON array Slack's
// types decode.
func checkBlocks(raw string) error {
	if raw == "" {
		return nil
	}
	var b slack.Blocks
	return json.Unmarshal([]byte(raw), &b)
}

// nextTS returns a new message timestamp; s.mu is held.
func (s *Server) nextTS() string {
	s.seq++
	return fmt.Sprintf("%d.%06d", time.Now().Unix(), s.seq)
}

// Sign returns the X-Slack-Signature of body sent at ts (the
// X-Slack-Request-Timestamp): v0= and the hex HMAC-SHA256 of
// "v0:<ts>:<body>" keyed by the signing secret.
func Sign(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("v0:" + ts + ":"))
	m.Write(body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}

// Sender sends signed requests to an app's Slack routes, as Slack does.
type Sender struct {
	// URL is where the routes are mounted (…/channels/slack).
	URL string
	// Secret is the signing secret.
	Secret string
	// Client sends the requests; nil means http.DefaultClient.
	Client *http.Client
}

// SendOptions change how a request is sent. Nil means defaults.
type SendOptions struct {
	// At is the request's timestamp; zero means now.
	At time.Time
	// RetryNum, if positive, sends X-Slack-Retry-Num (and
	// X-Slack-Retry-Reason), as Slack's retries do.
	RetryNum int
	// Secret, if set, signs with it instead of the Sender's.
	Secret string
	// Signature, if set, is sent instead of the computed one.
	Signature string
	// Mutate, if set, changes the body after it was signed.
	Mutate func([]byte) []byte
}

// Request builds a signed request of body to path: JSON when the body is a
// JSON object (events), else form-encoded (interactivity).
func (s *Sender) Request(path string, body []byte, opts *SendOptions) *http.Request {
	var o SendOptions
	if opts != nil {
		o = *opts
	}
	at := o.At
	if at.IsZero() {
		at = time.Now()
	}
	secret := s.Secret
	if o.Secret != "" {
		secret = o.Secret
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	sig := Sign(secret, ts, body)
	if o.Signature != "" {
		sig = o.Signature
	}
	if o.Mutate != nil {
		body = o.Mutate(slices.Clone(body))
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL+path, bytes.NewReader(body))
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		req.Header.Set("Content-Type", "application/json")
	} else {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", sig)
	if o.RetryNum > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(o.RetryNum))
		req.Header.Set("X-Slack-Retry-Reason", "http_timeout")
	}
	return req
}

// Send sends a signed request and returns the response with its body read.
func (s *Sender) Send(path string, body []byte, opts *SendOptions) (*http.Response, []byte, error) {
	c := s.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(s.Request(path, body, opts))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// Event is an Events API event to deliver. Zero fields get defaults.
type Event struct {
	// EventID is the callback's event_id (default: a new one).
	EventID string
	// TeamID (default T0000001), APIAppID (default A0000001) and BotUserID
	// (the authorization's user, default UBOT0001) describe the install.
	TeamID, APIAppID, BotUserID string
	// Type is the inner event's type: app_mention or message.
	Type string
	// Channel, ChannelType (message: im, channel, …), User, Text, TS,
	// ThreadTS, BotID and SubType are the inner event's fields.
	Channel, ChannelType, User, Text, TS, ThreadTS, BotID, SubType string
}

var eventSeq struct {
	sync.Mutex
	n int64
}

func nextSeq() int64 {
	eventSeq.Lock()
	defer eventSeq.Unlock()
	eventSeq.n++
	return eventSeq.n
}

// NewTS returns a fresh message timestamp, as Slack makes them.
func NewTS() string { return fmt.Sprintf("%d.%06d", time.Now().Unix(), nextSeq()) }

// EventCallback returns the body of an event_callback delivering e, as
// the Events API sends it.
func EventCallback(e Event) []byte {
	if e.EventID == "" {
		e.EventID = fmt.Sprintf("Ev%08d", nextSeq())
	}
	if e.TeamID == "" {
		e.TeamID = "T0000001"
	}
	if e.APIAppID == "" {
		e.APIAppID = "A0000001"
	}
	if e.BotUserID == "" {
		e.BotUserID = "UBOT0001"
	}
	if e.TS == "" {
		e.TS = NewTS()
	}
	inner := map[string]any{
		"type": e.Type, "text": e.Text, "ts": e.TS, "channel": e.Channel, "event_ts": e.TS, "team": e.TeamID,
		"blocks": []any{map[string]any{"type": "rich_text", "block_id": "b" + strconv.FormatInt(nextSeq(), 10),
			"elements": []any{map[string]any{"type": "rich_text_section", "elements": []any{map[string]any{"type": "text", "text": e.Text}}}}}},
	}
	if e.User != "" {
		inner["user"] = e.User
		inner["client_msg_id"] = fmt.Sprintf("00000000-0000-0000-0000-%012d", nextSeq())
	}
	if e.ThreadTS != "" {
		inner["thread_ts"] = e.ThreadTS
	}
	if e.ChannelType != "" {
		inner["channel_type"] = e.ChannelType
	}
	if e.BotID != "" {
		inner["bot_id"] = e.BotID
	}
	if e.SubType != "" {
		inner["subtype"] = e.SubType
	}
	secs, _ := strconv.ParseFloat(e.TS, 64)
	outer := map[string]any{
		"token": "verificationtoken", "team_id": e.TeamID, "api_app_id": e.APIAppID, "event": inner,
		"type": "event_callback", "event_id": e.EventID, "event_time": int64(secs),
		"authorizations": []any{map[string]any{"enterprise_id": nil, "team_id": e.TeamID, "user_id": e.BotUserID,
			"is_bot": true, "is_enterprise_install": false}},
		"is_ext_shared_channel": false, "event_context": "4-" + e.EventID,
	}
	b, _ := json.Marshal(outer)
	return b
}

// URLVerification returns the body of the url_verification request Slack
// sends when the Request URL is set.
func URLVerification(challenge string) []byte {
	b, _ := json.Marshal(map[string]string{"token": "verificationtoken", "challenge": challenge, "type": "url_verification"})
	return b
}

// Click is a button click on a message.
type Click struct {
	// User clicked; TeamID defaults to T0000001.
	User, TeamID string
	// Channel and MessageTS name the message (ThreadTS its thread, if it
	// is a reply).
	Channel, MessageTS, ThreadTS string
	// ActionID, BlockID and Value are the button's.
	ActionID, BlockID, Value string
	// TriggerID opens a modal (default: a new one).
	TriggerID string
}

// BlockActions returns the form-encoded body of a block_actions
// interaction (payload=<JSON>), as Slack sends a button click.
func BlockActions(c Click) []byte {
	if c.TeamID == "" {
		c.TeamID = "T0000001"
	}
	if c.TriggerID == "" {
		c.TriggerID = fmt.Sprintf("%d.%d.trigger", nextSeq(), time.Now().Unix())
	}
	if c.BlockID == "" {
		c.BlockID = "actions"
	}
	actionTS := NewTS()
	container := map[string]any{"type": "message", "message_ts": c.MessageTS, "channel_id": c.Channel, "is_ephemeral": false}
	if c.ThreadTS != "" {
		container["thread_ts"] = c.ThreadTS
	}
	payload := map[string]any{
		"type":       "block_actions",
		"user":       map[string]any{"id": c.User, "username": strings.ToLower(c.User), "name": strings.ToLower(c.User), "team_id": c.TeamID},
		"api_app_id": "A0000001", "token": "verificationtoken", "container": container, "trigger_id": c.TriggerID,
		"team":       map[string]any{"id": c.TeamID, "domain": "fake"},
		"enterprise": nil, "is_enterprise_install": false,
		"channel":      map[string]any{"id": c.Channel, "name": "general"},
		"message":      map[string]any{"type": "message", "user": "UBOT0001", "ts": c.MessageTS, "bot_id": "BBOT0001", "text": "card"},
		"state":        map[string]any{"values": map[string]any{}},
		"response_url": "https://hooks.slack.com/actions/T0000001/1/x",
		"actions": []any{map[string]any{
			"action_id": c.ActionID, "block_id": c.BlockID, "value": c.Value, "type": "button", "action_ts": actionTS,
			"text": map[string]any{"type": "plain_text", "text": c.ActionID, "emoji": true},
		}},
	}
	return form(payload)
}

// Submission is a modal's submission.
type Submission struct {
	// User submitted; TeamID defaults to T0000001.
	User, TeamID string
	// CallbackID and PrivateMetadata are the view's, as the app opened it.
	CallbackID, PrivateMetadata string
	// Values are the inputs: block id → action id → typed value.
	Values map[string]map[string]string
	// ViewID defaults to a new one.
	ViewID string
}

// ViewSubmission returns the form-encoded body of a view_submission
// interaction, as Slack sends a modal's submission.
func ViewSubmission(s Submission) []byte {
	if s.TeamID == "" {
		s.TeamID = "T0000001"
	}
	if s.ViewID == "" {
		s.ViewID = fmt.Sprintf("V%08d", nextSeq())
	}
	values := map[string]any{}
	for block, actions := range s.Values {
		m := map[string]any{}
		for action, v := range actions {
			m[action] = map[string]any{"type": "plain_text_input", "value": v}
		}
		values[block] = m
	}
	payload := map[string]any{
		"type":       "view_submission",
		"team":       map[string]any{"id": s.TeamID, "domain": "fake"},
		"user":       map[string]any{"id": s.User, "username": strings.ToLower(s.User), "name": strings.ToLower(s.User), "team_id": s.TeamID},
		"api_app_id": "A0000001", "token": "verificationtoken", "trigger_id": fmt.Sprintf("%d.trigger", nextSeq()),
		"view": map[string]any{
			"id": s.ViewID, "team_id": s.TeamID, "type": "modal", "blocks": []any{},
			"private_metadata": s.PrivateMetadata, "callback_id": s.CallbackID,
			"state": map[string]any{"values": values}, "hash": "1.hash",
			"title": map[string]any{"type": "plain_text", "text": "Deny", "emoji": true},
			"close": nil, "submit": map[string]any{"type": "plain_text", "text": "Deny", "emoji": true},
			"app_id": "A0000001", "bot_id": "BBOT0001", "root_view_id": s.ViewID, "previous_view_id": nil,
			"clear_on_close": false, "notify_on_close": false, "external_id": "",
		},
		"response_urls": []any{}, "is_enterprise_install": false, "enterprise": nil,
	}
	return form(payload)
}

// Interaction returns the form-encoded body of any interaction payload.
func Interaction(payload any) []byte { return form(payload) }

func form(payload any) []byte {
	b, _ := json.Marshal(payload)
	return []byte(url.Values{"payload": {string(b)}}.Encode())
}

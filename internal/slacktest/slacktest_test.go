package slacktest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
)

// TestWebAPI: slack-go's client talks to the fake as to Slack.
func TestWebAPI(t *testing.T) {
	s := NewServer()
	defer s.Close()
	s.Token = "xoxb-1"
	s.SetUserGroup("SGROUP01", "UALICE01", "UBOB0001")
	c := slack.New("xoxb-1", slack.OptionAPIURL(s.APIURL()))
	ctx := context.Background()

	auth, err := c.AuthTestContext(ctx)
	if err != nil || auth.UserID != s.BotUserID {
		t.Fatalf("auth.test: %+v %v", auth, err)
	}
	ch, ts, err := c.PostMessageContext(ctx, "C1", slack.MsgOptionText("hi & <bye>", true), slack.MsgOptionTS("1.2"),
		slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "*x* <y>", false, false), nil, nil)))
	if err != nil || ch != "C1" || ts == "" {
		t.Fatalf("chat.postMessage: %s %s %v", ch, ts, err)
	}
	if _, _, _, err := c.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("updated", false)); err != nil {
		t.Fatalf("chat.update: %v", err)
	}
	if _, err := c.PostEphemeralContext(ctx, "C1", "UALICE01", slack.MsgOptionText("psst", false)); err != nil {
		t.Fatalf("chat.postEphemeral: %v", err)
	}
	view, err := c.OpenViewContext(ctx, "trigger", slack.ModalViewRequest{Type: slack.VTModal, CallbackID: "cb",
		Title: slack.NewTextBlockObject(slack.PlainTextType, "T", false, false)})
	if err != nil || view.View.ID == "" {
		t.Fatalf("views.open: %+v %v", view, err)
	}
	users, err := c.GetUserGroupMembersContext(ctx, "SGROUP01")
	if err != nil || strings.Join(users, ",") != "UALICE01,UBOB0001" {
		t.Fatalf("usergroups.users.list: %v %v", users, err)
	}
	if _, err := c.GetUserGroupMembersContext(ctx, "SNONE"); err == nil || err.Error() != "no_such_subteam" {
		t.Errorf("unknown group: %v", err)
	}
	if _, _, err := slack.New("xoxb-wrong", slack.OptionAPIURL(s.APIURL())).PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false)); err == nil || err.Error() != "invalid_auth" {
		t.Errorf("wrong token: %v", err)
	}
	s.Fail("chat.update", "message_not_found")
	if _, _, _, err := c.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("x", false)); err == nil || err.Error() != "message_not_found" {
		t.Errorf("failing chat.update: %v", err)
	}

	posts := s.Calls("chat.postMessage")
	if len(posts) != 2 || !posts[0].OK() || posts[1].OK() || posts[1].Token != "xoxb-wrong" {
		t.Fatalf("posts: %+v", posts)
	}
	p := posts[0]
	if p.Text() != "hi &amp; &lt;bye&gt;" || p.ThreadTS() != "1.2" || p.Channel() != "C1" || p.AnsweredTS() != ts || !strings.Contains(p.BlockText(), "*x* <y>") {
		t.Errorf("recorded post: %q %q %q %q", p.Text(), p.ThreadTS(), p.AnsweredTS(), p.BlockText())
	}
	if b, err := p.Blocks(); err != nil || len(b.BlockSet) != 1 {
		t.Errorf("blocks: %v %v", b, err)
	}
	if up := s.Calls("chat.update"); len(up) != 2 || up[0].TS() != ts {
		t.Errorf("updates: %+v", up)
	}
	if v, err := s.Calls("views.open")[0].View(); err != nil || v.CallbackID != "cb" {
		t.Errorf("view: %+v %v", v, err)
	}
	if calls, ok := s.WaitFor("auth.test", time.Second, func(c []Call) bool { return len(c) == 1 }); !ok || calls[0].Token != "xoxb-1" {
		t.Errorf("auth.test recorded: %+v", calls)
	}
}

// TestRequests: what the builders make, slack-go reads, and the signature
// is Slack's.
func TestRequests(t *testing.T) {
	body := EventCallback(Event{Type: "app_mention", Channel: "C1", User: "UALICE01", Text: "<@UBOT0001> hi", ThreadTS: "1.000001"})
	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err != nil {
		t.Fatal(err)
	}
	m, ok := ev.InnerEvent.Data.(*slackevents.AppMentionEvent)
	if !ok || m.User != "UALICE01" || m.Channel != "C1" || m.ThreadTimeStamp != "1.000001" || m.TimeStamp == "" {
		t.Fatalf("app_mention: %+v", ev.InnerEvent.Data)
	}
	body = EventCallback(Event{Type: "message", ChannelType: "im", Channel: "D1", User: "UALICE01", Text: "hi"})
	ev, err = slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err != nil {
		t.Fatal(err)
	}
	if dm, ok := ev.InnerEvent.Data.(*slackevents.MessageEvent); !ok || dm.ChannelType != "im" || dm.Text != "hi" {
		t.Fatalf("message.im: %+v", ev.InnerEvent.Data)
	}
	ev, err = slackevents.ParseEvent(json.RawMessage(URLVerification("ch")), slackevents.OptionNoVerifyToken())
	if err != nil || ev.Data.(*slackevents.EventsAPIURLVerificationEvent).Challenge != "ch" {
		t.Fatalf("url_verification: %+v %v", ev, err)
	}

	type received struct {
		r    *http.Request
		body []byte
	}
	reqs := make(chan received, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs <- received{r.Clone(context.Background()), must(io.ReadAll(r.Body))}
	}))
	defer srv.Close()
	s := &Sender{URL: srv.URL, Secret: "shh"}
	if _, _, err := s.Send("/interactivity", BlockActions(Click{User: "UALICE01", Channel: "C1", MessageTS: "1.2", ActionID: "approve", Value: "call_1"}), &SendOptions{RetryNum: 2}); err != nil {
		t.Fatal(err)
	}
	rec := <-reqs
	got, gotBody := rec.r, rec.body
	sv, err := slack.NewSecretsVerifier(got.Header, "shh")
	if err != nil {
		t.Fatal(err)
	}
	sv.Write(gotBody)
	if err := sv.Ensure(); err != nil {
		t.Errorf("slack-go refuses the signature: %v", err)
	}
	if got.Header.Get("X-Slack-Retry-Num") != "2" || got.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		t.Errorf("headers: %v", got.Header)
	}
	got.Body = io.NopCloser(strings.NewReader(string(gotBody)))
	ic, err := slack.InteractionCallbackParse(got)
	if err != nil {
		t.Fatal(err)
	}
	if ic.Type != slack.InteractionTypeBlockActions || ic.User.ID != "UALICE01" || len(ic.ActionCallback.BlockActions) != 1 ||
		ic.ActionCallback.BlockActions[0].Value != "call_1" || ic.Container.MessageTs != "1.2" || ic.TriggerID == "" {
		t.Errorf("block_actions: %+v", ic)
	}

	if _, _, err := s.Send("/interactivity", ViewSubmission(Submission{User: "UBOB0001", CallbackID: "cb", PrivateMetadata: `{"a":1}`,
		Values: map[string]map[string]string{"reason": {"reason": "no"}}}), nil); err != nil {
		t.Fatal(err)
	}
	rec = <-reqs
	got, gotBody = rec.r, rec.body
	got.Body = io.NopCloser(strings.NewReader(string(gotBody)))
	ic, err = slack.InteractionCallbackParse(got)
	if err != nil {
		t.Fatal(err)
	}
	if ic.Type != slack.InteractionTypeViewSubmission || ic.View.CallbackID != "cb" || ic.View.PrivateMetadata != `{"a":1}` ||
		ic.View.State.Values["reason"]["reason"].Value != "no" {
		t.Errorf("view_submission: %+v", ic.View)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

package slackbot

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/slacktest"
)

// slackDeployers maps three Slack users to deployer principals
// (agent.yaml's auth.slack); UNOROLE1 is not mapped.
func slackDeployers(o *host.Options) {
	o.ChannelUsers = map[string]host.ChannelUser{
		"slack:UALICE01": {Principal: "alice", Roles: []string{"deployer"}},
		"slack:UBOB0001": {Principal: "bob", Roles: []string{"deployer"}},
		"slack:UCAROL01": {Principal: "carol", Roles: []string{"deployer"}},
	}
}

// cardUpdate waits for a chat.update of the message ts whose blocks
// contain want, buttons or not.
func (e *env) cardUpdate(channelID, ts, want string) slacktest.Call {
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
	return found
}

// TestQuorumInSlack: a release needs two deployers other than the one
// who asked. Slack users decide as the principals agent.yaml maps them
// to: the requester is told another must decide, an unmapped user that
// their roles may not, the first deployer's approval shows on the card as
// "1 of 2" with the buttons still there (a second click by them is told
// so), and the second's approves, runs the call once and closes the card.
func TestQuorumInSlack(t *testing.T) {
	e := newEnvWith(t, Config{}, slackDeployers,
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "r1", Name: "release", Input: `{"service":"checkout"}`}}},
		fakemodel.Reply{Text: []string{"Released."}},
	)
	thread := e.mention(general, "UALICE01", "release checkout", "")
	callID, card := e.card(general, thread)
	if !strings.Contains(card.BlockText(), "Approvals: 0 of 2") {
		t.Errorf("the card does not say it needs two: %s", card.BlockText())
	}
	for _, c := range []struct{ user, told string }{
		{"UALICE01", "You asked for this call"},
		{"UNOROLE1", "yours are not among them"},
	} {
		if status, b := e.click(c.user, actionApprove, callID, card); status != http.StatusOK {
			t.Fatalf("click by %s: %d %s", c.user, status, b)
		}
		e.ephemeral(c.user, c.told)
	}
	if a := e.approval(callID); a.Status != api.ApprovalPending || len(a.Approvals) != 0 {
		t.Fatalf("after the refused clicks: %+v", a)
	}

	e.click("UBOB0001", actionApprove, callID, card)
	e.ephemeral("UBOB0001", "Your approval is recorded: 1 of 2; the call runs on the 2nd.")
	up := e.cardUpdate(general, card.AnsweredTS(), "Approvals: 1 of 2 (<@UBOB0001>)")
	if up.Button(actionApprove) != callID {
		t.Errorf("the card lost its buttons after one approval of two: %s", up.Params.Get("blocks"))
	}
	e.click("UBOB0001", actionApprove, callID, card)
	e.ephemeral("UBOB0001", "You approved it already: it needs 2 approvals from different people (1 so far).")
	if n := e.ran.Load(); n != 0 {
		t.Fatalf("ran after one approval: %d", n)
	}

	e.click("UCAROL01", actionApprove, callID, card)
	e.updated(general, card.AnsweredTS(), "Approved by <@UCAROL01>")
	e.updated(general, card.AnsweredTS(), "Approvals: 2 of 2 (<@UBOB0001>, <@UCAROL01>)")
	e.posted(thread, "Released.")
	if n := e.ran.Load(); n != 1 {
		t.Errorf("release ran %d times", n)
	}
}

// TestEditOnCard: a call approved over HTTP with an edited input closes
// its card showing what changed, from what was asked to what ran.
func TestEditOnCard(t *testing.T) {
	e := newEnv(t, Config{ApprovalsChannel: "CAPPROVE1"})
	_, err := e.h.CallTool(context.Background(), "deploy", map[string]string{"service": "billing"}, &host.CallOptions{Principal: "alice"})
	var pending *host.ApprovalPendingError
	if !errors.As(err, &pending) {
		t.Fatalf("not parked: %v", err)
	}
	callID, card := e.card("CAPPROVE1", "")
	req, _ := http.NewRequest("POST", e.base+"/agent/v1/approvals/"+callID, strings.NewReader(`{"approved":true,"input":{"service":"billing-canary"}}`))
	req.Header.Set("Authorization", "Bearer "+apiToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("approve with an edit: %d %s", resp.StatusCode, b)
	}
	up := e.updated("CAPPROVE1", card.AnsweredTS(), "Edited before approval")
	if !strings.Contains(up.BlockText(), "`input.service`: `\"billing\"` → `\"billing-canary\"`") {
		t.Errorf("the card does not show the change: %s", up.BlockText())
	}
	eventually(t, "deploy to run", func() bool { return e.ran.Load() == 1 })
	if a := e.approval(callID); a.Outcome == nil || string(a.Outcome.Result) != `{"deployed":"billing-canary"}` {
		t.Errorf("what ran: %+v", a.Outcome)
	}
}

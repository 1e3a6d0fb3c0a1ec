package main_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/store/sqlite"
)

// The playground's Cancel on a turn parked on an approval, in a real
// browser: the turn ends (turn failed, cancelled) with no error shown
// (it was 409 no_running_turn), the call's Approve and Deny give way to
// its cancelled decision and result, the approvals page (another tab)
// moves the call to the decided, and the session takes the next message.
func TestPlaygroundCancelParkedTurn(t *testing.T) {
	p, env, dir, shots := pgParkedDeploy(t, "cancel", "toolu_deploy_c", "Nothing was deployed.")
	fake := env.fake
	sessionID := p.text("#session-id")
	callID := pgJS[string](p, pgCallID, "deploy")
	call := `#trajectory > li.call[data-call-id="` + callID + `"]`
	// The store is the judge of parked: the host's, read beside it.
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, ".agent-sdk", "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eventually(t, pgStepTimeout, "the turn parks", func() bool {
		parked, err := st.ParkedTurns(ctx)
		return err == nil && len(parked) == 1 && parked[0].SessionID == sessionID
	})
	p.do("the parked turn running", chromedp.WaitVisible(chromedp.CSS("#session-state.running")), chromedp.WaitVisible(chromedp.ID("cancel-turn")))

	q := pgOpen(t, p.ctx, "approvals", env, shots)
	item := `.approval-item[data-call-id="` + callID + `"]`
	q.do("the approvals page", chromedp.Navigate(env.base+"/#/approvals"), chromedp.WaitVisible(chromedp.CSS("#approvals-list "+item+" .approve")))
	p.shot("cancel-parked")

	p.do("cancelling the parked turn",
		chromedp.Click(chromedp.ID("cancel-turn")),
		chromedp.WaitVisible(chromedp.CSS("#trajectory > li.ev-turn.failed")),
		chromedp.WaitVisible(chromedp.CSS("#session-state.idle")),
		chromedp.WaitNotVisible(chromedp.ID("cancel-turn")))
	if got := p.text("#send-error"); got != "" {
		t.Errorf("Cancel shows an error: %q", got)
	}
	p.waitText("#trajectory > li.ev-turn.failed .fail-code", "cancelled")
	p.waitText("#trajectory > li.ev-turn.failed .fail-reason", "cancelled")
	p.do("the call's decision", chromedp.WaitVisible(chromedp.CSS(call+" .approval.resolved.cancelled .approval-decision")))
	p.waitText(call+" .approval-decision .approval-status", "cancelled")
	if n := p.count(call + " .approval .decide"); n != 0 {
		t.Errorf("the cancelled call still has its Approve and Deny")
	}
	p.waitText(call+" .call-result pre", "cancelled before it finished")
	if p.count(call+".is-error") != 1 {
		t.Errorf("the cancelled call's result is not shown as an error")
	}
	p.shot("cancel-done")

	// The approvals page, polling, moves the call to the decided.
	q.do("the approvals page after the cancel", chromedp.WaitVisible(chromedp.CSS("#approvals-decided "+item+".resolved.cancelled")))
	q.waitText("#approvals-status", "Nothing waits for a decision.")
	q.shot("cancel-approvals")

	p.do("sending again",
		chromedp.SendKeys(chromedp.ID("send-message"), "Never mind"),
		chromedp.Click(chromedp.ID("send-submit")),
		chromedp.WaitVisible(chromedp.CSS("#trajectory > li.ev-turn.completed")))
	p.waitAnyText("#trajectory > li.ev.assistant .msg.assistant", "Nothing was deployed.")
	if got := p.text("#send-error"); got != "" {
		t.Errorf("sending after the cancel shows an error: %q", got)
	}
	if n := len(fake.Requests()); n != 2 {
		t.Errorf("the model was asked %d times, want 2 (the cancelled turn, the next)", n)
	}
	p.checkClean()
	q.checkClean()
}

// pgParkedDeploy serves the playground's agent with a fake model that
// first asks to deploy web (its call modelCallID) and then says followUp,
// opens a tab (name) in a browser of its own, signs in, and asks for the
// deploy, until the call's Approve shows: the tab, the served agent, its
// directory and the test's screenshots.
func pgParkedDeploy(t *testing.T, name, modelCallID, followUp string) (*pgPage, *pgEnv, string, *pgShots) {
	t.Helper()
	return pgParkedCall(t, name, nil, fakemodel.Call{ID: modelCallID, Name: "deploy", Input: `{"service":"web"}`}, followUp)
}

// pgParkedCall is pgParkedDeploy for another call of the model's, with
// tools files (by name, under agent/tools) beside the playground's
// fixtures.
func pgParkedCall(t *testing.T, name string, tools map[string]string, call fakemodel.Call, followUp string) (*pgPage, *pgEnv, string, *pgShots) {
	t.Helper()
	browser := playgroundBrowser(t)
	fake := fakemodel.New(fakemodel.Reply{Text: []string{"Deploying web."}, Calls: []fakemodel.Call{call}})
	t.Cleanup(fake.Close)
	fake.SetDefault(fakemodel.Reply{Text: []string{followUp}})
	dir := filepath.Join(t.TempDir(), pgSlug)
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	if err := addFixtures(dir, "playground", "model:\n  provider: anthropic\n  name: fake-model\nmaxSteps: 4\n"); err != nil {
		t.Fatal(err)
	}
	for file, src := range tools {
		if err := os.WriteFile(filepath.Join(dir, "agent", "tools", file), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := startServerEnv(t, dir, []string{"ANTHROPIC_BASE_URL=" + fake.AnthropicURL(), "ANTHROPIC_API_KEY=test-key"})
	env := &pgEnv{s: s, fake: fake, base: strings.TrimSuffix(s.base, "/v1")}
	shots := pgScreenshots(t)
	p := pgOpen(t, browser, name, env, shots, chromedp.WithNewBrowserContext())
	p.signIn()
	p.do("asking for a deploy",
		chromedp.SendKeys(chromedp.ID("new-session-message"), "Deploy web to production"),
		chromedp.Click(chromedp.ID("new-session-submit")),
		chromedp.WaitVisible(chromedp.CSS("#trajectory > li.call .approval .approve")))
	return p, env, dir, shots
}

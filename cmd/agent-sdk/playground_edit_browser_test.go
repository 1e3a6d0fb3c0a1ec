package main_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// Edit before approve in the playground, in a real browser: Edit input
// opens the call's input; an edit that is not JSON is refused in the page,
// one the tool's schema refuses shows the host's invalid_input and leaves
// Approve and Deny; a valid one approves, the decision shows the change
// from what was asked (from the stream's action.approval_resolved), and
// the result is the edited input's.
func TestPlaygroundEditBeforeApprove(t *testing.T) {
	browser := playgroundBrowser(t)
	fake := fakemodel.New(fakemodel.Reply{Text: []string{"Deploying web."}, Calls: []fakemodel.Call{{ID: "toolu_deploy_e", Name: "deploy", Input: `{"service":"web"}`}}})
	t.Cleanup(fake.Close)
	fake.SetDefault(fakemodel.Reply{Text: []string{"Done."}})
	dir := filepath.Join(t.TempDir(), pgSlug)
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	if err := addFixtures(dir, "playground", "model:\n  provider: anthropic\n  name: fake-model\nmaxSteps: 4\n"); err != nil {
		t.Fatal(err)
	}
	s := startServerEnv(t, dir, []string{"ANTHROPIC_BASE_URL=" + fake.AnthropicURL(), "ANTHROPIC_API_KEY=test-key"})
	env := &pgEnv{s: s, fake: fake, base: strings.TrimSuffix(s.base, "/v1")}
	shots := pgScreenshots(t)
	p := pgOpen(t, browser, "edit", env, shots, chromedp.WithNewBrowserContext())
	p.signIn()
	p.do("asking for a deploy",
		chromedp.SendKeys(chromedp.ID("new-session-message"), "Deploy web to production"),
		chromedp.Click(chromedp.ID("new-session-submit")),
		chromedp.WaitVisible(chromedp.CSS("#trajectory > li.call .approval .approve")))
	callID := pgJS[string](p, pgCallID, "deploy")
	call := `#trajectory > li.call[data-call-id="` + callID + `"]`
	editor := call + " .approval textarea.edit-input"
	p.do("opening the editor", chromedp.Click(chromedp.CSS(call+" .approval button.edit")), chromedp.WaitVisible(chromedp.CSS(editor)))
	if got := p.text(editor); !strings.Contains(got, `"service": "web"`) {
		// textContent of a textarea is its first value; read the property.
		if v := pgJS[string](p, `sel => document.querySelector(sel).value`, editor); !strings.Contains(v, `"service": "web"`) {
			t.Errorf("the editor holds %q, want the input asked for", v)
		}
	}
	setEditor := func(v string) chromedp.Action[chromedp.Void] {
		return chromedp.SetValue(chromedp.CSS(editor), v)
	}
	p.do("an edit that is not JSON", setEditor(`{"service":`), chromedp.Click(chromedp.CSS(call+" .approval .approve")))
	p.waitText(call+" .approval .decide-error", "not JSON")
	p.do("an edit the schema refuses", setEditor(`{"service": 7}`), chromedp.Click(chromedp.CSS(call+" .approval .approve")))
	p.waitText(call+" .approval .decide-error", "400")
	if n := p.count(call + " .approval .decide .approve"); n != 1 {
		t.Fatalf("after the refused edit Approve is gone")
	}
	p.do("a valid edit", setEditor(`{"service": "web-canary"}`), chromedp.Click(chromedp.CSS(call+" .approval .approve")),
		chromedp.WaitVisible(chromedp.CSS(call+" .approval.resolved.approved .approval-changes")))
	p.waitText(call+" .approval-changes .change-path", "input.service")
	p.waitText(call+" .approval-changes .change", `"web" → "web-canary"`)
	p.waitText(call+" .call-result pre", `"deployed": "web-canary"`)
	p.shot("edit-approved")
}

package main_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Edit before approve in the playground, in a real browser: Edit input
// opens the call's input; an edit that is not JSON is refused in the page,
// one the tool's schema refuses shows the host's invalid_input and leaves
// Approve and Deny; a valid one approves, the decision shows the change
// from what was asked (from the stream's action.approval_resolved), and
// the result is the edited input's.
func TestPlaygroundEditBeforeApprove(t *testing.T) {
	p, _, _, _ := pgParkedDeploy(t, "edit", "toolu_deploy_e", "Done.")
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

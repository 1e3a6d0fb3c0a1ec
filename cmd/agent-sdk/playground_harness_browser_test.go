package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// A Claude Code turn in the playground, in a real browser, as a native
// one shows: the harness session it runs in, its plan, its shell command
// with its title and kind, parked for approval and approved from the
// trajectory, run in the session's workspace, its result, and the answer.
func TestPlaygroundHarnessTurn(t *testing.T) {
	browser := playgroundBrowser(t)
	fake := fakemodel.New()
	t.Cleanup(fake.Close)
	dir, env := harnessAgent(t, fake)
	s := startServerEnv(t, dir, env)
	pe := &pgEnv{s: s, fake: fake, base: strings.TrimSuffix(s.base, "/v1")}
	p := pgOpen(t, browser, "harness", pe, pgScreenshots(t), chromedp.WithNewBrowserContext())
	p.signIn()

	todos := `{"todos":[{"content":"Make the file","status":"in_progress","activeForm":"Making the file"},{"content":"Report","status":"pending","activeForm":"Reporting"}]}`
	fake.SetDefault(fakemodel.Reply{Text: []string{"Made notes.txt."}})
	fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "toolu_plan", Name: "TodoWrite", Input: todos}}},
		fakemodel.Reply{Text: []string{"Making it now."}, Calls: []fakemodel.Call{{ID: "toolu_sh", Name: "Bash", Input: `{"command":"echo made > notes.txt","description":"make the file"}`}}})
	p.do("starting a session",
		chromedp.SendKeys(chromedp.ID("new-session-message"), "Make notes.txt"),
		chromedp.Click(chromedp.ID("new-session-submit")),
		chromedp.WaitVisible(chromedp.ID("session-id")))
	sessionID := p.text("#session-id")
	p.do("the harness's approval request", chromedp.WaitVisible(chromedp.CSS("#trajectory > li.call .approval .approve")))
	callID := pgJS[string](p, pgCallID, "harness_execute")
	if callID == "" {
		p.fail("no harness_execute call in the trajectory")
	}
	call := `#trajectory > li.call[data-call-id="` + callID + `"]`
	if got := p.text(call + " .call-title"); !strings.Contains(got, "execute") || !strings.Contains(got, "echo made > notes.txt") {
		t.Errorf("the call's title: %q", got)
	}
	p.waitAnyText("#trajectory > li.ev-note", "claude-code")
	if got := pgJS[[]string](p, `() => [...document.querySelectorAll('#trajectory ol.plan li')].map(e => e.textContent)`); len(got) != 2 || !strings.Contains(got[0], "Make the file") {
		t.Errorf("the plan: %q", got)
	}
	ws := filepath.Join(dir, ".agent-sdk", "sessions", sessionID, "workspace")
	if _, err := os.Stat(filepath.Join(ws, "notes.txt")); err == nil {
		t.Fatal("the command ran before its approval")
	}
	p.shot("harness-approval")
	p.do("approving in the trajectory",
		chromedp.Click(chromedp.CSS(call+" .approval .approve")),
		chromedp.WaitVisible(chromedp.CSS(call+" .approval.resolved.approved .approval-decision")))
	p.waitCount("#trajectory > li.ev-turn.completed", 1)
	p.waitAnyText("#trajectory > li.ev.assistant .msg.assistant", "Made notes.txt.")
	if n := p.count(call + " .call-result"); n != 1 {
		t.Errorf("%d results shown for the command", n)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "notes.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("notes.txt in the session's workspace: %q, %v", b, err)
	}
	p.shot("harness-done")
	p.checkClean()
}

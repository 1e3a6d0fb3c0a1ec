package slackbot

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/internal/harnesstest"
)

// A Slack thread whose session runs on Claude Code: the shell command
// the harness asks to run is a card with the exact command; a click
// approves it, the harness runs it in the session's workspace, and its
// answer is posted in the thread.
func TestHarnessApproveInSlack(t *testing.T) {
	fake := fakemodel.New(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "toolu_1", Name: "Bash", Input: `{"command":"echo made > made.txt","description":"make a file"}`}}},
		fakemodel.Reply{Text: []string{"Made it."}})
	t.Cleanup(fake.Close)
	spec := harnesstest.Claude(t, fake)
	e := newEnvWith(t, Config{Allow: []string{"UALLOW01"}}, func(o *host.Options) {
		o.Runtime, o.Harnesses = harness.ClaudeCode, map[string]harness.Spec{spec.Name: spec}
	})
	thread := e.mention(general, "UALICE01", "make a file", "")
	callID, card := e.card(general, thread)
	blocks := card.BlockText()
	for _, want := range []string{"harness_execute", "echo made &gt; made.txt", "<@UALICE01>", callID} {
		if !strings.Contains(blocks, want) {
			t.Errorf("the card lacks %q: %s", want, blocks)
		}
	}
	a := e.approval(callID)
	ws := e.h.Sessions().WorkspaceDir(a.SessionID)
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); err == nil {
		t.Fatal("the command ran before approval")
	}
	if status, b := e.click("UALLOW01", actionApprove, callID, card); status != http.StatusOK {
		t.Fatalf("click: %d %s", status, b)
	}
	if a := e.approval(callID); a.Status != api.ApprovalApproved || a.DecidedBy != "slack:UALLOW01" {
		t.Fatalf("after the click: %+v", a)
	}
	e.updated(general, card.AnsweredTS(), "Approved by <@UALLOW01>")
	e.posted(thread, "Made it.")
	if b, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("made.txt: %q, %v", b, err)
	}
}

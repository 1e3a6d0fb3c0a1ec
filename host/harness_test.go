package host_test

import (
	"encoding/json"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/internal/harnesstest"
	"github.com/agentsdk/agentsdk/store/memory"
	"github.com/agentsdk/agentsdk/tool"
)

// harnessHost starts a host whose sessions may run on Claude Code
// against fake.
func harnessHost(t *testing.T, fake *fakemodel.Server, perms harness.Permissions) *host.Host {
	spec := harnesstest.Claude(t, fake)
	spec.Permissions = perms
	set, err := tool.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	return startHost(t, memory.New(), set, fake.AnthropicURL(), host.Options{Harnesses: map[string]harness.Spec{harness.ClaudeCode: spec}})
}

// waitHarnessParked waits for the turn's first parked call.
func waitHarnessParked(t *testing.T, h *host.Host, sessionID string) api.ApprovalRequested {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		evs, err := h.Sessions().Events(context.Background(), sessionID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if rs := find(evs, api.KindApprovalRequested); len(rs) > 0 {
			r, _ := api.Decode[api.ApprovalRequested](rs[0])
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no call parked")
	return api.ApprovalRequested{}
}

// A Claude Code turn: its text is the session's message; a shell command
// it asks permission for parks, and once approved runs in the session's
// workspace; the next turn continues the harness's conversation.
func TestHarnessTurnClaude(t *testing.T) {
	fake := fakemodel.New()
	t.Cleanup(fake.Close)
	h := harnessHost(t, fake, harness.Permissions{})
	ctx := context.Background()
	fake.Push(fakemodel.Reply{Text: []string{"hello ", "there"}})
	sess, turn, err := h.Sessions().Create(ctx, host.SessionOptions{Message: "say hello", Runtime: harness.ClaudeCode})
	if err != nil {
		t.Fatal(err)
	}
	evs := waitTurnEnd(t, h, sess.ID, turn)
	if k := kinds(evs); !strings.Contains(k, "harness.session") || len(find(evs, api.KindTurnCompleted)) != 1 {
		t.Fatalf("events: %s", k)
	}
	if m := lastAssistant(evs); m != "hello there" {
		t.Fatalf("answer %q; events %s", m, kinds(evs))
	}

	fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "toolu_1", Name: "Bash", Input: `{"command":"echo made > made.txt","description":"make a file"}`}}},
		fakemodel.Reply{Text: []string{"made it"}})
	turn, err = h.Sessions().Send(ctx, sess.ID, "make a file")
	if err != nil {
		t.Fatal(err)
	}
	parked := waitHarnessParked(t, h, sess.ID)
	var asked struct {
		Title, Kind string
	}
	if err := json.Unmarshal(parked.Input, &asked); err != nil || parked.Tool != "harness_execute" || asked.Title != "echo made > made.txt" || asked.Kind != "execute" {
		t.Fatalf("parked %+v", parked)
	}
	ws := h.Sessions().WorkspaceDir(sess.ID)
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); err == nil {
		t.Fatal("the command ran before approval")
	}
	if _, err := h.Approvals().Resolve(ctx, parked.CallID, host.Decision{Approved: true, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	evs = waitTurnEnd(t, h, sess.ID, turn)
	if b, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("made.txt: %q, %v; events %s", b, err, kinds(evs))
	}
	var results int
	for _, e := range find(evs, api.KindActionResult) {
		if r, _ := api.Decode[api.ActionResult](e); r.CallID == parked.CallID {
			results++
		}
	}
	if results != 1 || lastAssistant(evs) != "made it" {
		t.Errorf("%d results for the call, answer %q: %s", results, lastAssistant(evs), kinds(evs))
	}
	a, err := h.Approvals().Get(ctx, parked.CallID)
	if err != nil || a.Outcome == nil || a.DecidedBy != "alice" {
		t.Errorf("approval %+v, %v", a, err)
	}
}

// lastAssistant is the text of the last assistant message in evs.
func lastAssistant(evs []api.Event) string {
	text := ""
	for _, e := range find(evs, api.KindMessage) {
		if m, _ := api.Decode[api.Message](e); m.Role == api.RoleAssistant {
			text = m.Text
		}
	}
	return text
}

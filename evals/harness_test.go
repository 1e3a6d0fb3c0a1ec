package evals_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/internal/harnesstest"
)

// An eval of an agent whose sessions run on Claude Code: the case's
// checks read the harness turn as a native one's — its answer, the
// harness's own shell call (harness_execute, allowed by the agent's
// permissions) with its input, its steps and its errors.
func TestEvalHarnessTurn(t *testing.T) {
	m := newEvalModel(t)
	spec := harnesstest.Claude(t, m.Default)
	spec.Env["ANTHROPIC_BASE_URL"] = m.URL // the router: each case its own script
	spec.Permissions = harness.Permissions{Allow: []string{"execute:echo *"}}
	in, _ := json.Marshal(map[string]string{"command": "echo made > made.txt", "description": "make a file"})
	m.Route("[make]",
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "toolu_1", Name: "Bash", Input: string(in)}}},
		fakemodel.Reply{Text: []string{"The file is made."}})
	h := evalHost(t, openStore(t, "sqlite"), evalTools(t), m, host.Options{Runtime: harness.ClaudeCode, Harnesses: map[string]harness.Spec{spec.Name: spec}})
	started, err := h.RunEval(context.Background(), api.EvalRunRequest{Name: "harness", Cases: []api.EvalCase{
		{Name: "make", Message: "[make] Make a file.", Checks: []api.EvalCheck{
			{Called: "harness_execute", Args: map[string]any{"command": "echo made > made.txt"}},
			{NotCalled: "lookup"},
			{Contains: "file is made"},
			{NoError: true},
		}},
	}}, "tester")
	if err != nil {
		t.Fatal(err)
	}
	b := waitEval(t, h, started.ID)
	c := b.Cases[0]
	if c.Status != api.EvalCompleted || !c.Pass || c.Score != 1 {
		t.Fatalf("case: %+v\n%s", c, checkDetails(c))
	}
	sess, err := h.Sessions().Get(context.Background(), c.SessionID)
	if err != nil || sess.Runtime != harness.ClaudeCode {
		t.Fatalf("the case's session %+v, %v", sess, err)
	}
	if b, err := os.ReadFile(filepath.Join(h.Sessions().WorkspaceDir(sess.ID), "made.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("made.txt in the case's workspace: %q, %v", b, err)
	}
}

package host_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/tool"
)

// An agent tool's stderr lines are its live output: a subscriber sees each
// while the script still runs, well before its result; the model gets the
// result only.
func TestScriptStderrIsLive(t *testing.T) {
	slowly, err := tool.NewScript("slowly", tool.Config{Description: "Works slowly, saying so."},
		"#!/bin/sh\necho 'step 1' >&2\nsleep 0.6\necho 'step 2' >&2\nsleep 0.6\necho '{\"ok\":true}'\n")
	if err != nil {
		t.Fatal(err)
	}
	set, _ := tool.NewSet(slowly)
	h, fake := modelHost(t, set, host.Options{}, fakemodel.Reply{Calls: []fakemodel.Call{{ID: "c1", Name: "slowly", Input: `{}`}}}, fakemodel.Reply{Text: []string{"Done."}})
	ctx := context.Background()
	sess, _, _ := h.Sessions().Create(ctx, host.SessionOptions{})
	if _, err := h.Sessions().Send(ctx, sess.ID, "go"); err != nil {
		t.Fatal(err)
	}
	seen := map[string]time.Time{}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for e, err := range h.Sessions().Follow(fctx, sess.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		key := string(e.Kind)
		if e.Kind == api.KindActionOutput {
			o, _ := api.Decode[api.ActionOutput](e)
			key += " " + strings.TrimSpace(o.Text)
		}
		if _, ok := seen[key]; !ok {
			seen[key] = time.Now()
		}
		if e.Kind == api.KindTurnCompleted {
			break
		}
	}
	if seen["turn.completed"].IsZero() {
		t.Fatalf("the turn did not end: %v", seen)
	}
	one, two, result := seen["action.output step 1"], seen["action.output step 2"], seen["action.result"]
	if one.IsZero() || two.IsZero() || result.IsZero() {
		t.Fatalf("events seen: %v", seen)
	}
	if result.Sub(one) < 900*time.Millisecond || result.Sub(two) < 400*time.Millisecond {
		t.Errorf("stderr was not live: step 1 %v and step 2 %v before the result", result.Sub(one), result.Sub(two))
	}
	// The model got the result, not the output.
	if reqs := fake.Requests(); len(reqs) != 2 || strings.Contains(string(reqs[1]), "step 1") || !strings.Contains(string(reqs[1]), `\"ok\":true`) && !strings.Contains(string(reqs[1]), `"ok":true`) {
		t.Errorf("the model's second request: %s", reqs[len(reqs)-1])
	}
}

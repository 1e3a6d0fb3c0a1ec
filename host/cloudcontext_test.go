package host_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/model"
)

// A cloud turn gets the cloud model's window and the compaction settings,
// may report context.cleared and context.compacted, and the next claim's
// history starts from the compaction.
func TestCloudTurnContext(t *testing.T) {
	h := setupCloudWith(t, host.Options{LeaseTTL: 5 * time.Second, Compaction: host.CompactionOptions{KeepTurns: 1},
		Cloud: host.CloudOptions{DefaultMode: api.ModeCloud, Model: model.Config{Provider: "anthropic", Name: "claude-sonnet-4-5-20250929"}}})
	ctx := context.Background()
	sess, turnID, err := h.Sessions().Create(ctx, host.SessionOptions{Message: "one"})
	if err != nil {
		t.Fatal(err)
	}
	answer := func(turnID string, more ...api.Payload) *api.RunnerClaim {
		c := mustClaim(t, h, time.Second)
		evs := []api.Event{payloadEvent(api.Message{Role: api.RoleAssistant, Text: "ok"})}
		for _, p := range more {
			evs = append(evs, payloadEvent(p))
		}
		if err := h.Runners().Report(ctx, sess.ID, turnID, api.RunnerReport{Token: c.Token, End: api.RunnerEndCompleted, Events: evs}); err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := answer(turnID)
	if c.Context == nil || c.Context.Window != 200_000 || c.Context.KeepTurns != 1 {
		t.Fatalf("the claim's context: %+v", c.Context)
	}
	second, err := h.Sessions().Send(ctx, sess.ID, "two")
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := h.Sessions().Events(ctx, sess.ID, 0, 0)
	through := find(evs, api.KindTurnStarted)[1].Seq - 1
	for _, bad := range []api.Payload{api.ContextCompacted{ThroughSeq: through}, api.ContextCompacted{Summary: "s"}, api.ContextCleared{}} {
		cl := mustClaim(t, h, time.Second)
		err := h.Runners().Report(ctx, sess.ID, second, api.RunnerReport{Token: cl.Token, End: api.RunnerEndParked, Events: []api.Event{payloadEvent(bad)}})
		if !errors.Is(err, &api.Error{Code: api.CodeInvalidReport}) {
			t.Errorf("reporting %+v: %v", bad, err)
		}
		h.Runners().Report(ctx, sess.ID, second, api.RunnerReport{Token: cl.Token, End: api.RunnerEndParked})
	}
	answer(second, api.ContextCompacted{Summary: "the first turn", ThroughSeq: through, Trigger: "auto"})
	third, err := h.Sessions().Send(ctx, sess.ID, "three")
	if err != nil {
		t.Fatal(err)
	}
	c = mustClaim(t, h, time.Second)
	if c.TurnID != third || len(c.Events) == 0 || c.Events[0].Seq != through+1 || c.Events[0].Kind != api.KindTurnStarted {
		t.Errorf("the claim after the compaction starts at %d (%s), want %d", c.Events[0].Seq, kinds(c.Events), through+1)
	}
}

package host

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/pgtest"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/tool"
)

// One turn per session holds across hosts (409 session_busy through the
// other host). A host that stops renewing its turn's lease (a paused or
// partitioned process) loses the session: once the lease has run out the
// other host's sweep takes the turn over and finishes it, and the first
// host's late model answer is refused by the store, never reaching the
// stream.
func TestFencingAfterTakeover(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Schema(t)
	release := make(chan struct{})
	fake := fakemodel.New(fakemodel.Reply{Text: []string{"late answer"}, Until: release})
	t.Cleanup(fake.Close)
	set, err := tool.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	p, err := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: fake.AnthropicURL(), MaxTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Model: p, LeaseTTL: 600 * time.Millisecond}
	a, b := startOnPostgres(t, url, set, opts), startOnPostgres(t, url, set, opts)
	sess, _, err := a.Sessions().Create(ctx, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	turnA, err := a.Sessions().Send(ctx, sess.ID, "hi")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Sessions().Send(ctx, sess.ID, "me too"); !errors.Is(err, api.ErrSessionBusy) {
		t.Fatalf("a message through B while A's turn runs: %v, want session_busy", err)
	}
	a.leases.paused.Store(true) // A is alive, but its lease runs out

	waitFor := func(what string, match func(api.Event) bool) []api.Event {
		t.Helper()
		deadline := time.Now().Add(45 * time.Second)
		for {
			evs, err := b.Sessions().Events(ctx, sess.ID, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				if match(e) {
					return evs
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s; events: %v", what, evs)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("turn.completed for A's turn, resumed by B", func(e api.Event) bool { return e.TurnID == turnA && e.Kind == api.KindTurnCompleted })
	turnB, err := b.Sessions().Send(ctx, sess.ID, "again")
	if err != nil {
		t.Fatalf("B takes the session once A's turn is done: %v", err)
	}
	waitFor("turn.completed for B's turn", func(e api.Event) bool { return e.TurnID == turnB && e.Kind == api.KindTurnCompleted })

	// A's model answers now; A tries to stream it, and stops.
	close(release)
	deadline := time.Now().Add(30 * time.Second)
	for a.leases.runs(sess.ID, turnA) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	evs, err := b.Sessions().Events(ctx, sess.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	endedAt := int64(0)
	var moved *api.WorkspaceMoved
	var resumed *api.TurnResumed
	for _, e := range evs {
		if strings.Contains(string(e.Data), "late answer") {
			t.Errorf("A wrote after losing its lease: %+v", e)
		}
		if e.TurnID == turnA && e.Kind == api.KindTurnCompleted {
			endedAt = e.Seq
		}
		if endedAt != 0 && e.Seq > endedAt && e.TurnID == turnA {
			t.Errorf("an event of A's turn after it ended: %+v", e)
		}
		if e.Kind == api.KindTurnResumed && e.TurnID == turnA {
			r, err := api.Decode[api.TurnResumed](e)
			if err != nil {
				t.Fatal(err)
			}
			resumed = &r
		}
		if e.Kind == api.KindWorkspaceMoved && e.TurnID == turnA {
			m, err := api.Decode[api.WorkspaceMoved](e)
			if err != nil {
				t.Fatal(err)
			}
			moved = &m
		}
	}
	if resumed == nil || resumed.Attempt != 1 || resumed.From != a.leases.home {
		t.Errorf("A's turn should record its resumption from %s: %+v", a.leases.home, resumed)
	}
	if moved == nil || moved.From != a.leases.home || moved.To != b.leases.home {
		t.Errorf("the resumption should record the move from %s to %s: %+v", a.leases.home, b.leases.home, moved)
	}
	if a.leases.runs(sess.ID, turnA) {
		t.Error("A still runs its turn after its write was refused")
	}
}

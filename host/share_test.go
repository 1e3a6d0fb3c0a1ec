package host_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/pgtest"
)

// A subscriber on host B hears, within a notification's time, of a call
// that host A runs in a session; B then reads its events from the store,
// in order.
func TestStreamsAcrossHosts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Schema(t)
	set := fileTools(t)
	a, _ := newPostgresHost(t, set, url)
	b, _ := newPostgresHost(t, set, url)
	for _, h := range []*host.Host{a, b} {
		if err := h.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sess, _, err := a.Sessions().Create(ctx, host.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sub := b.Sessions().Subscribe(sess.ID)
	defer sub.Close()
	// Drain what the session's creation may have caused.
	time.Sleep(200 * time.Millisecond)
	select {
	case <-sub.Poke:
	default:
	}

	start := time.Now()
	callFileTool(t, a, "read", fileInput{Name: "absent.txt"}, &host.CallOptions{SessionID: sess.ID})
	select {
	case batch := <-sub.C:
		t.Fatalf("B's subscriber got a batch from A's hub: %v", batch)
	case <-sub.Poke:
		t.Logf("B poked within %v of the call starting on A", time.Since(start))
	case <-time.After(2 * time.Second):
		t.Fatal("B's subscriber was not poked within 2s")
	}
	// The poke may come between the call's appends: read until the turn
	// has ended.
	var kinds []api.Kind
	deadline := time.After(2 * time.Second)
	for !slices.Contains(kinds, api.KindTurnCompleted) {
		evs, err := b.Sessions().Events(ctx, sess.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		kinds = kinds[:0]
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Fatalf("event %d has seq %d", i, e.Seq)
			}
			kinds = append(kinds, e.Kind)
		}
		select {
		case <-sub.Poke:
		case <-deadline:
			t.Fatalf("B read %v", kinds)
		}
	}
	want := []api.Kind{api.KindSessionCreated, api.KindTurnStarted, api.KindActionResult, api.KindTurnCompleted}
	if !slices.Equal(kinds, want) {
		t.Errorf("B read %v, want %v", kinds, want)
	}
}

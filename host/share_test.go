package host_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/pgtest"
	"github.com/agentsdk/agentsdk/store/sqlite"
)

// A subscriber on host B hears, within a notification's time, of a call
// that host A runs in a session; B then reads its events from the store,
// in order.
func TestStreamsAcrossHosts(t *testing.T) {
	t.Parallel()
	url := pgtest.Schema(t)
	set := fileTools(t)
	a, _ := newPostgresHost(t, set, url)
	b, _ := newPostgresHost(t, set, url)
	streamAcross(t, a, b)
}

// Two hosts on one SQLite file (serve --watch's old and new build while
// they swap) hear of each other's events too: the store polls for them.
func TestStreamsAcrossHostsSQLite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agent.db")
	set := fileTools(t)
	open := func() *host.Host {
		st, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		h, err := host.New(set, &host.Options{StateRoot: t.TempDir(), Store: st})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return h
	}
	streamAcross(t, open(), open())
}

// streamAcross starts a and b, runs a call in a session on a and follows
// it on b.
func streamAcross(t *testing.T, a, b *host.Host) {
	t.Helper()
	ctx := context.Background()
	for _, h := range []*host.Host{a, b} {
		if err := h.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sess, _, err := a.Sessions().Create(ctx, host.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// B follows the session from its first event; A's appends reach B
	// through the store's notifications (pollInterval is 2 s: within it,
	// only a notification, or SQLite's poll, can have told B).
	fctx, cancel := context.WithTimeout(ctx, 1900*time.Millisecond)
	defer cancel()
	var kinds []api.Kind
	started := make(chan struct{})
	go func() {
		<-started
		callFileTool(t, a, "read", fileInput{Name: "absent.txt"}, &host.CallOptions{SessionID: sess.ID})
	}()
	for e, err := range b.Sessions().Follow(fctx, sess.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Seq != int64(len(kinds)+1) {
			t.Fatalf("event %d has seq %d", len(kinds)+1, e.Seq)
		}
		kinds = append(kinds, e.Kind)
		if e.Seq == 1 {
			close(started)
		}
		if e.Kind == api.KindTurnCompleted {
			break
		}
	}
	if !slices.Contains(kinds, api.KindTurnCompleted) {
		t.Fatalf("B followed %v within 1.9 s of the call starting on A", kinds)
	}
	want := []api.Kind{api.KindSessionCreated, api.KindTurnStarted, api.KindActionResult, api.KindTurnCompleted}
	if !slices.Equal(kinds, want) {
		t.Errorf("B read %v, want %v", kinds, want)
	}
}

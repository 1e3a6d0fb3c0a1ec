package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/internal/pgtest"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/postgres"
)

func openNotifier(t *testing.T, url string) store.Notifier {
	t.Helper()
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	n, ok := s.(store.Notifier)
	if !ok {
		t.Fatal("the store is no store.Notifier")
	}
	if _, ok := s.(store.Blobs); !ok {
		t.Fatal("the store is no longer a store.Blobs")
	}
	return n
}

func listen(t *testing.T, n store.Notifier) <-chan []string {
	t.Helper()
	lctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	c, err := n.ListenChanged(lctx)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// receive gathers batches from c until it holds want ids or the timeout.
func receive(t *testing.T, c <-chan []string, want int) []string {
	t.Helper()
	var got []string
	timeout := time.After(5 * time.Second)
	for len(got) < want {
		select {
		case ids := <-c:
			got = append(got, ids...)
		case <-timeout:
			t.Fatalf("got %d ids, want %d", len(got), want)
		}
	}
	return got
}

func TestNotifyChanged(t *testing.T) {
	url, other := pgtest.Schema(t), pgtest.Schema(t)
	a, b, c := openNotifier(t, url), openNotifier(t, url), openNotifier(t, other)
	fromA, fromB, fromC := listen(t, a), listen(t, b), listen(t, c)

	if err := a.NotifyChanged(ctx, []string{"sess_1", "sess_2"}); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, fromB, 2); !slices.Equal(got, []string{"sess_1", "sess_2"}) {
		t.Fatalf("b got %q", got)
	}

	// More ids than one NOTIFY's payload holds arrive in several.
	var many []string
	for i := range 2000 {
		many = append(many, fmt.Sprintf("sess_%016d", i))
	}
	if err := a.NotifyChanged(ctx, many); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, fromB, len(many)); !slices.Equal(got, many) {
		t.Fatalf("b got %d ids, not the %d sent in order", len(got), len(many))
	}

	// Neither the sender nor a store in another schema hears of it.
	select {
	case ids := <-fromA:
		t.Fatalf("a heard its own notification: %.80q", ids)
	case ids := <-fromC:
		t.Fatalf("a store in another schema heard: %.80q", ids)
	case <-time.After(200 * time.Millisecond):
	}
	if err := c.NotifyChanged(ctx, []string{"sess_c"}); err != nil {
		t.Fatal(err)
	}
	select {
	case ids := <-fromB:
		t.Fatalf("b heard another schema's notification: %q", ids)
	case <-time.After(200 * time.Millisecond):
	}
}

// A listener whose connection is dropped connects again, says that
// anything may have changed, and hears what is sent after.
func TestListenChangedReconnects(t *testing.T) {
	url := pgtest.Schema(t)
	a, b := openNotifier(t, url), openNotifier(t, url)
	fromB := listen(t, b)
	admin := connect(t, url)
	var channel string
	if err := admin.QueryRow(ctx, `SELECT 'agentsdk_events_' || md5(current_schema())`).Scan(&channel); err != nil {
		t.Fatal(err)
	}
	tag, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND query LIKE '%'||$1||'%' AND pid <> pg_backend_pid()`, channel)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(tag.String(), " 1") {
		t.Fatalf("terminated: %s", tag)
	}
	select {
	case ids := <-fromB:
		if len(ids) != 0 {
			t.Fatalf("after reconnecting: %q, want an empty batch", ids)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no empty batch after the connection was dropped")
	}
	if err := a.NotifyChanged(ctx, []string{"sess_1"}); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, fromB, 1); !slices.Equal(got, []string{"sess_1"}) {
		t.Fatalf("b got %q", got)
	}
}

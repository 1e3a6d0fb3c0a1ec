package host

import (
	"context"
	"flag"
	"slices"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/pgtest"
	"github.com/agentsdk/agentsdk/store/postgres"
	"github.com/agentsdk/agentsdk/tool"
)

var deliveries = flag.Int("deliveries", 20, "appends TestDeliveryLatency measures in each mode")

// TestDeliveryLatency measures how long after an append on host A returns
// a subscriber of the session on host B is poked, both hosts on one
// PostgreSQL schema: with the appends spaced out (each the first after a
// quiet spell, notified at once) and back to back (notified together, at
// most every notifyInterval). For the figures:
//
//	go test ./host -run DeliveryLatency -deliveries 200 -v
//
// startOnPostgres starts a host with opts on its own store in the schema
// at url, with a state root of its own; the test's cleanup closes both.
func startOnPostgres(t *testing.T, url string, set *tool.Set, opts Options) *Host {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	opts.StateRoot, opts.Store = t.TempDir(), st
	h, err := New(set, &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestDeliveryLatency(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Schema(t)
	set, err := tool.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	a, b := startOnPostgres(t, url, set, Options{}), startOnPostgres(t, url, set, Options{})
	sess, _, err := a.Sessions().Create(ctx, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sub := b.log.hub.subscribe(sess.ID)
	defer sub.close()
	event := api.Event{Kind: api.KindMessage, Data: []byte(`{"role":"assistant","text":"hello"}`)}

	for _, mode := range []struct {
		name string
		gap  time.Duration
	}{{"spaced", notifyInterval + 20*time.Millisecond}, {"back-to-back", 0}} {
		time.Sleep(notifyInterval + 20*time.Millisecond)
		var lat []time.Duration
		for range *deliveries {
			select { // a poke of the slow poll, which would be taken for this append's
			case <-sub.poke:
			default:
			}
			if _, err := a.log.Append(ctx, sess.ID, event); err != nil {
				t.Fatal(err)
			}
			appended := time.Now()
			select {
			case <-sub.poke:
				lat = append(lat, time.Since(appended))
			case <-time.After(pollInterval):
				t.Fatal("B was not poked")
			}
			time.Sleep(mode.gap)
		}
		slices.Sort(lat)
		q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
		t.Logf("%s: %d appends on A, B poked after p50 %v, p99 %v, max %v", mode.name, len(lat),
			q(0.5).Round(10*time.Microsecond), q(0.99).Round(10*time.Microsecond), lat[len(lat)-1].Round(10*time.Microsecond))
	}
}

package host

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// TestFollowSeesEveryEventOnceInOrder is Follow's property: whatever the
// appends (concurrent, some never published as another host's would be,
// told of by a poke or not at all), however slow the follower (its hub
// batches dropped) and however often it reconnects (breaking out and
// following again after the last seq it saw), every follower sees
// after+1 … n exactly once, in order.
func TestFollowSeesEveryEventOnceInOrder(t *testing.T) {
	rounds := 12
	if testing.Short() {
		rounds = 5
	}
	for round := range rounds {
		seed := uint64(time.Now().UnixNano()) + uint64(round)
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { followRound(t, seed) })
	}
}

func followRound(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	set, _ := tool.NewSet()
	h, err := New(set, &Options{StateRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, _, err := h.Sessions().Create(ctx, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	event := api.NewEvent(api.Message{Role: api.RoleAssistant, Text: "x"})

	// Followers, each with its own start, speed and reconnect rate.
	type seen struct {
		after int64
		seqs  []int64
	}
	followers := make([]*seen, 2+rng.IntN(5))
	var wg sync.WaitGroup
	total := make(chan int64, 1) // the final seq, once every append is done
	for i := range followers {
		f := &seen{after: int64(rng.IntN(3))}
		followers[i] = f
		slow := rng.IntN(3) == 0
		reconnectEvery := 1 + rng.IntN(200)
		frng := rand.New(rand.NewPCG(seed+uint64(i), 7))
		wg.Go(func() {
			cursor, final := f.after, int64(-1)
			for final < 0 || cursor < final {
				fctx, stop := context.WithTimeout(ctx, 200*time.Millisecond)
				for e, err := range h.Sessions().Follow(fctx, sess.ID, cursor) {
					if err != nil {
						t.Errorf("follow: %v", err)
						stop()
						return
					}
					f.seqs = append(f.seqs, e.Seq)
					cursor = e.Seq
					if slow {
						time.Sleep(time.Duration(frng.IntN(300)) * time.Microsecond)
					}
					if frng.IntN(reconnectEvery) == 0 {
						break // reconnect after the last seq seen
					}
				}
				stop()
				select {
				case final = <-total:
					total <- final
				default:
				}
				if ctx.Err() != nil {
					return
				}
			}
		})
	}

	// Writers: published appends, some concurrent, some of several
	// events; unpublished ones (another host's), poked or not.
	var writers sync.WaitGroup
	for w := range 1 + rng.IntN(4) {
		wrng := rand.New(rand.NewPCG(seed+100+uint64(w), 9))
		writers.Go(func() {
			for range 50 + wrng.IntN(300) {
				evs := make([]api.Event, 1+wrng.IntN(4))
				for i := range evs {
					evs[i] = event
				}
				var err error
				switch wrng.IntN(10) {
				case 0:
					_, err = h.log.Store.Append(ctx, sess.ID, evs...) // no publish
				case 1:
					_, err = h.log.Store.Append(ctx, sess.ID, evs...)
					h.log.hub.poke(sess.ID)
				default:
					_, err = h.log.Append(ctx, sess.ID, evs...)
				}
				if err != nil {
					t.Error(err)
					return
				}
				if wrng.IntN(20) == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	writers.Wait()
	last, err := h.Sessions().Get(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	total <- last.LastSeq
	h.log.hub.pokeAll() // what pollInterval does for a lost notification
	wg.Wait()
	for i, f := range followers {
		if int64(len(f.seqs)) != last.LastSeq-f.after {
			t.Errorf("follower %d (after %d) saw %d events, want %d", i, f.after, len(f.seqs), last.LastSeq-f.after)
		}
		for j, s := range f.seqs {
			if s != f.after+int64(j)+1 {
				t.Fatalf("follower %d (after %d): event %d is seq %d, want %d", i, f.after, j, s, f.after+int64(j)+1)
			}
		}
	}
}

// TestFollowAfterOutOfRange: after below 0 is 0; after past the end
// yields what comes after it once it comes.
func TestFollowAfterOutOfRange(t *testing.T) {
	set, _ := tool.NewSet()
	h, err := New(set, &Options{StateRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, _, err := h.Sessions().Create(ctx, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for e, err := range h.Sessions().Follow(ctx, sess.ID, -5) {
		if err != nil || e.Seq != 1 {
			t.Fatalf("following from -5: %d, %v; want seq 1", e.Seq, err)
		}
		break
	}
	for range 3 {
		h.log.Append(ctx, sess.ID, api.NewEvent(api.Message{Role: api.RoleAssistant, Text: "x"}))
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		h.log.Append(ctx, sess.ID, api.NewEvent(api.Message{Role: api.RoleAssistant, Text: "later"}))
	}()
	var got int64
	for e, err := range h.Sessions().Follow(ctx, sess.ID, 4) {
		if err != nil {
			t.Fatal(err)
		}
		got = e.Seq
		break
	}
	if got != 5 {
		t.Fatalf("following from 4 (the last): got seq %d, want 5", got)
	}
}

package host

import (
	"context"
	"fmt"
	"iter"

	"github.com/agentsdk/agentsdk/api"
)

// followPage is how many stored events Follow reads at once.
const followPage = 1000

// Follow yields a session's events after seq after: the stored ones, then
// each new one once it is stored, in seq order, each once, until ctx ends
// (then it returns without an error) or the loop breaks. It is the one
// way the host's parts and its users follow a stream — the SSE handler,
// evals, channels through [tool.Handle.Follow] — the same shape as
// client.Client.Events.
//
// It listens for new events before it reads the store, so nothing falls in
// between, and reads the store again whenever what it is told does not
// follow the last event it yielded (batches it was too slow for, another
// host's appends). A session that does not exist yet is followed from its
// first event once it does. A failed read of the store is yielded as an
// error, after which the sequence ends.
func (s Sessions) Follow(ctx context.Context, sessionID string, after int64) iter.Seq2[api.Event, error] {
	return func(yield func(api.Event, error) bool) {
		f := follower{h: s.h, sessionID: sessionID, cursor: max(after, 0), yield: yield}
		f.run(ctx)
	}
}

// follower is one Follow's loop.
type follower struct {
	h         *Host
	sessionID string
	cursor    int64 // the last seq yielded
	yield     func(api.Event, error) bool
}

func (f *follower) run(ctx context.Context) {
	sub := f.h.log.hub.subscribe(f.sessionID)
	defer sub.close()
	for read := true; ; read = false {
		if read && !f.catchUp(ctx) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case batch := <-sub.c:
			ok, follows := f.batch(batch)
			if !ok {
				return
			}
			if !follows && !f.catchUp(ctx) {
				return
			}
		case <-sub.poke:
			if !f.catchUp(ctx) {
				return
			}
		}
	}
}

// catchUp yields what the store holds after the cursor; false when the
// sequence ends.
func (f *follower) catchUp(ctx context.Context) bool {
	for {
		evs, err := f.h.log.Events(ctx, f.sessionID, f.cursor, followPage)
		if err != nil {
			if ctx.Err() == nil {
				f.yield(api.Event{}, fmt.Errorf("following session %s: %w", f.sessionID, storeError(err, sessionNotFound(f.sessionID))))
			}
			return false
		}
		ok, follows := f.batch(evs)
		if !ok {
			return false
		}
		if len(evs) < followPage || !follows {
			// A store's events after the cursor follow it; if they did
			// not, reading again would read the same page.
			return ctx.Err() == nil
		}
	}
}

// batch yields the events of a batch that follow the cursor, in order. ok
// is false when the sequence ends; follows is false when the batch does
// not follow the cursor (a gap: the store has what came in between).
func (f *follower) batch(evs []api.Event) (ok, follows bool) {
	for _, e := range evs {
		switch {
		case e.Seq <= f.cursor:
			continue // yielded already
		case e.Seq != f.cursor+1:
			return true, false
		}
		f.cursor = e.Seq
		if !f.yield(e, nil) {
			return false, true
		}
	}
	return true, true
}

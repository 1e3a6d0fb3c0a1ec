package turnloop

import (
	"context"
	"sync"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// DeltaBatch is how long a model's text and reasoning deltas wait to be
// recorded together: a model streams them by the dozen a second, and a
// store write (or a runner's report) each is wasteful. Each delta stays an
// event of its own; only the writes are fewer.
const DeltaBatch = 50 * time.Millisecond

// deltas batches an answer's text and reasoning deltas (and its complete
// reasoning blocks, which must keep their place among them): the first of
// a batch starts a timer, which records the batch in one Emit; flush
// records what is left before anything else of the turn is.
type deltas struct {
	env Env
	ctx context.Context

	mu      sync.Mutex // serialises the batch's Emits: the stream's order is theirs
	pending []api.Payload
	timer   *time.Timer
	err     error // the timer's failed Emit, returned by the next add or flush
}

func newDeltas(ctx context.Context, env Env) *deltas { return &deltas{env: env, ctx: ctx} }

// add queues a payload; an error is a batch the stream refused.
func (d *deltas) add(p api.Payload) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return d.err
	}
	d.pending = append(d.pending, p)
	if d.timer == nil {
		d.timer = time.AfterFunc(DeltaBatch, d.due)
	}
	return nil
}

// due records the batch when its time is up.
func (d *deltas) due() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.timer = nil
	d.emit()
}

// flush records the deltas still pending, at once.
func (d *deltas) flush() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop() // if it fired already, due finds nothing pending
		d.timer = nil
	}
	d.emit()
	return d.err
}

// emit records the pending deltas; d.mu is held.
func (d *deltas) emit() {
	if len(d.pending) == 0 || d.err != nil {
		return
	}
	batch := d.pending
	d.pending = nil
	d.err = d.env.Emit(d.ctx, batch...)
}

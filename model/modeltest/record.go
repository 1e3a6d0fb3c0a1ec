package modeltest

import (
	"context"
	"fmt"
	"iter"
	"os"
	"sync"

	"github.com/agentsdk/agentsdk/model"
)

// Recorder is a [model.Provider] that passes each call on to another
// provider and records it — the request, normalised, and the answer as
// it streamed, or the error it failed with — as a cassette in its
// directory, <key>.json (see [Key]), for [Replay] to serve.
//
// A request the recorder sees again (a retry, the same question in
// another session) adds its answer to the cassette's, which a replay
// gives in the same order. A cassette this recorder has not written yet
// is replaced, so recording again into a directory updates it. An answer
// is written before its last chunk is passed on: if it cannot be, the
// call fails saying so. A call the caller gave up on (its context ended,
// or it stopped reading) is not recorded. It is safe for concurrent use.
type Recorder struct {
	p   model.Provider
	dir string

	mu    sync.Mutex
	taped map[string]*cassette // the cassettes this recorder wrote
}

// Record returns a recorder of p's calls into dir, which it creates if
// need be.
func Record(p model.Provider, dir string) (*Recorder, error) {
	if p == nil {
		return nil, fmt.Errorf("recording model calls into %s: no provider to record", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("recording model calls: %w", err)
	}
	return &Recorder{p: p, dir: dir, taped: map[string]*cassette{}}, nil
}

// Dir is the directory the recorder writes its cassettes to.
func (r *Recorder) Dir() string { return r.dir }

// Stream streams p's answer to req, recording it.
func (r *Recorder) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		norm := normalise(req)
		var a answer
		for c, err := range r.p.Stream(ctx, req) {
			if err != nil {
				if ctx.Err() == nil {
					a.Error = newErrorRecord(err)
					if werr := r.tape(norm, a); werr != nil {
						err = &model.Error{Reason: model.ReasonProvider, Message: werr.Error() + " (the model failed: " + err.Error() + ")", Err: werr}
					}
				}
				yield(model.Chunk{}, err)
				return
			}
			a.Chunks = append(a.Chunks, newChunk(c))
			if c.End != nil {
				if werr := r.tape(norm, a); werr != nil {
					yield(model.Chunk{}, &model.Error{Reason: model.ReasonProvider, Message: werr.Error(), Err: werr})
					return
				}
			}
			if !yield(c, nil) {
				return
			}
		}
	}
}

// tape adds a to the cassette of req and writes it.
func (r *Recorder) tape(req request, a answer) error {
	key := req.key()
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.taped[key]
	if c == nil {
		c = &cassette{Request: req}
	}
	next := &cassette{Request: c.Request, Answers: append(append([]answer(nil), c.Answers...), a)}
	if err := next.write(file(r.dir, key)); err != nil {
		return fmt.Errorf("recording a model call: %w", err)
	}
	r.taped[key] = next
	return nil
}

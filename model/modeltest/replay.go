package modeltest

import (
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/agentsdk/agentsdk/model"
)

// Replayer is a [model.Provider] that answers from the cassettes of a
// directory a [Recorder] wrote: a request gets the answer recorded for a
// request with its key ([Key]), chunk for chunk as it streamed (or the
// error it failed with); asked again, the next answer recorded for it,
// the last one again once they are all given. A request it has no
// cassette for fails loudly: an invalid_request [*model.Error] with a
// diff against the closest cassette, naming each line that changed (the
// system prompt's, a message's, a tool's), also reported to the
// [Reporter] of [Replayer.ReportTo]. It is safe for concurrent use.
type Replayer struct {
	dir       string
	cassettes map[string]*loaded
	keys      []string // sorted, for a stable choice of the closest

	mu     sync.Mutex
	report Reporter
}

// loaded is a cassette read from its file, with how often it was asked.
type loaded struct {
	file  string
	c     *cassette
	flat  []string // the request's lines, for diffs
	asked int
}

// Replay returns a replayer of the cassettes in dir (its *.json files),
// refusing a directory that cannot be read, has none, or has a file that
// is not a cassette.
func Replay(dir string) (*Replayer, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err == nil && len(files) == 0 {
		if _, serr := os.Stat(dir); serr != nil {
			err = serr
		} else {
			err = fmt.Errorf("%s has no cassettes (*.json): record some with agent-sdk serve --record %s, or modeltest.Record", dir, dir)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("replaying model calls: %w", err)
	}
	r := &Replayer{dir: dir, cassettes: map[string]*loaded{}}
	for _, f := range files {
		c, err := readCassette(f)
		if err != nil {
			return nil, fmt.Errorf("replaying model calls: %w", err)
		}
		key := c.Request.key()
		if prev, ok := r.cassettes[key]; ok {
			return nil, fmt.Errorf("replaying model calls: %s and %s record the same request", prev.file, f)
		}
		r.cassettes[key] = &loaded{file: f, c: c}
		r.keys = append(r.keys, key)
	}
	slices.Sort(r.keys)
	return r, nil
}

// Dir is the directory the replayer's cassettes were read from.
func (r *Replayer) Dir() string { return r.dir }

// ReportTo makes r report each request it has no cassette for to rep
// (t.Errorf) as well as failing the call, and returns r.
func (r *Replayer) ReportTo(rep Reporter) *Replayer {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.report = rep
	return r
}

// Stream replays the answer recorded for req.
func (r *Replayer) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		a, err := r.take(req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		for _, c := range a.Chunks {
			if err := ctx.Err(); err != nil {
				yield(model.Chunk{}, model.Unanswered(err))
				return
			}
			if !yield(c.model(), nil) {
				return
			}
		}
		if a.Error != nil {
			yield(model.Chunk{}, a.Error.model())
		}
	}
}

// take is the answer for req, or the error of a request with no cassette.
func (r *Replayer) take(req *model.Request) (answer, error) {
	norm := normalise(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	if l, ok := r.cassettes[norm.key()]; ok {
		a := l.c.Answers[min(l.asked, len(l.c.Answers)-1)]
		l.asked++
		return a, nil
	}
	msg := fmt.Sprintf("modeltest: no cassette in %s for this request (%s)", r.dir, describe(req))
	asked := flatten(&norm)
	var best *loaded
	bestCost := -1
	for _, k := range r.keys {
		l := r.cassettes[k]
		if l.flat == nil {
			l.flat = flatten(&l.c.Request)
		}
		if cost := distance(l.flat, asked); bestCost < 0 || cost < bestCost {
			best, bestCost = l, cost
		}
	}
	if best != nil {
		msg += fmt.Sprintf("; the closest cassette, %s, was recorded for a request that differs (- recorded, + asked):\n%s", filepath.Base(best.file), diff(best.flat, asked))
	}
	if r.report != nil {
		r.report.Errorf("%s", msg)
	}
	return answer{}, &model.Error{Reason: model.ReasonInvalidRequest, Message: msg}
}

package evals

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sync"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/model"
)

// Limits of a case's replay.
const (
	maxEvalReplay      = 200 // answers of a case's replay
	maxEvalReplayCalls = 64  // tool calls of one answer
)

// replayModel is the model of a case with a replay (host.SessionHooks.
// Model): the n-th model call of the case's session gets the n-th
// recorded answer, whatever it was sent; a call past the last fails.
// It is the smallest sequence provider evals need.
type replayModel struct {
	answers []api.EvalAnswer
	mu      sync.Mutex
	n       int // the calls answered so far
}

// replayModelName is the model a replayed answer's model.usage names.
const replayModelName = "replay"

func (r *replayModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	r.mu.Lock()
	n := r.n
	r.n++
	r.mu.Unlock()
	return func(yield func(model.Chunk, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(model.Chunk{}, err)
			return
		}
		if n >= len(r.answers) {
			yield(model.Chunk{}, fmt.Errorf("the case's replay has %d answers, and the model was called a %s time: the conversation went further than the recorded session", len(r.answers), ordinal(n+1)))
			return
		}
		a := r.answers[n]
		if a.Text != "" && !yield(model.Chunk{Text: a.Text}, nil) {
			return
		}
		for k, c := range a.Calls {
			in := json.RawMessage("{}")
			if c.Input != nil {
				b, err := json.Marshal(c.Input)
				if err != nil {
					yield(model.Chunk{}, fmt.Errorf("replay answer %d, call %d: the input cannot be encoded as JSON: %w", n+1, k+1, err))
					return
				}
				in = b
			}
			if !yield(model.Chunk{ToolCall: &model.ToolCall{ID: fmt.Sprintf("replay_%d_%d", n+1, k+1), Name: c.Tool, Input: in}}, nil) {
				return
			}
		}
		stop := "end_turn"
		if len(a.Calls) > 0 {
			stop = "tool_use"
		}
		yield(model.Chunk{End: &model.End{Model: replayModelName, StopReason: stop}}, nil)
	}
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// checkReplay checks a case's replay: each answer has text or calls, each
// call a tool name.
func checkReplay(bad func(string, string, ...any), path string, replay []api.EvalAnswer) {
	if len(replay) > maxEvalReplay {
		bad(path, "%d answers; a replay has at most %d", len(replay), maxEvalReplay)
		return
	}
	for i, a := range replay {
		at := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case a.Text == "" && len(a.Calls) == 0:
			bad(at, "is empty; an answer has text, calls or both")
		case len(a.Text) > maxEvalMessage:
			bad(at+".text", "is %d bytes; at most %d", len(a.Text), maxEvalMessage)
		case len(a.Calls) > maxEvalReplayCalls:
			bad(at+".calls", "%d calls; an answer has at most %d", len(a.Calls), maxEvalReplayCalls)
		}
		for k, c := range a.Calls {
			cp := fmt.Sprintf("%s.calls[%d]", at, k)
			if c.Tool == "" {
				bad(cp+".tool", "is missing")
			}
			if _, err := json.Marshal(c.Input); err != nil {
				bad(cp+".input", "cannot be encoded as JSON: %v", err)
			}
		}
	}
}

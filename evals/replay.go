package evals

import (
	"encoding/json"
	"fmt"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/modeltest"
)

// Limits of a case's replay.
const (
	maxEvalReplay      = 200 // answers of a case's replay
	maxEvalReplayCalls = 64  // tool calls of one answer
)

// replayModel is the model of a case with a replay (host.SessionHooks.
// Model): a scripted model (model/modeltest) whose n-th call gets the
// case's n-th recorded answer, whatever it was sent; a call past the
// last fails the turn, saying what was asked.
func replayModel(answers []api.EvalAnswer) (*modeltest.Model, error) {
	script := make([]modeltest.Answer, len(answers))
	for i, a := range answers {
		script[i] = modeltest.Answer{Text: a.Text, Model: replayModelName}
		for k, c := range a.Calls {
			in := json.RawMessage("{}")
			if c.Input != nil {
				b, err := json.Marshal(c.Input)
				if err != nil {
					return nil, fmt.Errorf("replay[%d].calls[%d].input: %w", i, k, err)
				}
				in = b
			}
			script[i].ToolCalls = append(script[i].ToolCalls, model.ToolCall{ID: fmt.Sprintf("replay_%d_%d", i+1, k+1), Name: c.Tool, Input: in})
		}
	}
	return modeltest.New(script...), nil
}

// replayModelName is the model a replayed answer's model.usage names.
const replayModelName = "replay"

// checkReplay checks a case's replay: its size, and a tool name for each
// call.
func checkReplay(bad func(string, string, ...any), path string, replay []api.EvalAnswer) {
	if len(replay) > maxEvalReplay {
		bad(path, "%d answers; a replay has at most %d", len(replay), maxEvalReplay)
		return
	}
	for i, a := range replay {
		at := fmt.Sprintf("%s[%d]", path, i)
		switch { // an empty answer is one: a model may answer nothing
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

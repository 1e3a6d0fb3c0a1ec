// Package evalexport turns a session's stored events into an eval case
// that replays it (agent-sdk session export): the user's messages are the
// case's conversation, the model's recorded answers its replay, and the
// tool calls with their results its checks, so that running the case
// replays the answers instead of calling the model and checks that the
// tools still do what they did. It needs only package api: the CLI uses
// it without linking the host.
package evalexport

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentsdk/agentsdk/api"
)

// MaxResult is the largest tool result (bytes of JSON) a called check
// carries as its expected result; a larger one is checked by name and
// args only.
const MaxResult = 4 << 10

// Case is the eval case of a session's events, named name: its user
// messages (a message, or a conversation of several), its model answers
// as Replay, a called check per tool call of the model's (its input as
// args, its result when it is at most MaxResult), and noError when no
// call had an error and no turn failed. Direct calls and the model calls
// of compactions are left out. A session without a user message, or
// with a turn running, is an error.
func Case(name string, evs []api.Event) (api.EvalCase, error) {
	c := api.EvalCase{Name: name}
	var (
		msgs     []string
		current  *api.EvalAnswer // the step being read: its text
		calls    []api.Action
		results  = map[string]api.ActionResult{}
		failed   bool
		open     = map[string]bool{} // turns begun and not ended
		compacts = map[string]bool{} // the turns of compactions
	)
	for _, e := range evs {
		switch e.Kind {
		case api.KindTurnStarted:
			open[e.TurnID] = true
			if ts, err := api.Decode[api.TurnStarted](e); err == nil && ts.Kind == api.TurnCompact {
				compacts[e.TurnID] = true
			}
		case api.KindTurnCompleted:
			delete(open, e.TurnID)
		case api.KindTurnFailed:
			delete(open, e.TurnID)
			failed = true
		case api.KindMessage:
			if compacts[e.TurnID] {
				continue
			}
			m, err := api.Decode[api.Message](e)
			if err != nil {
				return api.EvalCase{}, fmt.Errorf("event %d: %w", e.Seq, err)
			}
			switch m.Role {
			case api.RoleUser:
				msgs = append(msgs, m.Text)
			case api.RoleAssistant:
				if current == nil {
					current = &api.EvalAnswer{}
				}
				current.Text += m.Text
			}
		case api.KindModelUsage:
			u, err := api.Decode[api.ModelUsage](e)
			if err != nil || u.Purpose != "" || compacts[e.TurnID] {
				continue // a compaction's summary is not an answer of the conversation's
			}
			if current == nil {
				current = &api.EvalAnswer{}
			}
			c.Replay = append(c.Replay, *current)
			current = nil
		case api.KindActionsRequested:
			a, err := api.Decode[api.ActionsRequested](e)
			if err != nil {
				return api.EvalCase{}, fmt.Errorf("event %d: %w", e.Seq, err)
			}
			if len(c.Replay) == 0 {
				return api.EvalCase{}, fmt.Errorf("event %d: tool calls before any model answer", e.Seq)
			}
			last := &c.Replay[len(c.Replay)-1]
			for _, act := range a.Actions {
				var in map[string]any
				if len(act.Input) > 0 {
					if err := json.Unmarshal(act.Input, &in); err != nil {
						return api.EvalCase{}, fmt.Errorf("event %d: the input of %s is not a JSON object; a replay cannot send it", e.Seq, act.CallID)
					}
				} else if act.InputText != "" {
					return api.EvalCase{}, fmt.Errorf("event %d: the input of %s is not JSON (%q); a replay cannot send it", e.Seq, act.CallID, preview(act.InputText, 80))
				}
				last.Calls = append(last.Calls, api.EvalToolCall{Tool: act.Tool, Input: in})
				calls = append(calls, act)
			}
		case api.KindActionResult:
			r, err := api.Decode[api.ActionResult](e)
			if err == nil && !r.Direct {
				results[r.CallID] = r
			}
		}
	}
	if len(open) > 0 {
		return api.EvalCase{}, errors.New("the session is running a turn; export it once the turn has ended")
	}
	switch len(msgs) {
	case 0:
		return api.EvalCase{}, errors.New("the session has no user message to replay")
	case 1:
		c.Message = msgs[0]
	default:
		c.Conversation = msgs
	}
	anyError := failed
	for _, a := range calls {
		ch := api.EvalCheck{Called: a.Tool}
		if len(a.Input) > 0 {
			_ = json.Unmarshal(a.Input, &ch.Args)
		}
		r, ok := results[a.CallID]
		if ok && r.IsError {
			anyError = true
		}
		if ok && !r.IsError && len(r.Result) <= MaxResult {
			var v any
			if json.Unmarshal(r.Result, &v) == nil && v != nil {
				ch.Result = v
			}
		}
		c.Checks = append(c.Checks, ch)
	}
	if !anyError {
		c.Checks = append(c.Checks, api.EvalCheck{NoError: true})
	}
	return c, nil
}

func preview(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

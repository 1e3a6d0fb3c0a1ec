package host

import (
	"context"
	"fmt"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// turnCall is what a runner's report may say of a call of its turn.
type turnCall struct {
	tool     string
	input    []byte
	answered bool // it has its result
	parked   bool // it waits for (or had) a decision: the host answers it
}

// checkResults checks the action results of a runner's report on a turn:
// each answers a call of the turn, announced in an actions.requested
// event (earlier in the report, or stored), under the tool it was
// announced with, that has no result yet and that the host does not
// answer itself — a call parked for approval, or a server tool's call
// that needs approval (never called through CallInTurn, so never
// approved): its result comes with its decision. A result for a call
// whose input the tool refuses, or of a tool the agent does not have, is
// an error result. The error says which event is refused and why.
func (h *Host) checkResults(ctx context.Context, sessionID, turnID string, evs []api.Event) error {
	results := false
	for _, e := range evs {
		results = results || e.Kind == api.KindActionResult
	}
	if !results {
		return nil // the common report: deltas, messages, announcements
	}
	calls := map[string]*turnCall{}
	note := func(e api.Event) {
		switch e.Kind {
		case api.KindActionsRequested:
			a, _ := api.Decode[api.ActionsRequested](e)
			for _, act := range a.Actions {
				if calls[act.CallID] == nil {
					calls[act.CallID] = &turnCall{tool: act.Tool, input: act.Input}
				}
			}
		case api.KindApprovalRequested:
			a, _ := api.Decode[api.ApprovalRequested](e)
			if c := calls[a.CallID]; c != nil {
				c.parked = true
			} else {
				calls[a.CallID] = &turnCall{tool: a.Tool, parked: true}
			}
		case api.KindActionResult:
			r, _ := api.Decode[api.ActionResult](e)
			if c := calls[r.CallID]; c != nil {
				c.answered = true
			}
		}
	}
	err := eachEvent(ctx, h.log, sessionID, func(e api.Event) {
		if e.TurnID == turnID {
			note(e)
		}
	})
	if err != nil {
		return storeError(err, nil)
	}
	for i, e := range evs {
		if e.Kind != api.KindActionResult {
			note(e)
			continue
		}
		r, err := api.Decode[api.ActionResult](e)
		if err != nil {
			return api.Errorf(api.CodeInvalidReport, "event %d (%s): %v", i, e.Kind, err)
		}
		if why := h.refuseResult(calls[r.CallID], r); why != "" {
			return api.Errorf(api.CodeInvalidReport, "event %d (%s): call %s %s", i, e.Kind, r.CallID, why)
		}
		calls[r.CallID].answered = true
	}
	return nil
}

// refuseResult says why a runner may not report r for c ("" if it may).
func (h *Host) refuseResult(c *turnCall, r api.ActionResult) string {
	switch {
	case c == nil:
		return "was not requested in this turn (announce it in actions.requested first)"
	case c.tool != r.Tool:
		return fmt.Sprintf("was requested as %s, not %s", c.tool, r.Tool)
	case c.answered:
		return "has its result already"
	case c.parked:
		return "needs approval: its result comes with the decision, from the host"
	}
	t, ok := h.tools.Lookup(c.tool)
	if !ok {
		if !r.IsError {
			return fmt.Sprintf("is of %s, a tool the agent does not have: its result is an error", c.tool)
		}
		return ""
	}
	if t.Execution() != tool.Server {
		return "" // an agent tool, run by the runner
	}
	in, err := t.Validate(c.input)
	switch {
	case err != nil && !r.IsError:
		return fmt.Sprintf("has an input that %s refuses: its result is an error", c.tool)
	case err != nil:
		return ""
	case h.needsApproval(t, in):
		return "needs approval: its result comes with the decision, from the host"
	}
	return ""
}

package evals

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/progress"
)

// evalCheckTimeout bounds one check (a matches check's match; the others
// take no time to speak of).
const evalCheckTimeout = 5 * time.Second

// evalChecks checks a case's checks against its session's events; lastTurn
// is the turn whose answer is the final one. The checks run under ctx, the
// case's: a check that runs past its deadline, or past evalCheckTimeout,
// is an error of the case's, naming the check.
func evalChecks(ctx context.Context, checks []api.EvalCheck, evs []api.Event, lastTurn string) ([]api.EvalCheckResult, error) {
	var (
		calls    []api.Action
		results  = map[string]api.ActionResult{}
		answer   string
		answered bool
		steps    int
		errs     []string
	)
	for _, e := range evs {
		switch e.Kind {
		case api.KindActionsRequested:
			if a, err := api.Decode[api.ActionsRequested](e); err == nil {
				calls = append(calls, a.Actions...)
			}
		case api.KindMessage:
			if m, err := api.Decode[api.Message](e); err == nil && m.Role == api.RoleAssistant && e.TurnID == lastTurn {
				answer, answered = m.Text, true
			}
		case api.KindTurnCompleted:
			if tc, err := api.Decode[api.TurnCompleted](e); err == nil && tc.Steps != nil {
				steps += *tc.Steps
			}
		case api.KindTurnFailed:
			if tf, err := api.Decode[api.TurnFailed](e); err == nil {
				if tf.Steps != nil {
					steps += *tf.Steps
				}
				errs = append(errs, "a turn failed: "+tf.Reason)
			}
		case api.KindActionResult:
			r, err := api.Decode[api.ActionResult](e)
			if err != nil {
				break
			}
			results[r.CallID] = r
			if r.IsError {
				errs = append(errs, fmt.Sprintf("%s (%s) had an error: %s", r.Tool, r.CallID, preview(resultText(r.Result), 200)))
			}
		}
	}
	out := make([]api.EvalCheckResult, 0, len(checks))
	for k, c := range checks {
		r := api.EvalCheckResult{Check: c}
		switch {
		case c.Called != "":
			r.Pass, r.Detail = checkCalled(c, calls, results)
		case c.NotCalled != "":
			var ids []string
			for _, a := range calls {
				if a.Tool == c.NotCalled {
					ids = append(ids, a.CallID)
				}
			}
			r.Pass = len(ids) == 0
			if !r.Pass {
				r.Detail = fmt.Sprintf("called %s: %s", times(len(ids)), strings.Join(ids, ", "))
			}
		case c.Contains != "":
			r.Pass = answered && strings.Contains(answer, c.Contains)
			r.Detail = answerDetail(answered, r.Pass, answer, "does not contain it")
		case c.Matches != "":
			re, err := regexp.Compile(c.Matches)
			if err != nil {
				r.Detail = "not a regular expression: " + err.Error()
				break
			}
			if answered {
				if r.Pass, err = matchWithin(ctx, re, answer); err != nil {
					return nil, fmt.Errorf("checks[%d] (matches %q): %w", k, preview(c.Matches, 80), err)
				}
			}
			r.Detail = answerDetail(answered, r.Pass, answer, "does not match")
		case c.MaxSteps > 0:
			r.Pass = steps <= c.MaxSteps
			r.Detail = fmt.Sprintf("%d model steps", steps)
		case c.NoError:
			r.Pass = len(errs) == 0
			if !r.Pass {
				r.Detail = strings.Join(errs, "; ")
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// matchWithin matches re against s unless ctx ends first, or
// evalCheckTimeout passes; then the match is left to finish by itself
// (regexp cannot be stopped; checkEval bounds its program, and so how
// long it may take) and the error says why.
func matchWithin(ctx context.Context, re *regexp.Regexp, s string) (bool, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, evalCheckTimeout, fmt.Errorf("the match took longer than %v", evalCheckTimeout))
	defer cancel()
	done := make(chan bool, 1)
	go func() { done <- re.MatchString(s) }()
	select {
	case ok := <-done:
		return ok, nil
	case <-ctx.Done():
		return false, context.Cause(ctx)
	}
}

// checkCalled checks a called check: a call of the tool whose input holds
// the check's args (a subset, compared as JSON values) and, with a
// result, whose result holds it (resultHolds).
func checkCalled(c api.EvalCheck, calls []api.Action, results map[string]api.ActionResult) (bool, string) {
	var want map[string]any
	if len(c.Args) > 0 {
		if err := roundTrip(c.Args, &want); err != nil {
			return false, "the args cannot be compared: " + err.Error()
		}
	}
	var wantResult any
	if c.Result != nil {
		if err := roundTrip(c.Result, &wantResult); err != nil {
			return false, "the result cannot be compared: " + err.Error()
		}
	}
	n, withArgs := 0, 0
	var lastInput, lastResult string
	for _, a := range calls {
		if a.Tool != c.Called {
			continue
		}
		n++
		if want != nil {
			var in map[string]any
			if len(a.Input) == 0 || json.Unmarshal(a.Input, &in) != nil || !holds(in, want) {
				lastInput = string(a.Input)
				if lastInput == "" {
					lastInput = a.InputText
				}
				continue
			}
		}
		withArgs++
		if wantResult == nil {
			if want == nil {
				return true, "called by " + a.CallID
			}
			return true, "called with the args by " + a.CallID
		}
		r, ok := results[a.CallID]
		if !ok {
			lastResult = "(none: the call has no result)"
			continue
		}
		if resultHolds(r.Result, wantResult) {
			return true, "called with the result by " + a.CallID
		}
		lastResult = string(r.Result)
	}
	switch {
	case n == 0:
		return false, "not called"
	case withArgs == 0:
		return false, fmt.Sprintf("called %s, never with the args; last input: %s", times(n), preview(lastInput, 200))
	}
	return false, fmt.Sprintf("called %s, never with the result; last result: %s", times(withArgs), preview(lastResult, 200))
}

// resultHolds reports whether a call's result holds want: an object's
// fields with their values (a subset), any other value equal.
func resultHolds(result json.RawMessage, want any) bool {
	var got any
	if json.Unmarshal(result, &got) != nil {
		return false
	}
	if w, ok := want.(map[string]any); ok {
		g, ok := got.(map[string]any)
		return ok && holds(g, w)
	}
	return reflect.DeepEqual(got, want)
}

// holds reports whether in has every field of want with an equal value.
func holds(in, want map[string]any) bool {
	for k, v := range want {
		got, ok := in[k]
		if !ok || !reflect.DeepEqual(got, v) {
			return false
		}
	}
	return true
}

func answerDetail(answered, pass bool, answer, fails string) string {
	switch {
	case !answered:
		return "no final answer"
	case pass:
		return ""
	}
	return fmt.Sprintf("the final answer %s: %q", fails, preview(answer, 200))
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return strconv.Itoa(n) + " times"
}

// preview cuts s to about n bytes, at a rune boundary.
func preview(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return progress.TruncateUTF8(s, n) + "…"
}

// resultText is a tool's result as text: a string's own text, other JSON
// as it is.
func resultText(result json.RawMessage) string {
	var s string
	if json.Unmarshal(result, &s) == nil {
		return s
	}
	return string(result)
}

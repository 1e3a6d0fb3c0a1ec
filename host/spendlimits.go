package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/turnloop"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// Usage limits (agent.yaml's limits:). Before each model call of a local
// turn, the host reserves what the call may consume — its estimated input
// and its whole output allowance (maxTokens), at the model's prices — in
// one store transaction that sums what the turn, the session and the
// principal today have spent and hold reserved (store.ReserveUsage), and
// refuses the call if that would pass a limit. So a limit is passed by no
// more than one call's actual use minus its estimate, even by turns racing
// on one principal's budget across hosts. The reservation is released once
// the call's usage is recorded.
//
// At a limit, the turn fails (budget_exceeded), or with OnExceed approve
// it parks as an approval of the built-in raise_usage_limit — decided like
// any other call, so a person, not the model, decides to spend more.
// Approved, it raises that limit by its own size (for the turn, the
// session, or the session today); denied or expired, the turn fails.

// UsageLimits bound what model turns spend. A zero UsageLimit bounds
// nothing.
type UsageLimits struct {
	Turn           UsageLimit
	Session        UsageLimit
	PrincipalDaily UsageLimit // per principal, per UTC day
	// OnExceed is what happens at a limit: LimitFail (the default) or
	// LimitApprove.
	OnExceed OnExceed
}

// UsageLimit bounds tokens (of every kind, in and out) or cost, or both;
// zero means no bound on it.
type UsageLimit struct {
	Tokens int64
	Cost   model.Micros
}

// OnExceed says what a turn does at a usage limit.
type OnExceed string

// What a turn does at a usage limit.
const (
	LimitFail    OnExceed = "fail"
	LimitApprove OnExceed = "approve"
)

func (l UsageLimit) set() bool { return l.Tokens > 0 || l.Cost > 0 }

func (ls UsageLimits) set() bool { return ls.Turn.set() || ls.Session.set() || ls.PrincipalDaily.set() }

// checkLimits refuses limits the host cannot keep: a cost limit for a
// model without a price, an unknown OnExceed.
func (h *Host) checkLimits() error {
	ls := h.opts.Limits
	switch ls.OnExceed {
	case "", LimitFail, LimitApprove:
	default:
		return fmt.Errorf("limits.onExceed %q: fail or approve", ls.OnExceed)
	}
	if _, taken := h.tools.Lookup(raiseTool); taken && ls.OnExceed == LimitApprove {
		return fmt.Errorf("a tool is named %s, the approval that raises a usage limit (limits.onExceed: approve): rename the tool", raiseTool)
	}
	if ls.Turn.Cost == 0 && ls.Session.Cost == 0 && ls.PrincipalDaily.Cost == 0 {
		return nil
	}
	if _, ok := h.prices.Lookup(h.opts.ModelConfig.Name); !ok && h.opts.Model != nil {
		return fmt.Errorf("limits in dollars need the price of the model %q: add it under pricing: in agent.yaml", h.opts.ModelConfig.Name)
	}
	return nil
}

// scope names a usage limit, as the approval that raises it does.
type scope string

const (
	scopeTurn      scope = "turn"
	scopeSession   scope = "session"
	scopePrincipal scope = "principalDaily"
)

// overLimit is a model call refused at a usage limit: its error is the
// turn's reason, budget_exceeded its code.
type overLimit struct {
	scope    scope
	limit    UsageLimit // as raised
	spent    store.Spend
	next     store.Spend
	tokens   bool // the token bound is the one passed, else the cost
	decision string
}

func (e *overLimit) Error() string {
	what := map[scope]string{scopeTurn: "the turn's", scopeSession: "the session's", scopePrincipal: "the principal's daily"}[e.scope]
	var s string
	if e.tokens {
		s = fmt.Sprintf("%s usage limit of %d tokens reached: %d spent, and the next model call may take %d", what, e.limit.Tokens, e.spent.Tokens, e.next.Tokens)
	} else {
		s = fmt.Sprintf("%s usage limit of %s reached: %s spent, and the next model call may cost %s", what, e.limit.Cost, model.Micros(e.spent.Micros), model.Micros(e.next.Micros))
	}
	if e.decision != "" {
		s += "; " + e.decision
	}
	return s
}

// check returns the first limit that spent and the next call would pass.
func (ls UsageLimits) check(spent store.Spent, next store.Spend, raised raises) *overLimit {
	for _, c := range []struct {
		scope scope
		limit UsageLimit
		spent store.Spend
	}{
		{scopeTurn, ls.Turn, spent.Turn}, {scopeSession, ls.Session, spent.Session}, {scopePrincipal, ls.PrincipalDaily, spent.Principal},
	} {
		if !c.limit.set() {
			continue
		}
		l := raised.limit(c.scope, c.limit)
		if l.Tokens > 0 && c.spent.Tokens+next.Tokens > l.Tokens {
			return &overLimit{scope: c.scope, limit: l, spent: c.spent, next: next, tokens: true}
		}
		if l.Cost > 0 && c.spent.Micros+next.Micros > int64(l.Cost) {
			return &overLimit{scope: c.scope, limit: l, spent: c.spent, next: next}
		}
	}
	return nil
}

// raises are the approvals of raise_usage_limit a turn's history holds:
// how many were approved per scope (each raises its limit by its size),
// and the last one's decision per scope when it was not approved.
type raises struct {
	approved map[scope]int64
	refused  map[scope]string // "denied by …: reason", "expired"
	// never: the turn does not wait for a raise (a compact turn); a
	// limit fails it.
	never bool
}

func (r raises) limit(s scope, l UsageLimit) UsageLimit {
	n := r.approved[s]
	return UsageLimit{Tokens: l.Tokens * (1 + n), Cost: l.Cost * model.Micros(1+n)}
}

// RaiseInput is the input of the built-in raise_usage_limit: which limit,
// where it stands, and the question a person answers.
type RaiseInput struct {
	Question string `json:"question"`
	Scope    string `json:"scope"`
	Day      string `json:"day,omitempty"`
	Limit    string `json:"limit"`
	Spent    string `json:"spent"`
	RaiseBy  string `json:"raiseBy"`
}

// raiseTool is the name of the approval that raises a usage limit.
const raiseTool = "raise_usage_limit"

// newRaiser is raise_usage_limit: never offered to a model or callable
// directly; the host parks a call of it at a usage limit, and running it
// (once approved) records the raise.
func newRaiser() *tool.Tool {
	t, err := tool.New(raiseTool, tool.Config{Description: "Raise a usage limit of agent.yaml (limits:) that a turn reached, so that it goes on."},
		func(ctx context.Context, call *tool.Call, in RaiseInput) (any, error) {
			return map[string]string{"raised": in.Scope, "by": in.RaiseBy}, nil
		})
	if err != nil {
		panic(err) // a definition of ours: a test catches it
	}
	return t
}

// readRaises collects a turn's raise_usage_limit decisions from its
// session's events: approvals of the session and turn scopes count for the
// session and that turn, those of the daily scope for the session today.
func readRaises(evs []api.Event, turnID string, today string) raises {
	r := raises{approved: map[scope]int64{}, refused: map[scope]string{}}
	asked := map[string]RaiseInput{} // call id → its input
	askedIn := map[string]string{}   // call id → turn id
	for _, e := range evs {
		switch e.Kind {
		case api.KindApprovalRequested:
			a, err := api.Decode[api.ApprovalRequested](e)
			if err != nil || a.Tool != raiseTool {
				continue
			}
			var in RaiseInput
			if json.Unmarshal(a.Input, &in) == nil {
				asked[a.CallID], askedIn[a.CallID] = in, e.TurnID
			}
		case api.KindApprovalResolved:
			d, err := api.Decode[api.ApprovalResolved](e)
			in, ok := asked[d.CallID]
			if err != nil || !ok {
				continue
			}
			s := scope(in.Scope)
			if (s == scopeTurn && askedIn[d.CallID] != turnID) || (s == scopePrincipal && in.Day != today) {
				continue
			}
			if d.Status == api.ApprovalApproved {
				r.approved[s]++
				delete(r.refused, s)
				continue
			}
			how := "nobody raised it before the request expired"
			if d.Status == api.ApprovalDenied {
				how = "raising it was denied by " + d.By
				if d.Reason != "" {
					how += ": " + d.Reason
				}
			}
			if askedIn[d.CallID] == turnID {
				r.refused[s] = how
			}
		}
	}
	return r
}

// estimate is what a model call may consume at most: its input, estimated
// at four bytes a token from what it sends, and its whole output
// allowance, at the price of the model named.
func (h *Host) estimate(inputBytes int64, maxTokens int, modelName string) store.Spend {
	in, out := inputBytes/4+1, int64(maxTokens)
	s := store.Spend{Tokens: in + out}
	if p, ok := h.prices.Lookup(modelName); ok {
		s.Micros = int64(p.Cost(model.Usage{InputTokens: in, OutputTokens: out}))
	}
	return s
}

// admit reserves, under id, what a turn's next model call may consume
// (next), or refuses it at a limit: the turn fails (an *overLimit), or
// parks for a person to raise the limit (turnloop.ErrParked). done
// releases the reservation.
func (h *Host) admit(ctx context.Context, sess api.Session, turnID string, raised raises, next store.Spend, id string) (done func(), err error) {
	ls := h.opts.Limits
	if !ls.set() {
		return func() {}, nil
	}
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	var over *overLimit
	err = h.log.ReserveUsage(ctx, store.ReserveUsageParams{
		ID: id, SessionID: sess.ID, TurnID: turnID, Principal: sess.Principal, Since: day, Amount: next,
		Expires: now.Add(h.opts.ModelTimeout + time.Minute),
		Admit: func(spent store.Spent) error {
			if over = ls.check(spent, next, raised); over != nil {
				return over
			}
			return nil
		},
	})
	switch {
	case over != nil:
		if refused, ok := raised.refused[over.scope]; ok || ls.OnExceed != LimitApprove || raised.never {
			over.decision = refused
			return nil, over
		}
		if err := h.askToRaise(ctx, sess, turnID, over, day); err != nil {
			return nil, fmt.Errorf("asking to raise a usage limit: %w", err)
		}
		return nil, turnloop.ErrParked
	case err != nil:
		return nil, fmt.Errorf("reserving a model call's usage: %w", err)
	}
	return func() {
		if err := h.log.ReleaseUsage(context.WithoutCancel(ctx), id); err != nil {
			h.logger.Error("releasing a usage reservation", "session", sess.ID, "err", err)
		}
	}, nil
}

// askToRaise parks a call of raise_usage_limit in the turn.
func (h *Host) askToRaise(ctx context.Context, sess api.Session, turnID string, over *overLimit, day time.Time) error {
	in := RaiseInput{Scope: string(over.scope)}
	base := h.opts.Limits.Session
	switch over.scope {
	case scopeTurn:
		base = h.opts.Limits.Turn
	case scopePrincipal:
		base = h.opts.Limits.PrincipalDaily
		in.Day = day.Format(time.DateOnly)
	}
	what := map[scope]string{scopeTurn: "turn", scopeSession: "session", scopePrincipal: sess.Principal + " today"}[over.scope]
	if over.tokens {
		in.Limit, in.Spent, in.RaiseBy = fmt.Sprintf("%d tokens", over.limit.Tokens), fmt.Sprintf("%d tokens", over.spent.Tokens), fmt.Sprintf("%d tokens", base.Tokens)
	} else {
		in.Limit, in.Spent, in.RaiseBy = over.limit.Cost.String(), model.Micros(over.spent.Micros).String(), base.Cost.String()
	}
	in.Question = fmt.Sprintf("%s over %s (spent %s): continue for another %s?", what, in.Limit, in.Spent, in.RaiseBy)
	b, _ := json.Marshal(in)
	valid, err := h.raiser.Validate(b)
	if err != nil {
		return err
	}
	_, err = h.park(ctx, h.raiser, valid, parkSpec{callID: tool.NewCallID(raiseTool), sessionID: sess.ID, turnID: turnID, by: sess.Principal})
	return err
}

// isOverLimit reports whether a turn failed at a usage limit.
func isOverLimit(err error) bool {
	_, ok := errors.AsType[*overLimit](err)
	return ok
}

// Admit answers a runner asking, before a cloud turn's model call, whether
// the usage limits let it be made: the host reserves what the call may
// consume (one reservation per turn, replaced by the next call's and
// released when the runner reports the call's model.usage), or answers
// budget_exceeded, or parks the turn for a person to raise the limit
// (Parked: the runner ends its claim parked). lease_lost when the runner
// no longer holds the turn.
func (r Runners) Admit(ctx context.Context, sessionID, turnID string, a api.RunnerAdmit) (api.RunnerAdmitted, error) {
	h := r.h
	if !r.Holds(ctx, sessionID, turnID, a.Token) {
		return api.RunnerAdmitted{}, api.Errorf(api.CodeLeaseLost, "turn %s of session %s: %s", turnID, sessionID, api.CodeLeaseLost.Description())
	}
	if !h.opts.Limits.set() {
		return api.RunnerAdmitted{OK: true}, nil
	}
	sess, err := h.log.Session(ctx, sessionID)
	if err != nil {
		return api.RunnerAdmitted{}, storeError(err, sessionNotFound(sessionID))
	}
	var asked []api.Event
	err = eachEvent(ctx, h.log, sessionID, func(e api.Event) {
		if e.Kind == api.KindApprovalRequested || e.Kind == api.KindApprovalResolved {
			asked = append(asked, e)
		}
	})
	if err != nil {
		return api.RunnerAdmitted{}, storeError(err, nil)
	}
	raised := readRaises(asked, turnID, time.Now().UTC().Format(time.DateOnly))
	maxTokens := min(max(a.MaxTokens, 1), 1<<20)
	next := h.estimate(min(max(a.InputBytes, 0), 1<<40), maxTokens, h.opts.Cloud.Model.Name)
	_, err = h.admit(ctx, sess, turnID, raised, next, cloudReservation(turnID))
	switch {
	case errors.Is(err, turnloop.ErrParked):
		return api.RunnerAdmitted{OK: true, Parked: true}, nil
	case isOverLimit(err):
		return api.RunnerAdmitted{}, api.Errorf(api.CodeOverBudget, "%v", err)
	case err != nil:
		return api.RunnerAdmitted{}, err
	}
	return api.RunnerAdmitted{OK: true}, nil
}

// cloudReservation is the id of a cloud turn's reservation: one at a time,
// as its model calls are.
func cloudReservation(turnID string) string { return "res_cloud_" + turnID }

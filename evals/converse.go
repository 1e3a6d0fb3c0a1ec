package evals

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
)

// evalCaseTimeout bounds a case, all its turns together.
const evalCaseTimeout = 10 * time.Minute

// runCase runs a case in its session, principal's, and checks what
// happened. The result has Status, Checks, Score, Pass and Error.
func (s *Service) runCase(ctx context.Context, c api.EvalCase, principal, sessionID string) api.EvalCaseResult {
	ctx, cancel := context.WithTimeoutCause(ctx, evalCaseTimeout, fmt.Errorf("timed out after %v", evalCaseTimeout))
	defer cancel()
	// A case's stubs answer its calls of the tools they stub, and its
	// replay its model calls, in its session's turns on this host.
	st, err := newStubs(c.Stubs)
	if err != nil {
		return api.EvalCaseResult{Status: api.EvalFailed, Error: "reading the case's stubs: " + err.Error()}
	}
	var hk host.SessionHooks
	if st != nil {
		hk.Call = st.call
	}
	if len(c.Replay) > 0 {
		m, err := replayModel(c.Replay)
		if err != nil {
			return api.EvalCaseResult{Status: api.EvalFailed, Error: "reading the case's replay: " + err.Error()}
		}
		hk.Model = m
	}
	hooked := hk.Call != nil || hk.Model != nil
	if hooked {
		defer s.h.HookSession(sessionID, hk)()
	}
	evs, lastTurn, err := s.converse(ctx, c, principal, sessionID, hooked)
	if err != nil {
		return api.EvalCaseResult{Status: api.EvalFailed, Error: err.Error()}
	}
	checks, err := evalChecks(ctx, c.Checks, evs, lastTurn)
	if err != nil {
		return api.EvalCaseResult{Status: api.EvalFailed, Error: "checking the case: " + err.Error()}
	}
	if missed, ok := st.missedCheck(); ok {
		checks = append(checks, missed)
	}
	if c.Scorer != "" {
		checks = append(checks, s.score(ctx, c, evs))
	}
	r := api.EvalCaseResult{Status: api.EvalCompleted, Checks: checks, Score: 1, Pass: true}
	if len(checks) > 0 {
		passed := 0
		for _, ch := range checks {
			if ch.Pass {
				passed++
			}
		}
		r.Score, r.Pass = float64(passed)/float64(len(checks)), passed == len(checks)
	}
	return r
}

// converse creates the case's session, principal's, with its first message and sends
// each of the others once the previous turn has ended; it returns the
// session's events and the last turn's id. A turn that failed, or the
// case's context ending, is an error. A hooked case's session (stubs, a
// replay) is local: its turns run on this host, where its hooks are.
func (s *Service) converse(ctx context.Context, c api.EvalCase, principal, sessionID string, hooked bool) ([]api.Event, string, error) {
	msgs := c.Conversation
	if c.Message != "" {
		msgs = []string{c.Message}
	}
	opts := host.SessionOptions{Channel: host.EvalChannel, Principal: principal, Message: msgs[0], ID: sessionID}
	if hooked {
		opts.Mode = api.ModeLocal
	}
	_, turnID, err := s.h.Sessions().Create(ctx, opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", context.Cause(ctx)
		}
		return nil, "", fmt.Errorf("creating the case's session: %w", err)
	}
	var evs []api.Event
	var failed error
	sent := 1
	for e, err := range s.h.Sessions().Follow(ctx, sessionID, 0) {
		if err != nil {
			failed = fmt.Errorf("reading the case's events: %w", err)
			break
		}
		evs = append(evs, e)
		if e.TurnID != turnID || e.Kind != api.KindTurnCompleted && e.Kind != api.KindTurnFailed {
			continue
		}
		if e.Kind == api.KindTurnFailed {
			fl, _ := api.Decode[api.TurnFailed](e)
			what := "the turn"
			if len(msgs) > 1 {
				what = fmt.Sprintf("turn %d of %d", sent, len(msgs))
			}
			return evs, "", fmt.Errorf("%s failed: %s", what, fl.Reason)
		}
		if sent == len(msgs) {
			return evs, turnID, nil
		}
		if turnID, err = s.sendNext(ctx, sessionID, msgs[sent]); err != nil {
			return evs, "", err
		}
		sent++
	}
	if failed == nil {
		failed = context.Cause(ctx)
	}
	// Its turn goes no further (if the host is stopping, it is being
	// cancelled already).
	if cerr := s.h.Sessions().Cancel(context.WithoutCancel(ctx), sessionID); cerr != nil && !errors.Is(cerr, api.ErrNoRunningTurn) {
		s.logger.Warn("cancelling an eval case's turn", "session", sessionID, "err", cerr)
	}
	return evs, "", failed
}

// sendNext sends the next message of a conversation, waiting a little
// while the session is busy (a turn that has just ended may still hold it
// for a moment).
func (s *Service) sendNext(ctx context.Context, sessionID, message string) (string, error) {
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		turnID, err := s.h.Sessions().Send(ctx, sessionID, message)
		if err == nil {
			return turnID, nil
		}
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		if !errors.Is(err, api.ErrSessionBusy) {
			return "", fmt.Errorf("sending the next message: %w", err)
		}
		select {
		case <-ctx.Done():
			return "", context.Cause(ctx)
		case <-time.After(wait):
		}
	}
}

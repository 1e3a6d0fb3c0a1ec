package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/store"
)

// Turns whose host died. Every host sweeps every LeaseTTL/2 for running
// turns whose lease ran out (Start). A model turn is resumed by the host
// that finds it: it takes the turn over under a new fence
// (store.Sessions.TakeOverTurn: of several hosts, one wins), answers the
// calls the dead host was running with "interrupted by host restart; not
// retried" (the model reads it and decides; nothing runs twice), records
// turn.resumed, and runs the turn's loop again from its history, in which
// an answer that was streaming is missing (only complete messages are
// read) and is asked again. A cloud turn is made ready for the next claim
// instead. Each resumption counts: past Options.MaxResumes the turn fails
// with resume_limit. Other turns (a direct call's, a compaction's, an
// eval case's: the case is failed, not run again) are closed with
// turn.failed, as is a turn another has taken the session from.

// sweepStore is what the sweep of dead turns reads and writes through: a
// job's transaction (txWriter: what it appends is published once it has
// committed), or, on a store without jobs, the host's log (logTx).
type sweepStore interface {
	store.Sessions
	store.Approvals
	AfterCommit(fn func())
}

// logTx is the host's log as a sweepStore: each write is its own, and
// published at once.
type logTx struct{ *eventLog }

func (logTx) AfterCommit(fn func()) { fn() }

// sweepDeadTurns resumes or closes the turns whose lease ran out.
func (h *Host) sweepDeadTurns(ctx context.Context, w sweepStore) error {
	now := time.Now()
	expired, err := w.ExpiredTurns(ctx, now)
	if err != nil || len(expired) == 0 {
		return err
	}
	// Approved calls claimed and without an outcome: claimed by a turn's
	// holder (drive runs them under the turn's lease), they died with it.
	// Every claim's lease ends within a LeaseTTL, hence the horizon.
	claimed, err := w.OrphanedApprovals(ctx, now.Add(h.opts.LeaseTTL+time.Minute))
	if err != nil {
		return err
	}
	// In one order on every host, so that two sweeps on PostgreSQL lock
	// the sessions' rows in the same order, never each waiting for the
	// other.
	slices.SortFunc(expired, func(a, b api.Turn) int {
		return cmp.Or(cmp.Compare(a.SessionID, b.SessionID), cmp.Compare(a.ID, b.ID))
	})
	for _, t := range expired {
		if h.leases.runs(t.SessionID, t.ID) {
			// Ours, and alive: its renewals are late, and the next one
			// holds it again (a renewal checks the fence, not the time).
			// Another host may take it over meanwhile; its next write
			// then finds its fence gone.
			continue
		}
		if err := h.deadTurn(ctx, w, t, claimed); err != nil {
			return err
		}
	}
	return nil
}

// deadTurn resumes a model turn whose host died, or closes it.
func (h *Host) deadTurn(ctx context.Context, w sweepStore, t api.Turn, claimed []api.Approval) error {
	restart := api.TurnFailed{Code: api.FailureInterrupted, Reason: reasonRestart}
	if t.Kind != api.TurnModel || h.opts.MaxResumes == 0 {
		return h.closeDeadTurn(ctx, w, t, claimed, restart)
	}
	sess, err := w.Session(ctx, t.SessionID)
	if err != nil {
		return err
	}
	if sess.Channel == EvalChannel {
		// Its eval case is failed as interrupted, not run again (package
		// evals' sweep): so is the case's turn.
		return h.closeDeadTurn(ctx, w, t, claimed, restart)
	}
	if sess.Runtime != "" && sess.Runtime != harness.Native {
		// Its harness process died with its host (or is reaped at the
		// next start): the harness's conversation is where the harness
		// left it, and the next turn continues it from there.
		// What it was waiting on a person for will never run: decided
		// denied by the host, so that nobody approves it for nothing.
		w.AfterCommit(func() { h.abandonHarnessCalls(context.WithoutCancel(ctx), t.SessionID, t.ID) })
		return h.closeDeadTurn(ctx, w, t, claimed, api.TurnFailed{Code: api.FailureInterrupted,
			Reason: fmt.Sprintf("%s; its harness (%s) died with it and a harness turn is not resumed: send the message again", reasonRestart, sess.Runtime)})
	}
	if h.ctx.Err() != nil {
		return nil // shutting down: the next host resumes it
	}
	hold, err := w.TakeOverTurn(ctx, t.SessionID, t.ID, h.leases.lease())
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		return h.closeDeadTurn(ctx, w, t, claimed, restart) // a newer turn has the session
	case errors.Is(err, store.ErrBusy), errors.Is(err, store.ErrNotRunning):
		return nil // renewed, taken over, parked or ended meanwhile
	case err != nil:
		return err
	}
	notify, err := h.interruptClaimed(ctx, w, t, claimed)
	if err != nil {
		return err
	}
	past, err := readDeadTurn(ctx, w, t)
	if err != nil {
		return err
	}
	done := func() {
		for _, id := range notify {
			h.waiters.notify(id)
		}
	}
	evs := interruptedResults(past.running)
	if past.resumes >= h.opts.MaxResumes {
		end := api.TurnFailed{Code: api.FailureResumeLimit,
			Reason: fmt.Sprintf("its host died %d times while it ran; maxResumes is %d", past.resumes+1, h.opts.MaxResumes)}
		_, err := w.EndTurn(ctx, store.EndTurnParams{SessionID: t.SessionID, TurnID: t.ID, Token: hold.Token,
			Status: api.TurnStatusFailed, Reason: end.Reason, Events: events(t.ID, append(evs, end)...)})
		if err != nil {
			return err
		}
		w.AfterCommit(func() {
			done()
			h.logger.Warn("failed a turn whose host died too often", "session", t.SessionID, "turn", t.ID, "resumes", past.resumes)
		})
		return nil
	}
	from := hold.PrevHome
	if from == "" {
		from = hold.PrevHolder // a runner
	}
	evs = append(evs, api.TurnResumed{Attempt: past.resumes + 1, From: from})
	if hold.PrevHome != "" && hold.PrevHome != h.leases.home {
		evs = append(evs, api.WorkspaceMoved{From: hold.PrevHome, To: h.leases.home})
	}
	if _, err := w.AppendTurn(ctx, hold.Fence, events(t.ID, evs...)...); err != nil {
		return err
	}
	log := func() {
		done()
		h.logger.Info("resumed a turn whose host died", "session", t.SessionID, "turn", t.ID, "from", from, "attempt", past.resumes+1)
	}
	switch {
	case past.answered:
		// The model's last answer was stored, the turn's end was not.
		w.AfterCommit(func() {
			log()
			if err := h.endTurn(h.ctx, hold.Fence, api.TurnCompleted{}); err != nil {
				h.logger.Error("ending a resumed turn", "session", t.SessionID, "turn", t.ID, "err", err)
			}
		})
	case sess.Mode == api.ModeCloud || past.gated:
		// A runner goes on with it once every call has its result; a
		// local turn once its parked calls are decided (drive).
		if err := w.ParkTurn(ctx, hold.Fence); err != nil {
			return err
		}
		w.AfterCommit(func() {
			log()
			if sess.Mode == api.ModeCloud {
				h.cloudReady.wake()
				return
			}
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				defer guard(h.logger, "driving a resumed turn", "session", t.SessionID, "turn", t.ID)
				h.drive(h.ctx, t.SessionID, t.ID) // decisions may have come
			}()
		})
	default:
		w.AfterCommit(func() {
			log()
			h.goTurn(h.leases.track(h.ctx, h.log, h.logger, hold.Fence), sess, hold.Fence)
		})
	}
	return nil
}

// interruptClaimed records the approved calls of a dead turn that its
// host had claimed and not finished as interrupted (they are not run
// again), and returns those whose outcome this was.
func (h *Host) interruptClaimed(ctx context.Context, w sweepStore, t api.Turn, claimed []api.Approval) ([]string, error) {
	var won []string
	for _, a := range claimed {
		if a.SessionID != t.SessionID || a.TurnID != t.ID {
			continue
		}
		ok, err := h.record(ctx, w, a, interrupted, 0)
		if err != nil {
			return nil, err
		}
		if ok {
			won = append(won, a.CallID)
		}
	}
	return won, nil
}

// deadTurnState is what a dead turn's stream says about it.
type deadTurnState struct {
	resumes  int          // its turn.resumed events
	running  []api.Action // calls without a result that did not park
	gated    bool         // calls parked for approval wait for a result
	answered bool         // its last step is the model's answer
}

// readDeadTurn reads a dead turn's events.
func readDeadTurn(ctx context.Context, r eventReader, t api.Turn) (deadTurnState, error) {
	var st deadTurnState
	var order []api.Action
	open, gated := map[string]bool{}, map[string]bool{}
	err := eachEvent(ctx, r, t.SessionID, func(e api.Event) {
		if e.TurnID != t.ID {
			return
		}
		switch e.Kind {
		case api.KindTurnResumed:
			st.resumes++
		case api.KindMessage:
			m, _ := api.Decode[api.Message](e)
			st.answered = m.Role == api.RoleAssistant
		case api.KindActionsRequested:
			st.answered = false
			a, _ := api.Decode[api.ActionsRequested](e)
			for _, act := range a.Actions {
				order = append(order, act)
				open[act.CallID] = true
			}
		case api.KindApprovalRequested:
			a, _ := api.Decode[api.ApprovalRequested](e)
			delete(open, a.CallID)
			gated[a.CallID] = true
		case api.KindActionResult:
			st.answered = false
			r, _ := api.Decode[api.ActionResult](e)
			delete(open, r.CallID)
			delete(gated, r.CallID)
		}
	})
	for _, a := range order {
		if open[a.CallID] {
			st.running = append(st.running, a)
		}
	}
	st.gated = len(gated) > 0
	return st, err
}

package host

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// newID returns prefix_<16 random lower-case characters>.
func newID(prefix string) string {
	return prefix + "_" + strings.ToLower(rand.Text()[:16])
}

// Sessions is a host's session service: sessions, their model turns and
// event streams, their workspaces and artifacts. Get it with
// [Host.Sessions].
type Sessions struct{ h *Host }

// Sessions returns the host's session service.
func (h *Host) Sessions() Sessions { return Sessions{h} }

// SessionOptions describe a new session.
type SessionOptions struct {
	Channel   string // default "http"
	Principal string // who opened it
	Message   string // if set, the first turn starts with it
	// Mode is where its model turns run: api.ModeLocal (in the host) or
	// api.ModeCloud (on a runner); "" for Options.Cloud.DefaultMode.
	Mode api.Mode
	// ID is the new session's id; "" for a new one. A caller that records
	// the id before the session is made (a Send with a key, an eval case)
	// gives one made by NewSessionID.
	ID string
	// Runtime is what runs its turns: harness.Native, a key of
	// Options.Harnesses, or "" for Options.Runtime.
	Runtime string
}

// The channel of eval cases' sessions (package evals), and the principal
// of a case's scorer call. A case's session is opened by the principal
// who ran its batch, and counts against that principal's MaxSessions.
const (
	EvalChannel   = "eval"
	EvalPrincipal = "eval"
)

// Create opens a session, makes its workspace, and starts a turn
// with opts.Message if there is one. It returns the session and the turn id
// ("" without a message).
func (s Sessions) Create(ctx context.Context, opts SessionOptions) (api.Session, string, error) {
	if opts.Channel == "" {
		opts.Channel = "http"
	}
	if err := tool.CheckName(opts.Channel); err != nil {
		return api.Session{}, "", api.Errorf(api.CodeInvalidChannel, "%s: %q", api.ErrInvalidChannel.Message, opts.Channel)
	}
	if opts.Message != "" && strings.TrimSpace(opts.Message) == "" {
		return api.Session{}, "", api.ErrEmptyMessage
	}
	if err := s.h.checkMessage(opts.Message); err != nil {
		return api.Session{}, "", err
	}
	if err := s.CheckQuota(ctx, opts.Principal, 1); err != nil {
		return api.Session{}, "", err
	}
	mode, err := s.h.sessionMode(opts.Mode)
	if err != nil {
		return api.Session{}, "", err
	}
	runtime, err := s.h.sessionRuntime(opts.Runtime)
	if err != nil {
		return api.Session{}, "", err
	}
	if opts.ID == "" {
		opts.ID = newID("sess")
	} else if err := tool.CheckName(opts.ID); err != nil {
		return api.Session{}, "", api.Errorf(api.CodeBadRequest, "creating a session: its id %q is not 1 to 64 letters, digits, '_' or '-' (make it with NewSessionID)", opts.ID)
	}
	sess := api.Session{ID: opts.ID, Channel: opts.Channel, Mode: mode, Principal: opts.Principal, Runtime: runtime}
	if _, err := s.h.sessionWorkspace(sess.ID).open(); err != nil {
		return api.Session{}, "", api.Errorf(api.CodeInternal, "creating session workspace: %w", err)
	}
	sess, err = s.h.log.CreateSession(ctx, sess)
	if err != nil {
		return api.Session{}, "", storeError(err, nil)
	}
	if err := s.h.emit(ctx, sess.ID, "", api.SessionCreated{Channel: sess.Channel, Mode: sess.Mode, Principal: sess.Principal, Runtime: sess.Runtime}); err != nil {
		return api.Session{}, "", storeError(err, nil)
	}
	if opts.Message == "" {
		return sess, "", nil
	}
	turnID, err := s.Send(ctx, sess.ID, opts.Message)
	return sess, turnID, err
}

// CheckQuota reports quota_exceeded unless principal may create n more
// sessions now: Options.MaxSessions an hour. Create checks it for one;
// a caller that will create several (an eval batch, a session per case)
// checks for all of them before it starts.
func (s Sessions) CheckQuota(ctx context.Context, principal string, n int) error {
	count := func(ctx context.Context, p string) (int, error) {
		return s.h.log.CountSessions(ctx, p, time.Now().Add(-time.Hour))
	}
	maxSessions := s.h.opts.MaxSessions
	if n <= 1 || maxSessions < 0 {
		return s.h.quota(ctx, "sessions created in the last hour", maxSessions, principal, count)
	}
	used, err := count(ctx, principal)
	if err != nil {
		return storeError(err, nil)
	}
	if used+n > maxSessions {
		return api.Errorf(api.CodeQuotaExceeded, "%s has created %d sessions in the last hour and asks for %d more; this host allows %d an hour", principal, used, n, maxSessions)
	}
	return nil
}

// Get returns a session, with its usage.
func (s Sessions) Get(ctx context.Context, id string) (api.Session, error) {
	sess, err := s.h.session(ctx, id)
	if err != nil {
		return api.Session{}, err
	}
	one := []api.Session{sess}
	if err := s.h.withUsage(ctx, one); err != nil {
		return api.Session{}, storeError(err, nil)
	}
	return one[0], nil
}

// session returns a session's record, without its usage (a sum over its
// model calls, which grows with it): what the host's own work needs.
func (h *Host) session(ctx context.Context, id string) (api.Session, error) {
	sess, err := h.log.Session(ctx, id)
	if err != nil {
		return api.Session{}, storeError(err, sessionNotFound(id))
	}
	return sess, nil
}

// List lists sessions, newest first, and the cursor of the next page.
func (s Sessions) List(ctx context.Context, p store.Page) ([]api.Session, string, error) {
	return s.ListBy(ctx, store.ListSessionsParams{Page: p})
}

// ListBy lists the sessions p selects (one principal's, when
// p.Principal is set), newest first, and the cursor of the next page.
func (s Sessions) ListBy(ctx context.Context, p store.ListSessionsParams) ([]api.Session, string, error) {
	list, next, err := s.h.log.ListSessions(ctx, p)
	if err == nil {
		err = s.h.withUsage(ctx, list)
	}
	return list, next, storeError(err, nil)
}

// Events returns up to limit stored events of a session after seq after.
func (s Sessions) Events(ctx context.Context, sessionID string, after int64, limit int) ([]api.Event, error) {
	evs, err := s.h.log.Events(ctx, sessionID, after, limit)
	if err != nil {
		return nil, storeError(err, sessionNotFound(sessionID))
	}
	return evs, nil
}

// Send starts a model turn with a user message. It returns the turn's id
// at once; the turn runs in the background, its progress on the session's
// event stream. It fails with api.ErrSessionBusy while another turn runs.
func (s Sessions) Send(ctx context.Context, sessionID, message string) (string, error) {
	if strings.TrimSpace(message) == "" {
		return "", api.ErrEmptyMessage
	}
	if err := s.h.checkMessage(message); err != nil {
		return "", err
	}
	sess, err := s.h.session(ctx, sessionID)
	if err != nil {
		return "", err
	}
	hold, err := s.h.beginTurn(ctx, sessionID, api.TurnStarted{Kind: api.TurnModel}, api.Message{Role: api.RoleUser, Text: message})
	if err != nil {
		return "", err
	}
	s.h.startTurn(sess, hold)
	return hold.TurnID, nil
}

// Cancel cancels the session's running turn, which then ends with
// turn.failed ("cancelled"), wherever it is: running here, parked for
// approvals (whichever host parked it), or a cloud turn on a runner or
// waiting for one. Ending a turn that does not run here closes the calls
// it waits on: a pending call is cancelled (a decision after that is
// refused with already_resolved, carrying the cancelled call), and a call
// approved but not yet run never runs; each call the turn left unanswered
// gets a result. It fails with api.ErrNoRunningTurn when the session has
// no running turn, or when its turn runs, not parked, on another host.
func (s Sessions) Cancel(ctx context.Context, sessionID string) error {
	sess, err := s.h.session(ctx, sessionID)
	if err != nil {
		return err
	}
	if sess.RunningTurn == "" {
		// The store is the judge: a turn that has just ended may still be
		// tracked here for a moment.
		return api.ErrNoRunningTurn
	}
	if s.h.leases.cancel(sessionID, errCancelled) {
		return nil
	}
	// A cloud turn ends even on its runner: the runner's next report
	// finds the turn gone (lease_lost) and stops.
	return s.h.cancelTurn(ctx, sessionID, sess.RunningTurn, sess.Mode == api.ModeCloud)
}

// cancelledResult is the result of a call whose turn was cancelled before
// it had one.
var cancelledResult = json.RawMessage(`"cancelled before it finished"`)

// cancelTurn ends a turn that does not run here (store.CancelTurn): parked,
// or with held, on a runner too. The stream records the calls it closed as
// cancelled, then a result for each call left unanswered, then
// turn.failed (cancelled); the direct callers waiting for a closed call are
// woken. api.ErrNoRunningTurn if the store finds it not parked (a host
// holds it) or ended. A cancel that comes as the decisions do wins or loses
// as a whole: either the turn ends here and none of its calls runs (one
// approved just before keeps its decision, and gets the cancelled result),
// or it has resumed on a host and goes on there.
func (h *Host) cancelTurn(ctx context.Context, sessionID, turnID string, held bool) error {
	ctx = context.WithoutCancel(ctx)
	open, err := openCalls(ctx, h.log, sessionID, turnID, false) // those parked are the store's to close
	if err != nil {
		return storeError(err, nil)
	}
	end := h.withTurnUsage(ctx, store.Fence{SessionID: sessionID, TurnID: turnID}, api.TurnFailed{Code: api.FailureCancelled, Reason: "cancelled"})
	closed, _, err := h.log.CancelTurn(ctx, store.CancelTurnParams{SessionID: sessionID, TurnID: turnID, Reason: "cancelled", CallReason: "its turn was cancelled", Held: held,
		Outcome: api.Outcome{IsError: true, Result: cancelledResult},
		Events: func(closed []api.Approval) []api.Event {
			var ps []api.Payload
			for _, a := range closed {
				if a.Status == api.ApprovalCancelled {
					ps = append(ps, api.ApprovalResolved{CallID: a.CallID, Tool: a.Tool, Status: a.Status, Reason: a.Reason, At: a.DecidedAt.UTC()})
				}
				ps = append(ps, api.ActionResult{CallID: a.CallID, ModelCallID: a.ModelCallID, Tool: a.Tool, IsError: true, Result: cancelledResult,
					Direct: a.ModelCallID == ""})
			}
			for _, a := range open {
				ps = append(ps, api.ActionResult{CallID: a.CallID, ModelCallID: a.ModelCallID, Tool: a.Tool, IsError: true, Result: cancelledResult})
			}
			return events(turnID, append(ps, end)...)
		}})
	if errors.Is(err, store.ErrNotRunning) {
		if t, terr := h.log.Turn(ctx, sessionID, turnID); terr == nil && t.Status == api.TurnStatusRunning {
			return api.Errorf(api.CodeNoRunningTurn, "turn %s of session %s runs on another host now, not parked; only the host running a turn can cancel it", turnID, sessionID)
		}
		return api.ErrNoRunningTurn
	}
	if err != nil {
		return storeError(err, nil)
	}
	for _, a := range closed {
		h.waiters.notify(a.CallID)
	}
	h.logger.Info("cancelled a turn", "session", sessionID, "turn", turnID, "closed", len(closed))
	return nil
}

// beginTurn starts a turn in a session, holding its lease, with its first
// events.
func (h *Host) beginTurn(ctx context.Context, sessionID string, start api.TurnStarted, more ...api.Payload) (store.Hold, error) {
	turnID := newID("turn")
	hold, _, err := h.log.BeginTurn(ctx, store.BeginTurnParams{
		Turn:   api.Turn{SessionID: sessionID, ID: turnID, Kind: start.Kind},
		Lease:  h.leases.lease(),
		Events: events(turnID, append([]api.Payload{start}, more...)...),
	})
	if err != nil {
		return store.Hold{}, storeError(err, sessionNotFound(sessionID))
	}
	h.moved(ctx, hold)
	return hold, nil
}

// moved records on the stream that a session's turns now run on this host,
// when they ran on another: its workspace here is new.
func (h *Host) moved(ctx context.Context, hold store.Hold) {
	if hold.PrevHome == "" || hold.PrevHome == h.leases.home {
		return
	}
	_, err := h.log.AppendTurn(context.WithoutCancel(ctx), hold.Fence, events(hold.TurnID, api.WorkspaceMoved{From: hold.PrevHome, To: h.leases.home})...)
	if err != nil {
		h.logger.Warn("recording a workspace move", "session", hold.SessionID, "err", err)
	}
	h.logger.Info("took over a session from another host; its workspace here is new", "session", hold.SessionID, "from", hold.PrevHome)
}

// endTurn ends a running turn with its last event: completed, or failed
// with the reason of a TurnFailed. A turn that has already ended (another
// host closed it) is no error. f's token fences the end; without one, the
// turn ends only if its lease ran out (a recovery). Payloads in before are
// stored just ahead of end, in the same write.
func (h *Host) endTurn(ctx context.Context, f store.Fence, end api.Payload, before ...api.Payload) error {
	end = h.withTurnUsage(ctx, f, end)
	p := store.EndTurnParams{SessionID: f.SessionID, TurnID: f.TurnID, Token: f.Token, Expired: f.Token == 0,
		Status: api.TurnStatusCompleted, Events: events(f.TurnID, append(before, end)...)}
	if fl, ok := end.(api.TurnFailed); ok {
		p.Status, p.Reason = api.TurnStatusFailed, fl.Reason
	}
	_, err := h.log.EndTurn(context.WithoutCancel(ctx), p)
	if errors.Is(err, store.ErrNotRunning) || errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrBusy) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ending turn %s: %w", f.TurnID, err)
	}
	return nil
}

// startTurn runs a model turn in the background, holding its lease; a
// cloud session's turn is left for a runner instead.
func (h *Host) startTurn(sess api.Session, hold store.Hold) {
	if sess.Mode == api.ModeCloud {
		if c := h.channels[sess.Channel]; c != nil && c.HasOnStart() {
			h.goStartCloud(sess, hold)
			return
		}
		h.readyForRunner(h.ctx, hold)
		return
	}
	h.goTurn(h.leases.track(h.ctx, h.log, h.logger, hold.Fence), sess, hold.Fence)
}

// goTurn runs a model turn in the background, under tctx from track.
func (h *Host) goTurn(tctx context.Context, sess api.Session, f store.Fence) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer guard(h.logger, "running a model turn", "session", sess.ID, "turn", f.TurnID)
		h.runTurn(tctx, sess, f)
	}()
}

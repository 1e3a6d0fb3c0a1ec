package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// session is a session with its turns, its stream and the lease of its
// running turn.
type session struct {
	api.Session // RunningTurn is the turn holding the session, if running
	// running is whether a turn holds the session (its id may be "").
	running bool
	// leased is false while no turn runs and while the running turn is
	// parked; leaseExpires is then meaningless.
	leased       bool
	leaseExpires time.Time
	// token is the lease token: moved on by every BeginTurn and ResumeTurn.
	token int64
	// home is the Lease.Home of the last turn begun or resumed, holder
	// its Lease.Holder.
	home, holder string
	// calls are its model calls' usage, as model_calls keeps them.
	calls  []store.UsageRow
	turns  map[string]*api.Turn
	events []api.Event
}

// held reports whether the session's running turn holds it at now: a
// lease that has not run out, or a parked turn.
func (s *session) held(now time.Time) bool {
	return s.running && (!s.leased || !lapsed(s.leaseExpires, now))
}

// holds reports whether turnID is the session's running turn.
func (s *session) holds(turnID string) bool { return s.running && s.RunningTurn == turnID }

// fenced reports whether f holds the session with a lease (not parked).
func (s *session) fenced(f store.Fence) bool {
	return s.holds(f.TurnID) && s.leased && s.token == f.Token
}

// take gives the session's lease to a turn, moving the token on.
func (s *session) take(f *store.Fence, lease store.Lease, now time.Time) string {
	s.leased, s.leaseExpires = true, now.Add(lease.TTL)
	s.token++
	prev := s.home
	s.home, s.holder = lease.Home, lease.Holder
	f.Token = s.token
	return prev
}

func copyTurn(t *api.Turn) api.Turn {
	c := *t
	c.EndedAt = clonePtr(t.EndedAt)
	return c
}

func copyEvent(e api.Event) api.Event {
	e.Data = slices.Clone(e.Data)
	return e
}

func (m *memStore) CreateSession(ctx context.Context, s api.Session) (api.Session, error) {
	if s.ID == "" {
		return api.Session{}, errors.New("creating session: empty id")
	}
	now := m.clock()
	if s.CreatedAt.IsZero() {
		s.CreatedAt = now
	}
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = s.CreatedAt
	}
	s.LastSeq, s.RunningTurn = 0, ""
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sessions[s.ID]; ok {
		return api.Session{}, fmt.Errorf("creating session %s: %w", s.ID, store.ErrExists)
	}
	stored := s
	stored.CreatedAt, stored.UpdatedAt = micro(s.CreatedAt), micro(s.UpdatedAt)
	m.sessions[s.ID] = &session{Session: stored, turns: map[string]*api.Turn{}}
	return s, nil
}

func (m *memStore) CountSessions(ctx context.Context, principal string, since time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.sessions {
		if s.Principal == principal && s.CreatedAt.UnixMicro() >= since.UnixMicro() {
			n++
		}
	}
	return n, nil
}

func (m *memStore) Session(ctx context.Context, id string) (api.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return api.Session{}, fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	}
	return s.Session, nil
}

func (m *memStore) ListSessions(ctx context.Context, p store.ListSessionsParams) ([]api.Session, string, error) {
	ts, cid, err := parseTimeCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	m.mu.Lock()
	var out []api.Session
	for _, s := range m.sessions {
		if (p.Principal == "" || s.Principal == p.Principal) && (p.Cursor == "" || cmpCursor(s.CreatedAt, s.ID, ts, cid) < 0) {
			out = append(out, s.Session)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b api.Session) int { // newest first
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	out, next := page(out, p.Page, func(s api.Session) string { return timeCursor(s.CreatedAt, s.ID) })
	return out, next, nil
}

// appendLocked numbers events and adds them to s's stream; the caller
// holds m.mu. It returns them as the caller gave them, numbered.
func appendLocked(s *session, now time.Time, events []api.Event) []api.Event {
	if len(events) == 0 {
		return nil
	}
	out := make([]api.Event, len(events))
	for i, e := range events {
		s.LastSeq++
		e.SessionID, e.Seq = s.ID, s.LastSeq
		if e.Time.IsZero() {
			e.Time = now
		}
		if len(e.Data) == 0 {
			e.Data = []byte("{}")
		}
		out[i] = e
		e = copyEvent(e)
		e.Time = micro(e.Time)
		s.events = append(s.events, e)
		if e.Kind == api.KindContextCompacted {
			s.CompactedSeq = e.Seq
		}
		if e.Kind == api.KindModelUsage {
			var u api.ModelUsage
			_ = json.Unmarshal(e.Data, &u)
			s.calls = append(s.calls, store.UsageRow{SessionID: s.ID, TurnID: e.TurnID, Principal: s.Principal, Channel: s.Channel,
				Model: u.Model, At: e.Time, Usage: u})
		}
	}
	s.UpdatedAt = now
	return out
}

func (m *memStore) Append(ctx context.Context, sessionID string, events ...api.Event) ([]api.Event, error) {
	if len(events) == 0 {
		return nil, nil
	}
	now := m.clock()
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[sessionID]
	if !ok {
		return nil, fmt.Errorf("appending events: session %s: %w", sessionID, store.ErrNotFound)
	}
	return appendLocked(s, now, events), nil
}

func (m *memStore) Events(ctx context.Context, sessionID string, after int64, limit int) ([]api.Event, error) {
	if limit <= 0 {
		limit = 1000
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[sessionID]
	if !ok || after >= int64(len(s.events)) {
		return nil, nil
	}
	from := max(after, 0) // seq n is s.events[n-1]
	to := min(from+int64(limit), int64(len(s.events)))
	var out []api.Event // nil when empty, as in SQL
	for _, e := range s.events[from:to] {
		out = append(out, copyEvent(e))
	}
	return out, nil
}

func (m *memStore) BeginTurn(ctx context.Context, p store.BeginTurnParams) (store.Hold, []api.Event, error) {
	t := p.Turn
	now := m.clock()
	if t.StartedAt.IsZero() {
		t.StartedAt = now
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[t.SessionID]
	if !ok {
		return store.Hold{}, nil, fmt.Errorf("session %s: %w", t.SessionID, store.ErrNotFound)
	}
	if s.held(now) {
		return store.Hold{}, nil, store.ErrBusy
	}
	if _, ok := s.turns[t.ID]; ok {
		// Not ErrExists, which is for sessions and approvals: the SQL
		// store fails on the turns table's key, with no sentinel.
		return store.Hold{}, nil, fmt.Errorf("beginning turn: turn %s of session %s exists", t.ID, t.SessionID)
	}
	s.running, s.RunningTurn = true, t.ID
	h := store.Hold{Fence: store.Fence{SessionID: t.SessionID, TurnID: t.ID}}
	h.PrevHome = s.take(&h.Fence, p.Lease, now)
	s.turns[t.ID] = &api.Turn{SessionID: t.SessionID, ID: t.ID, Kind: t.Kind, Status: api.TurnStatusRunning, StartedAt: micro(t.StartedAt)}
	return h, appendLocked(s, now, withTurn(p.Events, t.ID)), nil
}

func (m *memStore) RenewLease(ctx context.Context, f store.Fence, lease store.Lease) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	// A parked turn (no lease) stays parked: a renewal racing ParkTurn
	// must not give it a lease that would later expire.
	s, ok := m.sessions[f.SessionID]
	if !ok || !s.fenced(f) {
		return store.ErrLeaseLost
	}
	s.leaseExpires = now.Add(lease.TTL)
	return nil
}

func (m *memStore) AppendTurn(ctx context.Context, f store.Fence, events ...api.Event) ([]api.Event, error) {
	now := m.clock()
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[f.SessionID]
	if !ok || !s.fenced(f) {
		return nil, store.ErrLeaseLost
	}
	if len(events) == 0 {
		return nil, nil
	}
	return appendLocked(s, now, events), nil
}

func (m *memStore) EndTurn(ctx context.Context, p store.EndTurnParams) ([]api.Event, error) {
	now := m.clock()
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[p.SessionID]
	if !ok {
		return nil, store.ErrNotRunning
	}
	t, ok := s.turns[p.TurnID]
	if !ok || t.Status != api.TurnStatusRunning {
		return nil, store.ErrNotRunning
	}
	holds := s.holds(p.TurnID)
	switch {
	case !p.Expired && p.Token != 0 && (!holds || s.token != p.Token):
		return nil, store.ErrLeaseLost
	case !p.Expired || !holds:
	case p.Token != 0 && s.token != p.Token:
		return nil, store.ErrLeaseLost // resumed since
	case !s.leased:
		return nil, store.ErrNotRunning // parked
	case !lapsed(s.leaseExpires, now):
		return nil, store.ErrBusy
	}
	t.Status, t.Reason, t.EndedAt = p.Status, p.Reason, &now
	if holds {
		s.running, s.RunningTurn, s.leased = false, "", false
	}
	return appendLocked(s, now, withTurn(p.Events, p.TurnID)), nil
}

func (m *memStore) ExpiredTurns(ctx context.Context, now time.Time) ([]api.Turn, error) {
	m.mu.Lock()
	var out []api.Turn
	for _, s := range m.sessions {
		for _, t := range s.turns {
			// A running turn is expired once it no longer holds its
			// session (another turn took it) or its lease has run out.
			if t.Status == api.TurnStatusRunning && (!s.holds(t.ID) || s.leased && lapsed(s.leaseExpires, now)) {
				out = append(out, copyTurn(t))
			}
		}
	}
	m.mu.Unlock()
	sortTurns(out)
	return out, nil
}

func (m *memStore) Turn(ctx context.Context, sessionID, turnID string) (api.Turn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[sessionID]; ok {
		if t, ok := s.turns[turnID]; ok {
			return copyTurn(t), nil
		}
	}
	return api.Turn{}, fmt.Errorf("turn %s: %w", turnID, store.ErrNotFound)
}

func (m *memStore) ParkTurn(ctx context.Context, f store.Fence) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[f.SessionID]
	if !ok || !s.fenced(f) {
		return store.ErrLeaseLost
	}
	s.leased = false
	return nil
}

func (m *memStore) ResumeTurn(ctx context.Context, sessionID, turnID string, lease store.Lease) (store.Hold, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[sessionID]
	if !ok || !s.holds(turnID) || s.leased {
		return store.Hold{}, store.ErrNotRunning
	}
	h := store.Hold{Fence: store.Fence{SessionID: sessionID, TurnID: turnID}}
	h.PrevHome = s.take(&h.Fence, lease, now)
	return h, nil
}

func (m *memStore) TakeOverTurn(ctx context.Context, sessionID, turnID string, lease store.Lease) (store.Hold, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[sessionID]
	if !ok {
		return store.Hold{}, store.ErrNotRunning
	}
	t, ok := s.turns[turnID]
	switch {
	case !ok || t.Status != api.TurnStatusRunning:
		return store.Hold{}, store.ErrNotRunning
	case !s.holds(turnID):
		return store.Hold{}, store.ErrLeaseLost
	case !s.leased:
		return store.Hold{}, store.ErrNotRunning // parked
	case !lapsed(s.leaseExpires, now):
		return store.Hold{}, store.ErrBusy
	}
	h := store.Hold{Fence: store.Fence{SessionID: sessionID, TurnID: turnID}, PrevHolder: s.holder}
	h.PrevHome = s.take(&h.Fence, lease, now)
	return h, nil
}

func (m *memStore) ParkedTurns(ctx context.Context) ([]api.Turn, error) {
	m.mu.Lock()
	var out []api.Turn
	for _, s := range m.sessions {
		if s.running && !s.leased {
			out = append(out, copyTurn(s.turns[s.RunningTurn]))
		}
	}
	m.mu.Unlock()
	sortTurns(out)
	return out, nil
}

// sortTurns puts turns in a stable order (the SQL store promises none).
func sortTurns(ts []api.Turn) {
	slices.SortFunc(ts, func(a, b api.Turn) int {
		return cmp.Or(cmp.Compare(a.SessionID, b.SessionID), cmp.Compare(a.ID, b.ID))
	})
}

func (m *memStore) CancelTurn(ctx context.Context, p store.CancelTurnParams) ([]api.Approval, []api.Event, error) {
	now := m.clock()
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[p.SessionID]
	if !ok || !s.holds(p.TurnID) || (s.leased && !p.Held) {
		return nil, nil, store.ErrNotRunning
	}
	t, ok := s.turns[p.TurnID]
	if !ok || t.Status != api.TurnStatusRunning {
		return nil, nil, store.ErrNotRunning
	}
	var open []*approval
	for _, a := range m.approvals {
		if a.SessionID == p.SessionID && a.TurnID == p.TurnID && a.outcome == nil && !a.hasExecutor {
			open = append(open, a)
		}
	}
	slices.SortFunc(open, func(a, b *approval) int {
		return cmp.Or(a.RequestedAt.Compare(b.RequestedAt), cmp.Compare(a.CallID, b.CallID))
	})
	outcomes := make([][]byte, len(open))
	for i, a := range open {
		o := p.Outcome
		o.ToolName, o.CallID = a.Tool, a.CallID
		b, err := json.Marshal(o)
		if err != nil {
			return nil, nil, fmt.Errorf("cancelling turn: encoding the outcome of call %s: %w", a.CallID, err)
		}
		outcomes[i] = b
	}
	var closed []api.Approval // nil when empty, as in SQL
	for i, a := range open {
		if a.Status == api.ApprovalPending {
			a.Status, a.DecidedAt, a.Reason = api.ApprovalCancelled, clonePtr(&now), p.CallReason
		}
		a.outcome = outcomes[i]
		r, err := a.record()
		if err != nil {
			return nil, nil, fmt.Errorf("cancelling turn: %w", err)
		}
		closed = append(closed, r)
	}
	t.Status, t.Reason, t.EndedAt = api.TurnStatusFailed, p.Reason, &now
	s.running, s.RunningTurn, s.leased = false, "", false
	var evs []api.Event
	if p.Events != nil {
		evs = p.Events(closed)
	}
	return closed, appendLocked(s, now, withTurn(evs, p.TurnID)), nil
}

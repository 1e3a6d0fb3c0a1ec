package memory

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// approval is a parked call with its executor's lease. The outcome is kept
// as the JSON the SQL store keeps, so that both read back the same.
type approval struct {
	api.Approval // Outcome is nil; see outcome
	outcome      []byte
	// executor holds an approved call until executorExpires; hasExecutor
	// is false until a call is approved.
	executor        string
	hasExecutor     bool
	executorExpires time.Time
	// votes are the approvals of a call that needs several, oldest first.
	votes []vote
}

// vote is one voter's approval.
type vote struct {
	voter string
	api.ApprovalVote
}

// record returns the approval as callers see it: a copy, its outcome
// decoded.
func (a *approval) record() (api.Approval, error) {
	r := a.Approval
	r.Input = slices.Clone(a.Input)
	r.OriginalInput = slices.Clone(a.OriginalInput)
	r.DecidedAt = clonePtr(a.DecidedAt)
	r.Approvals = nil
	for _, v := range a.votes {
		r.Approvals = append(r.Approvals, v.ApprovalVote)
	}
	if a.outcome != nil {
		var o api.Outcome
		if err := json.Unmarshal(a.outcome, &o); err != nil {
			return api.Approval{}, fmt.Errorf("decoding the outcome of call %s: %w", a.CallID, err)
		}
		r.Outcome = &o
	}
	return r, nil
}

// records returns the approvals that pass keep, oldest first.
func (m *memStore) records(keep func(*approval) bool) ([]api.Approval, error) {
	var out []api.Approval
	for _, a := range m.approvals {
		if !keep(a) {
			continue
		}
		r, err := a.record()
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b api.Approval) int {
		return cmp.Or(a.RequestedAt.Compare(b.RequestedAt), cmp.Compare(a.CallID, b.CallID))
	})
	return out, nil
}

func (m *memStore) CreateApproval(ctx context.Context, a api.Approval, events ...api.Event) ([]api.Event, error) {
	now := m.clock()
	if a.RequestedAt.IsZero() {
		a.RequestedAt = now
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.approvals[a.CallID]; ok {
		return nil, fmt.Errorf("parking call: approval %s: %w", a.CallID, store.ErrExists)
	}
	var s *session
	if a.SessionID != "" && len(events) > 0 {
		var ok bool
		if s, ok = m.sessions[a.SessionID]; !ok {
			return nil, fmt.Errorf("parking call: session %s: %w", a.SessionID, store.ErrNotFound)
		}
	}
	m.approvals[a.CallID] = &approval{Approval: api.Approval{
		CallID: a.CallID, SessionID: a.SessionID, TurnID: a.TurnID, ModelCallID: a.ModelCallID, Tool: a.Tool,
		Input: slices.Clone(a.Input), RequestedBy: a.RequestedBy, RequestedAt: micro(a.RequestedAt), ExpiresAt: micro(a.ExpiresAt),
		Status: api.ApprovalPending,
	}}
	if s == nil {
		return nil, nil
	}
	return appendLocked(s, now, withTurn(events, a.TurnID)), nil
}

func (m *memStore) Approval(ctx context.Context, callID string) (api.Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.approvalLocked(callID)
}

func (m *memStore) approvalLocked(callID string) (api.Approval, error) {
	a, ok := m.approvals[callID]
	if !ok {
		return api.Approval{}, fmt.Errorf("approval %s: %w", callID, store.ErrNotFound)
	}
	r, err := a.record()
	if err != nil {
		return api.Approval{}, fmt.Errorf("reading approval: %w", err)
	}
	return r, nil
}

func (m *memStore) ListApprovals(ctx context.Context, p store.ListApprovalsParams) ([]api.Approval, string, error) {
	ts, cid, err := parseTimeCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	m.mu.Lock()
	out, err := m.records(func(a *approval) bool {
		return (p.Status == "" || a.Status == p.Status) && (p.RequestedBy == "" || a.RequestedBy == p.RequestedBy) && (p.Cursor == "" || cmpCursor(a.RequestedAt, a.CallID, ts, cid) > 0)
	})
	m.mu.Unlock()
	if err != nil {
		return nil, "", fmt.Errorf("listing approvals: %w", err)
	}
	out, next := page(out, p.Page, func(a api.Approval) string { return timeCursor(a.RequestedAt, a.CallID) })
	return out, next, nil
}

func (m *memStore) CountPending(ctx context.Context, requestedBy string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, a := range m.approvals {
		if a.RequestedBy == requestedBy && a.Status == api.ApprovalPending {
			n++
		}
	}
	return n, nil
}

func (m *memStore) ResolveApproval(ctx context.Context, p store.ResolveApprovalParams) (api.Approval, []api.Event, error) {
	now := m.clock()
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[p.CallID]
	if !ok {
		return api.Approval{}, nil, fmt.Errorf("approval %s: %w", p.CallID, store.ErrNotFound)
	}
	if p.Quorum > 1 || p.Input != nil || p.EventsFor != nil {
		return m.voteLocked(a, now, p)
	}
	live := a.Status == api.ApprovalPending && a.ExpiresAt.UnixMicro() > now.UnixMicro()
	var audit []api.AuditEntry
	if live {
		if err := m.callSessionLocked(a, p.Events); err != nil {
			return api.Approval{}, nil, fmt.Errorf("resolving approval: %w", err)
		}
		var err error
		if audit, err = m.auditLocked(p.Audit); err != nil {
			return api.Approval{}, nil, fmt.Errorf("resolving approval: %w", err)
		}
		m.audit = append(m.audit, audit...)
		a.Status, a.DecidedBy, a.DecidedAt, a.Reason = api.ApprovalDenied, p.By, &now, p.Reason
		a.executor, a.hasExecutor = "", false
		if p.Approved {
			a.Status = api.ApprovalApproved
			a.executor, a.hasExecutor, a.executorExpires = p.Executor.Holder, p.Executor.Holder != "", now.Add(p.Executor.TTL)
		}
	}
	r, err := m.approvalLocked(p.CallID)
	switch {
	case err != nil:
		return api.Approval{}, nil, err
	case live:
		return r, m.appendToCallLocked(a, now, p.Events), nil
	case r.Status == api.ApprovalPending || r.Status == api.ApprovalExpired:
		return r, nil, store.ErrExpired // expired, or pending past its expiry
	default:
		return r, nil, store.ErrAlreadyResolved
	}
}

func (m *memStore) ExpireApprovals(ctx context.Context, now time.Time) ([]api.Approval, error) {
	decided := micro(now)
	m.mu.Lock()
	defer m.mu.Unlock()
	due := map[*approval]bool{}
	for _, a := range m.approvals {
		if a.Status == api.ApprovalPending && a.ExpiresAt.UnixMicro() <= now.UnixMicro() {
			a.Status, a.DecidedAt = api.ApprovalExpired, clonePtr(&decided)
			due[a] = true
		}
	}
	out, err := m.records(func(a *approval) bool { return due[a] })
	if err != nil {
		return nil, fmt.Errorf("expiring approvals: %w", err)
	}
	return out, nil
}

func (m *memStore) ApprovalsToRun(ctx context.Context, sessionID, turnID string) ([]api.Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out, err := m.records(func(a *approval) bool {
		return a.SessionID == sessionID && a.TurnID == turnID && a.Status == api.ApprovalApproved && a.outcome == nil && !a.hasExecutor
	})
	if err != nil {
		return nil, fmt.Errorf("listing approved calls to run: %w", err)
	}
	return out, nil
}

func (m *memStore) ClaimApproval(ctx context.Context, callID string, executor store.Lease) (bool, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[callID]
	if !ok || a.Status != api.ApprovalApproved || a.outcome != nil || a.hasExecutor {
		return false, nil
	}
	a.executor, a.hasExecutor, a.executorExpires = executor.Holder, true, now.Add(executor.TTL)
	return true, nil
}

func (m *memStore) RenewExecutor(ctx context.Context, callID string, executor store.Lease) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, ok := m.approvals[callID]; ok && executor.Holder != "" && a.executor == executor.Holder && a.outcome == nil {
		a.hasExecutor, a.executorExpires = true, now.Add(executor.TTL)
	}
	return nil
}

func (m *memStore) OrphanedApprovals(ctx context.Context, now time.Time) ([]api.Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out, err := m.records(func(a *approval) bool {
		return a.Status == api.ApprovalApproved && a.outcome == nil && a.hasExecutor && lapsed(a.executorExpires, now)
	})
	if err != nil {
		return nil, fmt.Errorf("listing interrupted approvals: %w", err)
	}
	return out, nil
}

func (m *memStore) FinishApproval(ctx context.Context, callID string, outcome api.Outcome, events ...api.Event) (bool, []api.Event, error) {
	b, err := json.Marshal(outcome)
	if err != nil {
		return false, nil, fmt.Errorf("encoding the outcome of call %s: %w", callID, err)
	}
	now := m.clock()
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[callID]
	if !ok || a.outcome != nil {
		return false, nil, nil
	}
	if err := m.callSessionLocked(a, events); err != nil {
		return false, nil, fmt.Errorf("recording a call's outcome: %w", err)
	}
	a.outcome = b
	return true, m.appendToCallLocked(a, now, events), nil
}

// callSessionLocked checks that events for a call have a session to go
// to: ErrNotFound if the call's session is gone.
func (m *memStore) callSessionLocked(a *approval, events []api.Event) error {
	if _, ok := m.sessions[a.SessionID]; a.SessionID != "" && len(events) > 0 && !ok {
		return fmt.Errorf("session %s: %w", a.SessionID, store.ErrNotFound)
	}
	return nil
}

// appendToCallLocked appends events to a call's session, if it has one,
// in the call's turn.
func (m *memStore) appendToCallLocked(a *approval, now time.Time, events []api.Event) []api.Event {
	s, ok := m.sessions[a.SessionID]
	if a.SessionID == "" || !ok {
		return nil
	}
	return appendLocked(s, now, withTurn(events, a.TurnID))
}

// voteLocked is ResolveApproval with a quorum, an edit or events made from
// the decision (the SQL store's voteApproval).
func (m *memStore) voteLocked(a *approval, now time.Time, p store.ResolveApprovalParams) (api.Approval, []api.Event, error) {
	switch {
	case a.Status == api.ApprovalExpired || a.Status == api.ApprovalPending && a.ExpiresAt.UnixMicro() <= now.UnixMicro():
		r, _ := a.record()
		return r, nil, store.ErrExpired
	case a.Status != api.ApprovalPending:
		r, _ := a.record()
		return r, nil, store.ErrAlreadyResolved
	}
	voter := cmp.Or(p.Voter, p.By)
	if p.Approved {
		edit := p.Input != nil && !sameJSON(p.Input, a.Input)
		if !edit && slices.ContainsFunc(a.votes, func(v vote) bool { return v.voter == voter }) {
			r, _ := a.record()
			return r, nil, store.ErrAlreadyVoted
		}
		if edit {
			if a.OriginalInput == nil {
				a.OriginalInput = a.Input
			}
			a.Input, a.votes = slices.Clone(p.Input), nil
		}
		a.votes = append(a.votes, vote{voter: voter, ApprovalVote: api.ApprovalVote{By: p.By, At: micro(now), Edited: edit}})
	}
	decided := !p.Approved || len(a.votes) >= max(p.Quorum, 1)
	audit, err := m.auditLocked(store.VoteAudit(p.Audit, decided))
	if err != nil {
		return api.Approval{}, nil, fmt.Errorf("resolving approval: %w", err)
	}
	m.audit = append(m.audit, audit...)
	if decided {
		at := micro(now)
		a.Status, a.DecidedBy, a.DecidedAt, a.Reason = api.ApprovalDenied, p.By, &at, p.Reason
		if p.Approved {
			a.Status = api.ApprovalApproved
			a.executor, a.hasExecutor, a.executorExpires = p.Executor.Holder, p.Executor.Holder != "", now.Add(p.Executor.TTL)
		}
	}
	r, err := a.record()
	if err != nil {
		return api.Approval{}, nil, err
	}
	events := p.Events
	if p.EventsFor != nil {
		events = p.EventsFor(r)
	} else if !decided {
		events = nil
	}
	return r, m.appendToCallLocked(a, now, events), nil
}

// sameJSON reports whether a and b are the same JSON text once compacted.
func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

package host

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentsdk/agentsdk/internal/agenttool"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// Errors of the session API, checked with errors.Is.
var (
	// ErrSessionNotFound: no session has that id.
	ErrSessionNotFound = errors.New("session not found")
	// ErrSessionBusy: another turn runs in the session; try again when it
	// has ended.
	ErrSessionBusy = errors.New("session_busy: another turn is running in this session")
	// ErrNoRunningTurn: Cancel found nothing to cancel.
	ErrNoRunningTurn = errors.New("no turn is running in this session")
	// ErrEmptyMessage: a message with no text.
	ErrEmptyMessage = errors.New("the message is empty")
	// ErrInvalidChannel: a channel name that is not letters, digits, '_' or '-'.
	ErrInvalidChannel = errors.New("invalid channel: use 1 to 64 letters, digits, '_' or '-'")
)

// Event kinds on a session's stream.
const (
	EventSessionCreated   = "session.created"
	EventTurnStarted      = "turn.started"
	EventMessageDelta     = "message.delta"
	EventMessage          = "message"
	EventActionsRequested = "actions.requested"
	EventActionResult     = "action.result"
	EventTurnCompleted    = "turn.completed"
	EventTurnFailed       = "turn.failed"
)

// newID returns prefix_<16 random lower-case characters>.
func newID(prefix string) string {
	return prefix + "_" + strings.ToLower(rand.Text()[:16])
}

func data(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return b
}

// SessionOptions describe a new session.
type SessionOptions struct {
	Channel   string // default "http"
	Principal string // who opened it
	Message   string // if set, the first turn starts with it
}

// WorkspaceDir returns a session's workspace directory.
func (h *Host) WorkspaceDir(sessionID string) string {
	return filepath.Join(h.stateRoot, "sessions", sessionID, "workspace")
}

func (h *Host) sessions() (store.Store, error) {
	if h.store == nil {
		return nil, ErrNoSessions
	}
	return h.store, nil
}

// CreateSession opens a session, makes its workspace, and starts a turn
// with opts.Message if there is one. It returns the session and the turn id
// ("" without a message).
func (h *Host) CreateSession(ctx context.Context, opts SessionOptions) (store.Session, string, error) {
	st, err := h.sessions()
	if err != nil {
		return store.Session{}, "", err
	}
	if opts.Channel == "" {
		opts.Channel = "http"
	}
	if err := tool.CheckName(opts.Channel); err != nil {
		return store.Session{}, "", fmt.Errorf("%w: %q", ErrInvalidChannel, opts.Channel)
	}
	if opts.Message != "" && strings.TrimSpace(opts.Message) == "" {
		return store.Session{}, "", ErrEmptyMessage
	}
	sess := store.Session{ID: newID("sess"), Channel: opts.Channel, Mode: "local", Principal: opts.Principal}
	ws := h.WorkspaceDir(sess.ID)
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return store.Session{}, "", fmt.Errorf("creating session workspace: %w", err)
	}
	if err := agenttool.Materialize(ws, h.tools); err != nil {
		return store.Session{}, "", fmt.Errorf("creating session workspace: %w", err)
	}
	sess, err = st.CreateSession(ctx, sess)
	if err != nil {
		return store.Session{}, "", err
	}
	evs, err := st.Append(ctx, sess.ID, store.Event{Kind: EventSessionCreated, Data: data(map[string]string{
		"channel": sess.Channel, "mode": sess.Mode, "principal": sess.Principal,
	})})
	if err != nil {
		return store.Session{}, "", err
	}
	h.hub.publish(sess.ID, evs)
	if opts.Message == "" {
		return sess, "", nil
	}
	turnID, err := h.Send(ctx, sess.ID, opts.Message)
	return sess, turnID, err
}

// Session returns a session.
func (h *Host) Session(ctx context.Context, id string) (store.Session, error) {
	st, err := h.sessions()
	if err != nil {
		return store.Session{}, err
	}
	sess, err := st.Session(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, fmt.Errorf("%w: %s", ErrSessionNotFound, id)
	}
	return sess, err
}

// Sessions lists sessions, newest first.
func (h *Host) Sessions(ctx context.Context, p store.Page) ([]store.Session, string, error) {
	st, err := h.sessions()
	if err != nil {
		return nil, "", err
	}
	return st.Sessions(ctx, p)
}

// Events returns up to limit stored events of a session after seq after.
func (h *Host) Events(ctx context.Context, sessionID string, after int64, limit int) ([]store.Event, error) {
	st, err := h.sessions()
	if err != nil {
		return nil, err
	}
	return st.Events(ctx, sessionID, after, limit)
}

// Subscribe delivers a session's events as they are stored; see
// [Subscription]. Subscribe first, then read the stored events, and nothing
// is missed.
func (h *Host) Subscribe(sessionID string) *Subscription {
	return h.hub.subscribe(sessionID)
}

// eachEvent calls fn for every stored event of a session, in order, reading
// the stream a page at a time.
func (h *Host) eachEvent(ctx context.Context, sessionID string, fn func(store.Event)) error {
	for after := int64(0); ; {
		evs, err := h.store.Events(ctx, sessionID, after, 1000)
		if err != nil {
			return err
		}
		for _, e := range evs {
			fn(e)
		}
		if len(evs) < 1000 {
			return nil
		}
		after = evs[len(evs)-1].Seq
	}
}

// append stores events and tells subscribers.
func (h *Host) append(ctx context.Context, sessionID, turnID string, events ...store.Event) error {
	for i := range events {
		events[i].TurnID = turnID
	}
	stored, err := h.store.Append(context.WithoutCancel(ctx), sessionID, events...)
	if err != nil {
		return err
	}
	h.hub.publish(sessionID, stored)
	return nil
}

// Send starts a model turn with a user message. It returns the turn's id
// at once; the turn runs in the background, its progress on the session's
// event stream. It fails with ErrSessionBusy while another turn runs.
func (h *Host) Send(ctx context.Context, sessionID, message string) (string, error) {
	st, err := h.sessions()
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(message) == "" {
		return "", ErrEmptyMessage
	}
	sess, err := h.Session(ctx, sessionID)
	if err != nil {
		return "", err
	}
	turnID := newID("turn")
	begun, err := st.BeginTurn(ctx, store.Turn{SessionID: sessionID, ID: turnID, Kind: "model"}, h.lease(),
		store.Event{Kind: EventTurnStarted, Data: data(map[string]string{"kind": "model"})},
		store.Event{Kind: EventMessage, Data: data(map[string]string{"role": "user", "text": message})})
	if err != nil {
		return "", h.turnError(err, sessionID)
	}
	h.hub.publish(sessionID, begun)
	tctx := h.track(sessionID, turnID)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.runTurn(tctx, sess, turnID)
	}()
	return turnID, nil
}

func (h *Host) turnError(err error, sessionID string) error {
	switch {
	case errors.Is(err, store.ErrBusy):
		return ErrSessionBusy
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %s", ErrSessionNotFound, sessionID)
	}
	return err
}

// Cancel cancels the session's running turn, which then ends with
// turn.failed ("cancelled").
func (h *Host) Cancel(ctx context.Context, sessionID string) error {
	if _, err := h.Session(ctx, sessionID); err != nil {
		return err
	}
	h.mu.Lock()
	rt := h.running[sessionID]
	h.mu.Unlock()
	if rt == nil {
		return ErrNoRunningTurn
	}
	rt.cancel(errCancelled)
	return nil
}

// Package store keeps an agent's durable state: sessions, their turns and
// their event streams. [Store] is one interface; [New] implements it in
// portable SQL over database/sql, and the drivers (store/sqlite, and
// PostgreSQL later) open a database for it. The conformance suite in
// store/storetest runs against every driver.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Errors callers branch on with errors.Is.
var (
	// ErrNotFound: no such session or turn.
	ErrNotFound = errors.New("not found")
	// ErrBusy: the session already has a running turn.
	ErrBusy = errors.New("session is busy: another turn is running")
	// ErrNotRunning: the turn has already ended.
	ErrNotRunning = errors.New("turn is not running")
	// ErrExists: a session with that id exists.
	ErrExists = errors.New("already exists")
)

// Session is a conversation on a channel, with its own workspace.
type Session struct {
	ID        string    `json:"id"`
	Channel   string    `json:"channel"`
	Mode      string    `json:"mode"` // "local" or "cloud"
	Principal string    `json:"principal"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// LastSeq is the sequence number of the session's newest event.
	LastSeq int64 `json:"lastSeq"`
	// RunningTurn is the id of the running turn, or "".
	RunningTurn string `json:"runningTurn,omitempty"`
}

// Turn statuses.
const (
	TurnRunning   = "running"
	TurnCompleted = "completed"
	TurnFailed    = "failed"
)

// Turn is one model run or one direct call in a session.
type Turn struct {
	SessionID string     `json:"sessionId"`
	ID        string     `json:"id"`
	Kind      string     `json:"kind"` // "model" or "call"
	Status    string     `json:"status"`
	Reason    string     `json:"reason,omitempty"`
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
}

// Event is one entry of a session's stream. Seq numbers a session's events
// from 1 without gaps; the store assigns it when the event is appended.
type Event struct {
	SessionID string          `json:"sessionId"`
	Seq       int64           `json:"seq"`
	TurnID    string          `json:"turnId,omitempty"`
	Kind      string          `json:"kind"`
	Data      json.RawMessage `json:"data"`
	Time      time.Time       `json:"time"`
}

// Lease is a running turn's hold on its session. The holder renews it while
// the turn runs; a lease that expires belongs to a host that died.
type Lease struct {
	Holder string
	TTL    time.Duration
}

// Page asks for part of a list: at most Limit items after Cursor.
type Page struct {
	Limit  int
	Cursor string // from the previous page's next cursor; "" for the first
}

// Store is the durable state of one agent.
type Store interface {
	// CreateSession stores a new session; its CreatedAt and UpdatedAt are
	// set if zero.
	CreateSession(ctx context.Context, s Session) (Session, error)
	// Session returns a session.
	Session(ctx context.Context, id string) (Session, error)
	// Sessions lists sessions, newest first, and the cursor of the next
	// page ("" after the last).
	Sessions(ctx context.Context, p Page) ([]Session, string, error)

	// BeginTurn records a running turn and makes it the session's one
	// running turn, appending events (such as turn.started) in the same
	// transaction. It fails with ErrBusy while another turn's lease holds.
	BeginTurn(ctx context.Context, t Turn, lease Lease, events ...Event) ([]Event, error)
	// RenewLease extends a running turn's lease; ErrNotRunning if the turn
	// no longer holds the session.
	RenewLease(ctx context.Context, sessionID, turnID string, lease Lease) error
	// EndTurn ends a running turn with a status and reason, releases the
	// session and appends events (such as turn.completed), atomically. It
	// fails with ErrNotRunning if the turn has already ended.
	EndTurn(ctx context.Context, sessionID, turnID, status, reason string, events ...Event) ([]Event, error)
	// ExpiredTurns lists running turns whose lease expired before now.
	ExpiredTurns(ctx context.Context, now time.Time) ([]Turn, error)
	// Turn returns a turn.
	Turn(ctx context.Context, sessionID, turnID string) (Turn, error)

	// Append adds events to a session's stream and returns them numbered.
	Append(ctx context.Context, sessionID string, events ...Event) ([]Event, error)
	// Events returns up to limit events with Seq > after, in order.
	Events(ctx context.Context, sessionID string, after int64, limit int) ([]Event, error)

	// Approvals keeps calls parked for a person's decision.
	Approvals
	// KV keeps the host's key-value service.
	KV
	// Files keeps the metadata of the host's durable files.
	Files

	// Close releases the database.
	Close() error
}

// Package store keeps an agent's durable state: sessions, their turns and
// event streams, parked approvals, KV entries, file metadata and the audit
// log ([Audit]). [Store] is one interface; [New] implements it in
// portable SQL over database/sql (the drivers, store/sqlite and
// store/postgres, open a database for it and bring their own
// migrations), and store/memory keeps it in memory for
// tests and embedding. The conformance suite in store/storetest runs
// against every implementation.
//
// The records are the protocol's own types (package api): what the store
// keeps is what the HTTP API shows.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// Errors callers branch on with errors.Is. The host maps them to the
// API's errors ([api.Error]) in one place.
var (
	// ErrNotFound: no such session, turn, approval, key or file.
	ErrNotFound = errors.New("not found")
	// ErrBusy: the session already has a running turn.
	ErrBusy = errors.New("session is busy: another turn is running")
	// ErrNotRunning: the turn has already ended (or, for ResumeTurn, is
	// not parked).
	ErrNotRunning = errors.New("turn is not running")
	// ErrExists: a session or approval with that id exists.
	ErrExists = errors.New("already exists")
	// ErrAlreadyResolved: the approval was decided before; the error comes
	// with the approval as it stands.
	ErrAlreadyResolved = errors.New("already resolved")
	// ErrAlreadyVoted: the voter approved the call already, and its quorum
	// needs another's approval.
	ErrAlreadyVoted = errors.New("already approved by this voter")
	// ErrExpired: the approval expired before anyone decided.
	ErrExpired = errors.New("expired")
	// ErrConflict: a compare-and-set found another version, or a file
	// was replaced or deleted while it was read ([Blobs.OpenBlob]).
	ErrConflict = errors.New("version conflict")
	// ErrBadCursor: a cursor the store did not make.
	ErrBadCursor = errors.New("invalid cursor")
	// ErrLeaseLost: a turn's write carried a fence that no longer holds
	// its session: another host took the session over (the turn's lease
	// had expired), or the turn ended or parked. The write did nothing.
	ErrLeaseLost = errors.New("lost the session's lease")
	// ErrSchemaTooNew: the database's schema is at a version this binary
	// does not know: a newer binary migrated it. The store refuses to open
	// rather than write to tables it does not understand.
	ErrSchemaTooNew = errors.New("the store's schema is newer than this binary")
)

// Lease is a running turn's hold on its session (or an approved call's
// executor's hold on it). The holder renews it while it runs; a lease that
// expires belongs to a host that died.
type Lease struct {
	Holder string
	TTL    time.Duration
	// Home names where the holder keeps the session's workspace (a host's
	// machine and state directory): a turn begun with another Home than
	// the session's last one learns it from [Hold.PrevHome].
	Home string
}

// Fence is a running turn's claim on its session, carried by every write
// the turn makes: the store refuses it with [ErrLeaseLost] once the
// session's lease token has moved on (another host took the session after
// the lease expired), so a paused or partitioned host cannot write after
// losing its lease.
type Fence struct {
	SessionID string
	TurnID    string
	Token     int64
}

// Hold is what BeginTurn, ResumeTurn and TakeOverTurn give a turn: its
// fence, and the Home of the session's previous holder ("" if none, or
// unknown).
type Hold struct {
	Fence
	PrevHome string
	// PrevHolder is the Holder of the lease TakeOverTurn took over (the
	// holder that died); "" from BeginTurn and ResumeTurn.
	PrevHolder string
}

// Page asks for part of a list: at most Limit items after Cursor.
type Page struct {
	Limit  int
	Cursor string // from the previous page's next cursor; "" for the first
}

// ListParams select the entries of a namespace whose names start with
// Prefix, in byte order, a page at a time.
type ListParams struct {
	Namespace string
	Prefix    string
	Page
}

// BeginTurnParams start a turn.
type BeginTurnParams struct {
	Turn  api.Turn // SessionID, ID and Kind; StartedAt is set if zero
	Lease Lease
	// Events are appended in the same transaction (turn.started, …).
	Events []api.Event
}

// EndTurnParams end a running turn.
type EndTurnParams struct {
	SessionID string
	TurnID    string
	// Token is the turn's fence: the end fails with ErrLeaseLost if the
	// session's lease token moved on. 0 skips the check (with Expired).
	Token int64
	// Expired ends the turn only if its lease has run out (its host died)
	// or it no longer holds its session: ErrBusy while the lease is live,
	// ErrNotRunning if the turn is parked. What a recovery uses.
	Expired bool
	Status  api.TurnStatus // completed or failed
	Reason  string
	// Events are appended in the same transaction (turn.completed, …).
	Events []api.Event
}

// CancelTurnParams end a parked turn that is cancelled.
type CancelTurnParams struct {
	SessionID string
	TurnID    string
	// Reason is the turn's reason; CallReason is recorded on each pending
	// call it closes.
	Reason     string
	CallReason string
	// Outcome is recorded for each call it closes, with the call's
	// ToolName and CallID.
	Outcome api.Outcome
	// Held also ends the turn while a lease holds it (a cloud turn on its
	// runner): the holder's next write finds its fence gone.
	Held bool
	// Events returns what to append in the same transaction, given the
	// calls closed as they stand after it (their results, the turn's end).
	// It is called inside the transaction, so it must not use the store.
	Events func(closed []api.Approval) []api.Event
}

// ListApprovalsParams select approvals.
type ListApprovalsParams struct {
	Status api.ApprovalStatus // "" for all
	// RequestedBy, if set, selects the approvals of that principal's
	// calls only.
	RequestedBy string
	Page
}

// ListSessionsParams select sessions.
type ListSessionsParams struct {
	// Principal, if set, selects the sessions that principal opened only.
	Principal string
	Page
}

// ResolveApprovalParams decide a pending approval.
type ResolveApprovalParams struct {
	CallID   string
	Approved bool
	By       string // the approver's principal
	Reason   string
	// Executor holds an approved call until its outcome is recorded or the
	// lease runs out. Without a Holder the approved call is left unclaimed,
	// for whoever takes its session's lease (ClaimApproval).
	Executor Lease
	// Events are appended to the call's session (if it has one) in the
	// same transaction, when this decision is the one that counts: the
	// decision is never stored without its action.approval_resolved.
	Events []api.Event
	// Audit is appended to the audit log in the same transaction, when
	// this decision is the one that counts ([Audit.AppendAudit]).
	Audit AppendAuditParams

	// Quorum, above 1, makes an approval one of several: it is recorded
	// (once per Voter: ErrAlreadyVoted for a second) and the call is
	// approved only by the Quorum-th distinct voter's, under the
	// approval's row lock, so that it is approved once whichever hosts the
	// approvals reach. A denial decides at once.
	Quorum int
	// Voter is whom the approval counts for (the authenticated principal);
	// "" is By.
	Voter string
	// Input, with an approval, replaces the call's input (an approver's
	// edit): the input asked for is kept as OriginalInput, and the
	// approvals recorded before it are dropped (they approved another
	// input). Nil, or the same JSON: no edit.
	Input json.RawMessage
	// EventsFor, if set, gives the events to append instead of Events,
	// from the approval as it stands after this decision: still pending
	// with its Approvals when the quorum is not reached (then they are
	// appended too), decided otherwise. It is called inside the
	// transaction, so it must not use the store.
	EventsFor func(a api.Approval) []api.Event
}

// KVSetParams write a KV entry.
type KVSetParams struct {
	Namespace string
	Key       string
	Value     []byte
	// TTL, if positive, makes the entry expire after it.
	TTL time.Duration
	// IfVersion, if set, makes the write conditional: the key's current
	// version must be *IfVersion (0: the key is absent or expired), else
	// ErrConflict.
	IfVersion *int64
}

// Store is the durable state of one agent.
type Store interface {
	Sessions
	Approvals
	KV
	Files
	Idempotency
	Usage
	Keys
	Audit
	// Close releases the database.
	Close() error
}

// Sessions is the part of a Store that keeps sessions, turns and events.
type Sessions interface {
	// CreateSession stores a new session; its CreatedAt and UpdatedAt are
	// set if zero. ErrExists if the id is taken.
	CreateSession(ctx context.Context, s api.Session) (api.Session, error)
	// Session returns a session.
	Session(ctx context.Context, id string) (api.Session, error)
	// CountSessions counts the sessions a principal created since a time.
	CountSessions(ctx context.Context, principal string, since time.Time) (int, error)
	// ListSessions lists sessions (p.Principal's only, when set), newest
	// first, and the cursor of the next page ("" after the last).
	ListSessions(ctx context.Context, p ListSessionsParams) ([]api.Session, string, error)

	// BeginTurn records a running turn and makes it the session's one
	// running turn, appending p.Events in the same transaction; the hold's
	// token is the session's lease token, moved on. It fails with ErrBusy
	// while another turn's lease holds, ErrNotFound without the session.
	BeginTurn(ctx context.Context, p BeginTurnParams) (Hold, []api.Event, error)
	// RenewLease extends a running turn's lease; ErrLeaseLost if the fence
	// no longer holds the session (ended, parked, taken over).
	RenewLease(ctx context.Context, f Fence, lease Lease) error
	// AppendTurn appends events to a session's stream as Append does, for
	// a running turn: ErrLeaseLost, appending nothing, if the fence no
	// longer holds the session.
	AppendTurn(ctx context.Context, f Fence, events ...api.Event) ([]api.Event, error)
	// EndTurn ends a running turn, releases the session and appends
	// p.Events, atomically. ErrNotRunning if the turn has already ended;
	// see EndTurnParams for the fence.
	EndTurn(ctx context.Context, p EndTurnParams) ([]api.Event, error)
	// ExpiredTurns lists running turns whose lease expired before now.
	ExpiredTurns(ctx context.Context, now time.Time) ([]api.Turn, error)
	// Turn returns a turn.
	Turn(ctx context.Context, sessionID, turnID string) (api.Turn, error)
	// ParkTurn keeps a turn running without a lease while it waits for
	// approvals: no host holds it, and it does not expire. ErrLeaseLost if
	// the fence no longer holds the session.
	ParkTurn(ctx context.Context, f Fence) error
	// ResumeTurn takes a parked turn's lease again, moving the token on;
	// ErrNotRunning if it is not parked (another host resumed or ended it).
	ResumeTurn(ctx context.Context, sessionID, turnID string, lease Lease) (Hold, error)
	// ParkedTurns lists parked turns.
	ParkedTurns(ctx context.Context) ([]api.Turn, error)
	// TakeOverTurn takes the lease of a running turn whose lease ran out
	// (its holder died), moving the token on, so that the turn goes on
	// under a new holder and the dead one's writes are refused: what a
	// recovery that continues a turn uses. Of several callers, one wins;
	// the others get ErrBusy, as they do while the lease is live.
	// ErrNotRunning if the turn has ended or is parked, ErrLeaseLost if it
	// no longer holds its session (another turn took it).
	TakeOverTurn(ctx context.Context, sessionID, turnID string, lease Lease) (Hold, error)
	// CancelTurn ends a parked turn as failed (p.Reason), releases the
	// session and closes the calls the turn waits on, atomically: its
	// pending approvals become cancelled (a later decision fails with
	// ErrAlreadyResolved), and each of its approvals without an outcome
	// that nobody has claimed (pending, or approved and not yet run) gets
	// p.Outcome, so that it never runs. It returns the calls it closed and
	// the events of p.Events as stored; ErrNotRunning, changing nothing, if
	// the turn does not hold its session parked (a lease holds it, unless
	// p.Held, or it has ended).
	CancelTurn(ctx context.Context, p CancelTurnParams) ([]api.Approval, []api.Event, error)

	// Append adds events to a session's stream and returns them numbered.
	Append(ctx context.Context, sessionID string, events ...api.Event) ([]api.Event, error)
	// Events returns up to limit events with Seq > after, in order.
	Events(ctx context.Context, sessionID string, after int64, limit int) ([]api.Event, error)
}

// Approvals is the part of a Store that keeps calls parked for a person's
// decision.
type Approvals interface {
	// CreateApproval parks a call (Status is set to pending), appending
	// events to its session (if it has one) in the same transaction.
	CreateApproval(ctx context.Context, a api.Approval, events ...api.Event) ([]api.Event, error)
	// Approval returns a parked or decided call.
	Approval(ctx context.Context, callID string) (api.Approval, error)
	// CountPending counts the pending approvals requested by a principal.
	CountPending(ctx context.Context, requestedBy string) (int, error)
	// ListApprovals lists approvals, oldest first.
	ListApprovals(ctx context.Context, p ListApprovalsParams) ([]api.Approval, string, error)
	// ResolveApproval decides a pending approval, exactly once, and
	// returns it with p.Events as stored: it fails with ErrAlreadyResolved
	// (and the approval as decided), ErrExpired or ErrNotFound, appending
	// nothing.
	ResolveApproval(ctx context.Context, p ResolveApprovalParams) (api.Approval, []api.Event, error)
	// ExpireApprovals marks pending approvals past their expiry as expired
	// and returns them.
	ExpireApprovals(ctx context.Context, now time.Time) ([]api.Approval, error)
	// ApprovalsToRun lists the approved calls of a turn that nobody has
	// claimed to run yet, oldest first.
	ApprovalsToRun(ctx context.Context, sessionID, turnID string) ([]api.Approval, error)
	// ClaimApproval makes executor the one to run an approved, unclaimed
	// call; false if it is claimed already, has an outcome, or is not
	// approved.
	ClaimApproval(ctx context.Context, callID string, executor Lease) (bool, error)
	// RenewExecutor extends an approved call's executor lease.
	RenewExecutor(ctx context.Context, callID string, executor Lease) error
	// OrphanedApprovals lists approved calls without an outcome whose
	// executor's lease ran out: their host died while running them.
	OrphanedApprovals(ctx context.Context, now time.Time) ([]api.Approval, error)
	// FinishApproval records a decided call's outcome, once, appending
	// events (its action.result) to the call's session in the same
	// transaction, and returns them as stored; false, appending nothing,
	// if it had an outcome already.
	FinishApproval(ctx context.Context, callID string, outcome api.Outcome, events ...api.Event) (bool, []api.Event, error)
}

// KV is the part of a Store that keeps key-value entries, by namespace.
type KV interface {
	// KVGet returns a live entry; ErrNotFound if absent or expired.
	KVGet(ctx context.Context, ns, key string) (tool.KVEntry, error)
	// KVSet writes an entry and returns it with its new version (the
	// key's writes counted from 1); ErrConflict when p.IfVersion differs.
	KVSet(ctx context.Context, p KVSetParams) (tool.KVEntry, error)
	// KVDelete removes a key; deleting an absent key is no error.
	KVDelete(ctx context.Context, ns, key string) error
	// KVList lists live entries whose keys start with p.Prefix, in byte
	// order.
	KVList(ctx context.Context, p ListParams) ([]tool.KVEntry, string, error)
}

// Files is the part of a Store that keeps the metadata of files, by
// namespace; the contents live elsewhere, or in the store itself when it
// implements [Blobs].
type Files interface {
	// PutFileMeta stores (or replaces) a file's metadata.
	PutFileMeta(ctx context.Context, ns string, f tool.FileInfo) error
	// FileMeta returns a file's metadata; ErrNotFound if absent.
	FileMeta(ctx context.Context, ns, name string) (tool.FileInfo, error)
	// DeleteFileMeta removes a file's metadata; an absent file is no error.
	DeleteFileMeta(ctx context.Context, ns, name string) error
	// ListFileMeta lists files whose names start with p.Prefix, in byte
	// order.
	ListFileMeta(ctx context.Context, p ListParams) ([]tool.FileInfo, string, error)
}

// PutBlobParams put a file's contents and metadata.
type PutBlobParams struct {
	Namespace   string
	Name        string
	ContentType string
	// Content is read to its end, a chunk at a time.
	Content io.Reader
	// MaxBytes, if positive, bounds the file: the put fails (wrapping
	// tool.ErrFileTooLarge) once Content has given more, having read at
	// most one byte past it.
	MaxBytes int64
}

// Blobs is implemented by stores that keep file contents themselves, so
// that every host sharing the store reads them (store/postgres). A host
// whose store does not implement it keeps contents on its own disk, and
// only their metadata in the store ([Files]).
//
// A file's metadata and contents change together: [Files.FileMeta] and
// [Files.ListFileMeta] show the files put here, [Files.DeleteFileMeta]
// deletes their contents too.
type Blobs interface {
	// PutBlob stores (or replaces) a file, streaming p.Content in, and
	// returns its metadata with its size and SHA-256. The new version
	// replaces the old one at once when it is whole: a put that fails
	// (too large, ctx done, Content's error) leaves the old one as it was.
	PutBlob(ctx context.Context, p PutBlobParams) (tool.FileInfo, error)
	// OpenBlob opens a file's contents; ErrNotFound if absent. The reader
	// streams them and runs its queries under ctx. If the file is replaced
	// or deleted while it is read, a Read fails with ErrConflict: what the
	// reader gave is always part of one version.
	OpenBlob(ctx context.Context, ns, name string) (io.ReadCloser, tool.FileInfo, error)
	// DeleteBlob removes a file, metadata and contents; an absent file is
	// no error.
	DeleteBlob(ctx context.Context, ns, name string) error
}

package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river/riverdriver"

	"github.com/agentsdk/agentsdk/api"
)

// Dialect adapts the portable SQL to a database: what a driver package
// (store/sqlite, store/postgres) tells [New] about the database it opened.
type Dialect struct {
	// Name is "sqlite" or "postgres".
	Name string
	// Numbered placeholders ($1, $2, …) instead of ?.
	Numbered bool
	// IsConflict reports whether an error is a unique-key violation.
	IsConflict func(error) bool
	// Migrations is the driver's schema, one file per version named
	// NNN_what.sql (001_sessions.sql), its statements separated by ";\n".
	// Every driver has the same versions making the same tables and
	// columns, each in its database's types, then the versions that its
	// capabilities need (FileContents).
	Migrations fs.FS
	// RowLocks says that write transactions run side by side (PostgreSQL),
	// so one that reads a row before writing it locks it with SELECT …
	// FOR UPDATE. SQLite runs one write transaction at a time and has no
	// FOR UPDATE.
	RowLocks bool
	// UTF8Text says that text columns hold valid UTF-8 only (PostgreSQL),
	// so the bounds the store computes for a prefix must be valid UTF-8
	// too. SQLite compares any bytes.
	UTF8Text bool
	// FileContents says that the schema keeps file contents (a generation
	// column in files, the table file_chunks): the store implements
	// [Blobs], so that every host sharing the database reads them.
	FileContents bool
	// River, if set, makes the store run durable jobs ([Jobs]) on River
	// with this driver over the write database; River's migrations are
	// applied with the store's.
	River func(*sql.DB) riverdriver.Driver[*sql.Tx]
}

// querier is a database or a transaction.
type querier interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// sqlStore implements Store in portable SQL.
type sqlStore struct {
	db      *sql.DB // the write database: transactions begin here
	write   querier // writes, serialised on SQLite by the driver's pool
	read    querier // reads
	dialect Dialect
	now     func() time.Time
	// numbered caches q's rewrites for numbered placeholders: query → SQL.
	numbered *sync.Map
	// jobs runs the durable jobs, if the dialect has River.
	jobs *riverJobs
	// txn is set in a store bound to one transaction (a job's, or InTx's):
	// every statement runs in it, and tx nests into it.
	txn *sql.Tx
	// after collects a bound store's AfterCommit functions.
	after *[]func()
	// insertUsage is insertUsageTx's statement, prepared once: parsing it
	// anew was most of what recording a model call's usage cost.
	insertUsage *sql.Stmt
	// selectKey is Key's statement, prepared once on read: a key is looked
	// up on every request that carries one, and parsing the query anew was
	// half of what that cost on SQLite.
	selectKey *sql.Stmt
}

var _ Store = (*sqlStore)(nil)

// New returns a Store over open databases: write takes every write
// transaction, read the queries (they may be the same). It applies the
// dialect's migrations that the database lacks, and fails with
// [ErrSchemaTooNew] if a newer binary has migrated it further. Callers that
// may open one database at once (several hosts on PostgreSQL) hold a lock
// around New.
func New(ctx context.Context, write, read *sql.DB, d Dialect) (Store, error) {
	if d.Migrations == nil {
		return nil, fmt.Errorf("opening %s store: the dialect has no migrations", d.Name)
	}
	s := &sqlStore{db: write, write: write, read: read, dialect: d, now: time.Now, numbered: &sync.Map{}}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	var err error
	if s.insertUsage, err = write.PrepareContext(ctx, s.q(insertUsageSQL)); err != nil {
		return nil, fmt.Errorf("opening %s store: %w", d.Name, err)
	}
	if s.selectKey, err = read.PrepareContext(ctx, s.q(selectKeySQL)); err != nil {
		return nil, fmt.Errorf("opening %s store: %w", d.Name, err)
	}
	if d.River != nil {
		j, err := newRiverJobs(ctx, s, d.River(write))
		if err != nil {
			return nil, err
		}
		s.jobs = j
	}
	if d.FileContents {
		return &blobStore{s}, nil
	}
	return s, nil
}

// q returns query in the dialect's placeholders.
func (s *sqlStore) q(query string) string {
	if !s.dialect.Numbered {
		return query
	}
	if v, ok := s.numbered.Load(query); ok {
		return v.(string)
	}
	v, _ := s.numbered.LoadOrStore(query, numberPlaceholders(query))
	return v.(string)
}

// numberPlaceholders turns each ? into $1, $2, ….
func numberPlaceholders(query string) string {
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

func (s *sqlStore) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	if s.txn != nil {
		return fn(s.txn)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// queryAll runs a query and scans every row with scan.
func queryAll[T any](ctx context.Context, db interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args []any, scan func(*sql.Rows) (T, error)) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func scanTurnRow(rows *sql.Rows) (api.Turn, error) {
	var t api.Turn
	var started int64
	err := rows.Scan(&t.SessionID, &t.ID, &t.Kind, &t.Status, &t.Reason, &started)
	t.StartedAt = fromMicros(started)
	return t, err
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// pageLimit is a page's size: p.Limit, or 100 if it is not in 1…1000.
func pageLimit(p Page) int {
	if p.Limit <= 0 || p.Limit > 1000 {
		return 100
	}
	return p.Limit
}

func (s *sqlStore) Close() error {
	var err error
	if s.jobs != nil {
		err = s.jobs.close()
	}
	err = errors.Join(err, s.insertUsage.Close(), s.selectKey.Close(), s.db.Close())
	if r, ok := s.read.(*sql.DB); ok && r != s.db {
		err = errors.Join(err, r.Close())
	}
	return err
}

func (s *sqlStore) CreateSession(ctx context.Context, sess api.Session) (api.Session, error) {
	if sess.ID == "" {
		return api.Session{}, errors.New("creating session: empty id")
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	if sess.CreatedAt.IsZero() {
		sess.CreatedAt = now
	}
	if sess.UpdatedAt.IsZero() {
		sess.UpdatedAt = sess.CreatedAt
	}
	_, err := s.write.ExecContext(ctx, s.q(`INSERT INTO sessions (id, channel, mode, principal, created_at, updated_at, last_seq, lease_token, runtime)
		VALUES (?, ?, ?, ?, ?, ?, 0, 0, ?)`), sess.ID, sess.Channel, string(sess.Mode), sess.Principal, micros(sess.CreatedAt), micros(sess.UpdatedAt), sess.Runtime)
	if err != nil {
		if s.dialect.IsConflict != nil && s.dialect.IsConflict(err) {
			return api.Session{}, fmt.Errorf("creating session %s: %w", sess.ID, ErrExists)
		}
		return api.Session{}, fmt.Errorf("creating session: %w", err)
	}
	sess.LastSeq, sess.RunningTurn = 0, ""
	return sess, nil
}

const sessionColumns = `id, channel, mode, principal, created_at, updated_at, last_seq, COALESCE(turn_id, ''), compacted_seq, runtime`

func scanSession(row interface{ Scan(...any) error }) (api.Session, error) {
	var sess api.Session
	var created, updated int64
	err := row.Scan(&sess.ID, &sess.Channel, &sess.Mode, &sess.Principal, &created, &updated, &sess.LastSeq, &sess.RunningTurn, &sess.CompactedSeq, &sess.Runtime)
	sess.CreatedAt, sess.UpdatedAt = fromMicros(created), fromMicros(updated)
	return sess, err
}

func (s *sqlStore) Session(ctx context.Context, id string) (api.Session, error) {
	sess, err := scanSession(s.read.QueryRowContext(ctx, s.q(`SELECT `+sessionColumns+` FROM sessions WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return api.Session{}, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return api.Session{}, fmt.Errorf("reading session: %w", err)
	}
	return sess, nil
}

// encodeCursor and decodeCursor make and read the opaque cursors of the
// lists ordered by time: base64 of "<microseconds>:<id>".
func encodeCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(micros(at), 10) + ":" + id))
}

func decodeCursor(c string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", ErrBadCursor
	}
	ts, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil {
		return 0, "", ErrBadCursor
	}
	return n, id, nil
}

func (s *sqlStore) CountSessions(ctx context.Context, principal string, since time.Time) (int, error) {
	var n int
	if err := s.read.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM sessions WHERE principal = ? AND created_at >= ?`), principal, micros(since)).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting sessions: %w", err)
	}
	return n, nil
}

func (s *sqlStore) ListSessions(ctx context.Context, p ListSessionsParams) ([]api.Session, string, error) {
	out, next, err := listNewest(ctx, s, `SELECT `+sessionColumns+` FROM sessions WHERE (? = '' OR principal = ?)`, []any{p.Principal, p.Principal}, p.Page,
		func(r *sql.Rows) (api.Session, error) { return scanSession(r) },
		func(sess api.Session) (time.Time, string) { return sess.CreatedAt, sess.ID })
	if err != nil {
		return nil, "", fmt.Errorf("listing sessions: %w", err)
	}
	return out, next, nil
}

// listNewest lists the rows of a table keyed (created_at, id), newest
// first, a page at a time: query selects from the table with a WHERE
// clause and its args; key gives a row's created_at and id for the next
// page's cursor.
func listNewest[T any](ctx context.Context, s *sqlStore, query string, args []any, p Page, scan func(*sql.Rows) (T, error), key func(T) (time.Time, string)) ([]T, string, error) {
	limit := pageLimit(p)
	args = append([]any(nil), args...)
	if p.Cursor != "" {
		ts, id, err := decodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		query += ` AND (created_at < ? OR (created_at = ? AND id < ?))`
		args = append(args, ts, ts, id)
	}
	query += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit+1)
	out, err := queryAll(ctx, s.read, s.q(query), args, scan)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = encodeCursor(key(out[limit-1]))
	}
	return out, next, nil
}

// withTurn returns a copy of events, each with turnID: the caller's slice
// is left as it was.
func withTurn(events []api.Event, turnID string) []api.Event {
	out := make([]api.Event, len(events))
	for i, e := range events {
		e.TurnID = turnID
		out[i] = e
	}
	return out
}

// appendTx numbers and inserts events inside a transaction.
func (s *sqlStore) appendTx(ctx context.Context, tx *sql.Tx, sessionID string, now time.Time, events []api.Event) ([]api.Event, error) {
	return s.appendFencedTx(ctx, tx, sessionID, now, events, nil)
}

// appendFencedTx is appendTx for a turn's writes: with f, the session must
// be f's (the check and the numbering are one statement), else
// ErrLeaseLost.
func (s *sqlStore) appendFencedTx(ctx context.Context, tx *sql.Tx, sessionID string, now time.Time, events []api.Event, f *Fence) ([]api.Event, error) {
	if len(events) == 0 {
		return nil, nil
	}
	query := `UPDATE sessions SET last_seq = last_seq + ?, updated_at = ? WHERE id = ?`
	args := []any{len(events), micros(now), sessionID}
	if f != nil {
		query += ` AND turn_id = ? AND lease_token = ? AND lease_expires IS NOT NULL`
		args = append(args, f.TurnID, f.Token)
	}
	var last int64
	err := tx.QueryRowContext(ctx, s.q(query+` RETURNING last_seq`), args...).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		if f != nil {
			return nil, ErrLeaseLost
		}
		return nil, fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	out := make([]api.Event, len(events))
	for i, e := range events {
		e.SessionID = sessionID
		e.Seq = last - int64(len(events)) + int64(i) + 1
		if e.Time.IsZero() {
			e.Time = now
		}
		if len(e.Data) == 0 {
			e.Data = []byte("{}")
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO events (session_id, seq, turn_id, kind, data, created_at) VALUES (?, ?, ?, ?, ?, ?)`),
			sessionID, e.Seq, e.TurnID, string(e.Kind), string(e.Data), micros(e.Time)); err != nil {
			return nil, err
		}
		if e.Kind == api.KindModelUsage {
			if err := s.insertUsageTx(ctx, tx, e); err != nil {
				return nil, err
			}
		}
		if e.Kind == api.KindContextCompacted {
			if _, err := tx.ExecContext(ctx, s.q(`UPDATE sessions SET compacted_seq = ? WHERE id = ?`), e.Seq, sessionID); err != nil {
				return nil, err
			}
		}
		out[i] = e
	}
	return out, nil
}

func (s *sqlStore) Append(ctx context.Context, sessionID string, events ...api.Event) ([]api.Event, error) {
	var out []api.Event
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = s.appendTx(ctx, tx, sessionID, s.now().UTC().Truncate(time.Microsecond), events)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("appending events: %w", err)
	}
	return out, nil
}

func (s *sqlStore) Events(ctx context.Context, sessionID string, after int64, limit int) ([]api.Event, error) {
	if limit <= 0 {
		limit = 1000
	}
	out, err := queryAll(ctx, s.read, s.q(`SELECT seq, turn_id, kind, data, created_at FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`),
		[]any{sessionID, after, limit}, func(rows *sql.Rows) (api.Event, error) {
			e := api.Event{SessionID: sessionID}
			var data string
			var at int64
			err := rows.Scan(&e.Seq, &e.TurnID, &e.Kind, &data, &at)
			e.Data, e.Time = []byte(data), fromMicros(at)
			return e, err
		})
	if err != nil {
		return nil, fmt.Errorf("reading events: %w", err)
	}
	return out, nil
}

func (s *sqlStore) BeginTurn(ctx context.Context, p BeginTurnParams) (Hold, []api.Event, error) {
	t, lease := p.Turn, p.Lease
	now := s.now().UTC().Truncate(time.Microsecond)
	if t.StartedAt.IsZero() {
		t.StartedAt = now
	}
	var out []api.Event
	var h Hold
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var prev sql.NullString
		err := tx.QueryRowContext(ctx, s.q(`UPDATE sessions SET turn_id = ?, lease_holder = ?, lease_expires = ?, lease_token = lease_token + 1,
			home = ?, prev_home = home
			WHERE id = ? AND (turn_id IS NULL OR lease_expires < ?) RETURNING lease_token, prev_home`),
			t.ID, lease.Holder, micros(now.Add(lease.TTL)), lease.Home, t.SessionID, micros(now)).Scan(&h.Token, &prev)
		if errors.Is(err, sql.ErrNoRows) {
			var exists int
			if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM sessions WHERE id = ?`), t.SessionID).Scan(&exists); err != nil {
				return err
			}
			if exists == 0 {
				return fmt.Errorf("session %s: %w", t.SessionID, ErrNotFound)
			}
			return ErrBusy
		}
		if err != nil {
			return err
		}
		h.SessionID, h.TurnID, h.PrevHome = t.SessionID, t.ID, prev.String
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO turns (session_id, id, kind, status, reason, started_at) VALUES (?, ?, ?, ?, '', ?)`),
			t.SessionID, t.ID, string(t.Kind), string(api.TurnStatusRunning), micros(t.StartedAt)); err != nil {
			return err
		}
		out, err = s.appendTx(ctx, tx, t.SessionID, now, withTurn(p.Events, t.ID))
		return err
	})
	if err != nil {
		if errors.Is(err, ErrBusy) || errors.Is(err, ErrNotFound) {
			return Hold{}, nil, err
		}
		return Hold{}, nil, fmt.Errorf("beginning turn: %w", err)
	}
	return h, out, nil
}

// fenced is the condition that a session's lease is the fence's.
const fenced = `id = ? AND turn_id = ? AND lease_token = ? AND lease_expires IS NOT NULL`

func (s *sqlStore) RenewLease(ctx context.Context, f Fence, lease Lease) error {
	// A parked turn (no lease) stays parked: a renewal racing ParkTurn
	// must not give it a lease that would later expire.
	res, err := s.write.ExecContext(ctx, s.q(`UPDATE sessions SET lease_expires = ? WHERE `+fenced),
		micros(s.now().Add(lease.TTL)), f.SessionID, f.TurnID, f.Token)
	if err != nil {
		return fmt.Errorf("renewing lease: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrLeaseLost
	}
	return nil
}

// holdsTx checks, locking the session's row where the database has row
// locks, that the fence holds the session; ErrLeaseLost if not.
func (s *sqlStore) holdsTx(ctx context.Context, tx *sql.Tx, f Fence) error {
	query := `SELECT 1 FROM sessions WHERE ` + fenced
	if s.dialect.RowLocks {
		query += ` FOR UPDATE`
	}
	var one int
	err := tx.QueryRowContext(ctx, s.q(query), f.SessionID, f.TurnID, f.Token).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrLeaseLost
	}
	return err
}

func (s *sqlStore) AppendTurn(ctx context.Context, f Fence, events ...api.Event) ([]api.Event, error) {
	var out []api.Event
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if len(events) == 0 {
			return s.holdsTx(ctx, tx, f)
		}
		var err error
		out, err = s.appendFencedTx(ctx, tx, f.SessionID, s.now().UTC().Truncate(time.Microsecond), events, &f)
		return err
	})
	if errors.Is(err, ErrLeaseLost) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("appending events: %w", err)
	}
	return out, nil
}

func (s *sqlStore) EndTurn(ctx context.Context, p EndTurnParams) ([]api.Event, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	var out []api.Event
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE turns SET status = ?, reason = ?, ended_at = ? WHERE session_id = ? AND id = ? AND status = ?`),
			string(p.Status), p.Reason, micros(now), p.SessionID, p.TurnID, string(api.TurnStatusRunning))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotRunning
		}
		release := `UPDATE sessions SET turn_id = NULL, lease_holder = NULL, lease_expires = NULL WHERE id = ? AND turn_id = ?`
		switch {
		case p.Expired:
			if err := s.expiredTx(ctx, tx, p, now); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, s.q(release), p.SessionID, p.TurnID)
		case p.Token != 0:
			res, err = tx.ExecContext(ctx, s.q(release+` AND lease_token = ?`), p.SessionID, p.TurnID, p.Token)
			if err == nil {
				if n, _ := res.RowsAffected(); n == 0 {
					return ErrLeaseLost
				}
			}
		default:
			_, err = tx.ExecContext(ctx, s.q(release), p.SessionID, p.TurnID)
		}
		if err != nil {
			return err
		}
		out, err = s.appendTx(ctx, tx, p.SessionID, now, withTurn(p.Events, p.TurnID))
		return err
	})
	if err != nil {
		if errors.Is(err, ErrNotRunning) || errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrBusy) {
			return nil, err
		}
		return nil, fmt.Errorf("ending turn: %w", err)
	}
	return out, nil
}

// expiredTx checks, for a recovery (p.Expired), that the turn may end: it
// no longer holds its session, or its lease ran out. ErrBusy while the
// lease is live, ErrNotRunning while parked, ErrLeaseLost if it was resumed
// since p.Token.
func (s *sqlStore) expiredTx(ctx context.Context, tx *sql.Tx, p EndTurnParams, now time.Time) error {
	query := `SELECT COALESCE(turn_id, ''), lease_token, lease_expires FROM sessions WHERE id = ?`
	if s.dialect.RowLocks {
		query += ` FOR UPDATE`
	}
	var holder string
	var token int64
	var expires sql.NullInt64
	if err := tx.QueryRowContext(ctx, s.q(query), p.SessionID).Scan(&holder, &token, &expires); err != nil {
		return err
	}
	switch {
	case holder != p.TurnID:
		return nil // another turn took the session after its lease ran out
	case p.Token != 0 && token != p.Token:
		return ErrLeaseLost // resumed since: the newer hold is its own
	case !expires.Valid:
		return ErrNotRunning // parked
	case expires.Int64 >= micros(now):
		return ErrBusy
	}
	return nil
}

func (s *sqlStore) ExpiredTurns(ctx context.Context, now time.Time) ([]api.Turn, error) {
	out, err := queryAll(ctx, s.read, s.q(`SELECT t.session_id, t.id, t.kind, t.status, t.reason, t.started_at
		FROM turns t LEFT JOIN sessions s ON s.id = t.session_id AND s.turn_id = t.id
		WHERE t.status = ? AND (s.id IS NULL OR s.lease_expires < ?)`), []any{string(api.TurnStatusRunning), micros(now)}, scanTurnRow)
	if err != nil {
		return nil, fmt.Errorf("listing expired turns: %w", err)
	}
	return out, nil
}

func (s *sqlStore) Turn(ctx context.Context, sessionID, turnID string) (api.Turn, error) {
	var t api.Turn
	var started int64
	var ended sql.NullInt64
	err := s.read.QueryRowContext(ctx, s.q(`SELECT session_id, id, kind, status, reason, started_at, ended_at FROM turns WHERE session_id = ? AND id = ?`),
		sessionID, turnID).Scan(&t.SessionID, &t.ID, &t.Kind, &t.Status, &t.Reason, &started, &ended)
	if errors.Is(err, sql.ErrNoRows) {
		return api.Turn{}, fmt.Errorf("turn %s: %w", turnID, ErrNotFound)
	}
	if err != nil {
		return api.Turn{}, fmt.Errorf("reading turn: %w", err)
	}
	t.StartedAt = fromMicros(started)
	if ended.Valid {
		e := fromMicros(ended.Int64)
		t.EndedAt = &e
	}
	return t, nil
}

func (s *sqlStore) ParkTurn(ctx context.Context, f Fence) error {
	res, err := s.write.ExecContext(ctx, s.q(`UPDATE sessions SET lease_holder = '', lease_expires = NULL WHERE `+fenced), f.SessionID, f.TurnID, f.Token)
	if err != nil {
		return fmt.Errorf("parking turn: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrLeaseLost
	}
	return nil
}

func (s *sqlStore) ResumeTurn(ctx context.Context, sessionID, turnID string, lease Lease) (Hold, error) {
	now := s.now()
	h := Hold{Fence: Fence{SessionID: sessionID, TurnID: turnID}}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var prev sql.NullString
		err := tx.QueryRowContext(ctx, s.q(`UPDATE sessions SET lease_holder = ?, lease_expires = ?, lease_token = lease_token + 1, home = ?, prev_home = home
			WHERE id = ? AND turn_id = ? AND lease_expires IS NULL RETURNING lease_token, prev_home`),
			lease.Holder, micros(now.Add(lease.TTL)), lease.Home, sessionID, turnID).Scan(&h.Token, &prev)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotRunning
		}
		if err != nil {
			return err
		}
		h.PrevHome = prev.String
		return nil
	})
	if errors.Is(err, ErrNotRunning) {
		return Hold{}, err
	}
	if err != nil {
		return Hold{}, fmt.Errorf("resuming turn: %w", err)
	}
	return h, nil
}

func (s *sqlStore) TakeOverTurn(ctx context.Context, sessionID, turnID string, lease Lease) (Hold, error) {
	now := s.now()
	h := Hold{Fence: Fence{SessionID: sessionID, TurnID: turnID}}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var status string
		err := tx.QueryRowContext(ctx, s.q(`SELECT status FROM turns WHERE session_id = ? AND id = ?`), sessionID, turnID).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) || err == nil && status != string(api.TurnStatusRunning) {
			return ErrNotRunning
		}
		if err != nil {
			return err
		}
		query := `SELECT COALESCE(turn_id, ''), COALESCE(lease_holder, ''), lease_expires FROM sessions WHERE id = ?`
		if s.dialect.RowLocks {
			query += ` FOR UPDATE`
		}
		var holds string
		var expires sql.NullInt64
		if err := tx.QueryRowContext(ctx, s.q(query), sessionID).Scan(&holds, &h.PrevHolder, &expires); err != nil {
			return err
		}
		switch {
		case holds != turnID:
			return ErrLeaseLost
		case !expires.Valid:
			return ErrNotRunning // parked
		case expires.Int64 >= micros(now):
			return ErrBusy
		}
		var prev sql.NullString
		err = tx.QueryRowContext(ctx, s.q(`UPDATE sessions SET lease_holder = ?, lease_expires = ?, lease_token = lease_token + 1, home = ?, prev_home = home
			WHERE id = ? AND turn_id = ? AND lease_expires < ? RETURNING lease_token, prev_home`),
			lease.Holder, micros(now.Add(lease.TTL)), lease.Home, sessionID, turnID, micros(now)).Scan(&h.Token, &prev)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrBusy // taken over or renewed meanwhile
		}
		h.PrevHome = prev.String
		return err
	})
	if errors.Is(err, ErrNotRunning) || errors.Is(err, ErrBusy) || errors.Is(err, ErrLeaseLost) {
		return Hold{}, err
	}
	if err != nil {
		return Hold{}, fmt.Errorf("taking over turn: %w", err)
	}
	return h, nil
}

func (s *sqlStore) ParkedTurns(ctx context.Context) ([]api.Turn, error) {
	out, err := queryAll(ctx, s.read, s.q(`SELECT t.session_id, t.id, t.kind, t.status, t.reason, t.started_at FROM sessions s
		JOIN turns t ON t.session_id = s.id AND t.id = s.turn_id WHERE s.turn_id IS NOT NULL AND s.lease_expires IS NULL`), nil, scanTurnRow)
	if err != nil {
		return nil, fmt.Errorf("listing parked turns: %w", err)
	}
	return out, nil
}

func (s *sqlStore) CancelTurn(ctx context.Context, p CancelTurnParams) ([]api.Approval, []api.Event, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	var closed []api.Approval
	var out []api.Event
	err := s.tx(ctx, func(tx *sql.Tx) error {
		closed, out = nil, nil
		// Rows are locked in the order the other writes lock them
		// (approvals, the turn, its session), lest two of them deadlock.
		query := `SELECT ` + approvalColumns + ` FROM approvals
			WHERE session_id = ? AND turn_id = ? AND outcome IS NULL AND executor = '' ORDER BY requested_at, call_id`
		if s.dialect.RowLocks {
			query += ` FOR UPDATE`
		}
		open, err := queryAll(ctx, tx, s.q(query), []any{p.SessionID, p.TurnID}, scanApprovalRow)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`UPDATE turns SET status = ?, reason = ?, ended_at = ? WHERE session_id = ? AND id = ? AND status = ?`),
			string(api.TurnStatusFailed), p.Reason, micros(now), p.SessionID, p.TurnID, string(api.TurnStatusRunning))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotRunning
		}
		// Parked: the turn holds its session without a lease. The row lock
		// makes a resumption (or a holder's write) wait for this
		// transaction, and then find the turn gone.
		release := `UPDATE sessions SET turn_id = NULL, lease_holder = NULL, lease_expires = NULL WHERE id = ? AND turn_id = ?`
		if !p.Held {
			release += ` AND lease_expires IS NULL`
		}
		if res, err = tx.ExecContext(ctx, s.q(release), p.SessionID, p.TurnID); err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotRunning
		}
		for _, a := range open {
			was := a.Status
			if a.Status == api.ApprovalPending {
				at := now
				a.Status, a.DecidedAt, a.Reason = api.ApprovalCancelled, &at, p.CallReason
			}
			var decided any // NULL while undecided
			if a.DecidedAt != nil {
				decided = micros(*a.DecidedAt)
			}
			o := p.Outcome
			o.ToolName, o.CallID = a.Tool, a.CallID
			b, err := json.Marshal(o)
			if err != nil {
				return fmt.Errorf("encoding the outcome of call %s: %w", a.CallID, err)
			}
			res, err := tx.ExecContext(ctx, s.q(`UPDATE approvals SET status = ?, decided_at = ?, reason = ?, outcome = ?
				WHERE call_id = ? AND status = ? AND outcome IS NULL AND executor = ''`),
				string(a.Status), decided, a.Reason, string(b), a.CallID, string(was))
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 {
				a.Outcome = &o
				closed = append(closed, a)
			}
		}
		if p.Events != nil {
			out, err = s.appendTx(ctx, tx, p.SessionID, now, withTurn(p.Events(closed), p.TurnID))
		}
		return err
	})
	if errors.Is(err, ErrNotRunning) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cancelling turn: %w", err)
	}
	return closed, out, nil
}

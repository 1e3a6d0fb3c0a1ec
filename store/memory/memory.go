// Package memory keeps a [store.Store] in memory, for tests and for
// programs that embed a host with no database. Nothing survives the
// process: when it exits, every session, approval, KV entry and file
// record is gone. Two stores from [New] share nothing.
//
// It behaves as the SQL store does, and passes the same conformance suite
// (store/storetest): listings in byte order with the same prefixes, limits
// and cursors, the same errors, leases that expire against the clock,
// events numbered from 1 without gaps, approvals decided exactly once, KV
// entries that expire. Times are kept to the microsecond, as the SQL store
// keeps them. A differential test (FuzzAgainstSQLite) runs the same
// operations on both and compares the results. What it returns is the
// caller's to change: every slice and record is a copy.
package memory

import (
	"cmp"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// memStore implements store.Store with maps under one mutex: every method
// is one critical section, as every SQL method is one transaction. No call
// waits for anything but the mutex, so contexts go unread.
type memStore struct {
	now func() time.Time

	mu        sync.Mutex
	sessions  map[string]*session
	approvals map[string]*approval
	kv        map[string]map[string]*kvEntry      // namespace, key
	files     map[string]map[string]tool.FileInfo // namespace, name
	idem      map[[2]string]*idemRecord           // scope, key
	// reservations are the usage reservations, by id.
	reservations map[string]reservation
	keys         map[string]store.KeyRecord // API keys, by id
	// audit is the audit log, in seq order (audit.go).
	audit []api.AuditEntry
}

var _ store.Store = (*memStore)(nil)

// New returns an empty store in memory.
func New() store.Store {
	return &memStore{
		now:       time.Now,
		sessions:  map[string]*session{},
		approvals: map[string]*approval{},
		kv:        map[string]map[string]*kvEntry{},
		files:     map[string]map[string]tool.FileInfo{},
		idem:      map[[2]string]*idemRecord{},

		reservations: map[string]reservation{},
		keys:         map[string]store.KeyRecord{},
	}
}

// Close does nothing: there is nothing to release but memory, which goes
// with the store's last reference.
func (m *memStore) Close() error { return nil }

// clock returns the current time as the store keeps times: UTC, to the
// microsecond.
func (m *memStore) clock() time.Time { return micro(m.now()) }

// micro returns t as the store keeps it: UTC, to the microsecond (the SQL
// store's precision), with no monotonic reading.
func micro(t time.Time) time.Time { return time.UnixMicro(t.UnixMicro()).UTC() }

// lapsed reports whether a lease ending at until had run out before now,
// comparing microseconds as the SQL store does. (A lease ending at now
// still holds; a KV entry or an approval expiring at now is gone.)
func lapsed(until, now time.Time) bool { return until.UnixMicro() < now.UnixMicro() }

// pageLimit is a page's size: p.Limit, or 100 if it is not in 1…1000.
func pageLimit(p store.Page) int {
	if p.Limit <= 0 || p.Limit > 1000 {
		return 100
	}
	return p.Limit
}

// timeCursor and parseTimeCursor make and read the opaque cursors of the
// lists ordered by time: base64 of "<microseconds>:<id>".
func timeCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at.UnixMicro(), 10) + ":" + id))
}

func parseTimeCursor(c string) (int64, string, error) {
	if c == "" {
		return 0, "", nil // the first page
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", store.ErrBadCursor
	}
	ts, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil {
		return 0, "", store.ErrBadCursor
	}
	return n, id, nil
}

// cmpCursor compares (at, id) with a time cursor's (ts, cid), in the
// order the cursor pages: by time, then id.
func cmpCursor(at time.Time, id string, ts int64, cid string) int {
	return cmp.Or(cmp.Compare(at.UnixMicro(), ts), cmp.Compare(id, cid))
}

// page cuts a sorted list to a page, returning the cursor of the next
// page ("" after the last), made by cursor from the page's last item.
func page[T any](all []T, p store.Page, cursor func(T) string) ([]T, string) {
	limit := pageLimit(p)
	if len(all) <= limit {
		return all, ""
	}
	all = all[:limit:limit]
	return all, cursor(all[limit-1])
}

// prefixPage lists the names of a namespace that start with p.Prefix, in
// byte order, after p.Cursor (the previous page's last name), as the SQL
// store's prefixPage does.
func prefixPage[T any](names map[string]T, p store.ListParams, live func(T) bool) ([]string, string) {
	var out []string
	for name, v := range names {
		if strings.HasPrefix(name, p.Prefix) && (p.Cursor == "" || name > p.Cursor) && live(v) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return page(out, p.Page, func(name string) string { return name })
}

// clonePtr returns a new pointer to a copy of *t, or nil.
func clonePtr[T any](t *T) *T {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// withTurn returns a copy of events, each with turnID.
func withTurn(events []api.Event, turnID string) []api.Event {
	out := make([]api.Event, len(events))
	for i, e := range events {
		e.TurnID = turnID
		out[i] = e
	}
	return out
}

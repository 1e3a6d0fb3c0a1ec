package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/agentsdk/agentsdk/store"
)

// liteStore is the SQL store with the notifications of changed sessions
// that processes sharing the file need: agent-sdk serve --watch runs the
// old and the new build of a host on one agent.db while they swap, and a
// stream on the new one must see what the old one appends as it finishes
// its turns. SQLite has no NOTIFY; ListenChanged polls the events table
// instead.
type liteStore struct {
	sqlStore
	poller
}

// sqlStore is what store.New returns for this package's dialect.
type sqlStore interface {
	store.Store
	store.Jobs
	store.Timers
	store.Evals
}

var (
	_ store.Notifier = (*liteStore)(nil)
	_ store.Jobs     = (*liteStore)(nil)
	_ store.Timers   = (*liteStore)(nil)
	_ store.Evals    = (*liteStore)(nil)
)

// pollEvery is how often ListenChanged looks for new events.
const pollEvery = 200 * time.Millisecond

// poller finds the sessions with new events by the events table's rowid,
// which only grows as rows are appended.
type poller struct {
	db *sql.DB // a reader
}

// NotifyChanged does nothing: the other processes find new events by
// polling.
func (poller) NotifyChanged(context.Context, []string) error { return nil }

// ListenChanged delivers, every pollEvery, the sessions whose events grew
// since the last look: those of every process on the file, this one's
// included (a listener re-reads them and finds nothing new), until ctx
// ends. A look that fails delivers an empty batch (anything may have
// changed) once it succeeds again.
func (p poller) ListenChanged(ctx context.Context) (<-chan []string, error) {
	var last int64
	if err := p.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(rowid), 0) FROM events`).Scan(&last); err != nil {
		return nil, err
	}
	c := make(chan []string)
	go func() {
		defer close(c)
		t := time.NewTicker(pollEvery)
		defer t.Stop()
		failed := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			ids, top, err := p.since(ctx, last)
			switch {
			case err != nil:
				failed = true
				continue
			case failed:
				ids, failed = []string{}, false
			case len(ids) == 0:
				continue
			}
			last = top
			select {
			case c <- ids:
			case <-ctx.Done():
				return
			}
		}
	}()
	return c, nil
}

// since returns the sessions with events after rowid last, and the
// greatest rowid.
func (p poller) since(ctx context.Context, last int64) ([]string, int64, error) {
	rows, err := p.db.QueryContext(ctx, `SELECT session_id, MAX(rowid) FROM events WHERE rowid > ? GROUP BY session_id`, last)
	if err != nil {
		return nil, last, err
	}
	defer rows.Close()
	var ids []string
	top := last
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, last, err
		}
		ids = append(ids, id)
		top = max(top, n)
	}
	return ids, top, rows.Err()
}

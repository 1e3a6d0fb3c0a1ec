package postgres

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentsdk/agentsdk/store"
)

// pgStore is the SQL store (with its [store.Blobs]) and the notifications
// of changed sessions that hosts sharing the schema send each other.
type pgStore struct {
	blobStore
	notifier
}

// blobStore is what store.New returns for this package's dialect.
type blobStore interface {
	store.Store
	store.Blobs
	store.Jobs
	store.Timers
	store.Evals
}

var (
	_ store.Notifier = (*pgStore)(nil)
	_ store.Jobs     = (*pgStore)(nil)
	_ store.Timers   = (*pgStore)(nil)
	_ store.Evals    = (*pgStore)(nil)
)

// notifier sends and receives the ids of changed sessions with NOTIFY and
// LISTEN, on a channel of the schema's own (agentsdk_events_<md5 of the
// schema's name>), so that agents in other schemas of the database do not
// wake each other. A payload is "<origin>/<id>,<id>,…": origin names the
// store that sent it, whose own listener skips it.
type notifier struct {
	db      *sql.DB
	channel string
	origin  string
}

// channelQuery names the schema's channel: an identifier under
// PostgreSQL's 63 bytes whatever the schema's name.
const channelQuery = `SELECT 'agentsdk_events_' || md5(COALESCE(current_schema(), ''))`

// maxPayload is the most a NOTIFY payload may hold (8000 bytes by
// default), with room to spare.
const maxPayload = 7900

func newNotifier(ctx context.Context, db *sql.DB) (notifier, error) {
	n := notifier{db: db, origin: rand.Text()[:12]}
	err := db.QueryRowContext(ctx, channelQuery).Scan(&n.channel)
	return n, err
}

// NotifyChanged sends the ids in as few NOTIFYs as fit them, in one
// statement.
func (n notifier) NotifyChanged(ctx context.Context, sessionIDs []string) error {
	if len(sessionIDs) == 0 {
		return nil
	}
	var payloads []string
	var b strings.Builder
	for _, id := range sessionIDs {
		if b.Len() > 0 && b.Len()+1+len(id) > maxPayload {
			payloads = append(payloads, b.String())
			b.Reset()
		}
		if b.Len() == 0 {
			b.WriteString(n.origin + "/")
		} else {
			b.WriteByte(',')
		}
		b.WriteString(id)
	}
	payloads = append(payloads, b.String())
	_, err := n.db.ExecContext(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, n.channel, payloads)
	return err
}

// Reconnection backoff of the listening connection.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// ListenChanged listens on a connection of its own, taken from the pool
// and closed when ctx ends or the connection fails; what is sent after it
// returns is delivered. After a failure it connects again (waiting up to
// maxBackoff between attempts) and, once listening again, delivers an
// empty batch: what was sent meanwhile is lost.
func (n notifier) ListenChanged(ctx context.Context) (<-chan []string, error) {
	conn, err := n.listen(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan []string, 16)
	send := func(ids []string) bool {
		select {
		case out <- ids:
			return true
		case <-ctx.Done():
			return false
		}
	}
	go func() {
		defer close(out)
		for backoff := minBackoff; ; {
			if conn != nil {
				n.wait(ctx, conn, send)
				conn, backoff = nil, minBackoff
			}
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			if conn, _ = n.listen(ctx); conn == nil {
				backoff = min(2*backoff, maxBackoff)
			} else if !send([]string{}) {
				conn.Raw(func(any) error { return driver.ErrBadConn })
				conn.Close()
				return
			}
		}
	}()
	return out, nil
}

// listen takes a connection of its own and runs LISTEN on it.
func (n notifier) listen(ctx context.Context) (*sql.Conn, error) {
	conn, err := n.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, `LISTEN "`+n.channel+`"`); err != nil {
		conn.Raw(func(any) error { return driver.ErrBadConn })
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// wait delivers the notifications of other stores that conn receives
// until it fails, ctx ends or send returns false, then closes it, not
// returning it to the pool, so that no pooled connection listens.
func (n notifier) wait(ctx context.Context, conn *sql.Conn, send func([]string) bool) {
	defer conn.Close()
	conn.Raw(func(c any) error {
		pc := c.(*stdlib.Conn).Conn()
		for {
			note, err := pc.WaitForNotification(ctx)
			if err != nil {
				return driver.ErrBadConn
			}
			origin, ids, ok := strings.Cut(note.Payload, "/")
			if !ok || origin == n.origin || ids == "" {
				continue
			}
			if !send(strings.Split(ids, ",")) {
				return driver.ErrBadConn
			}
		}
	})
}

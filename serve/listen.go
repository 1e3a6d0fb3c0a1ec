package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// Defaults of [ListenOptions].
const (
	// DrainTimeoutDefault is how long shutdown waits for in-flight requests.
	DrainTimeoutDefault = 30 * time.Second
	// HeaderTimeoutDefault is how long a request's headers may take to
	// arrive, from the connection's first byte (or its last request).
	HeaderTimeoutDefault = 10 * time.Second
	// IdleTimeoutDefault is how long a keep-alive connection is kept
	// without a request.
	IdleTimeoutDefault = 120 * time.Second
	// MaxConnsDefault is how many connections are open at once.
	MaxConnsDefault = 1024
)

// ListenOptions configure [ListenAndServe]. Nil means defaults.
type ListenOptions struct {
	// DrainTimeout bounds how long shutdown waits for in-flight requests;
	// zero means DrainTimeoutDefault.
	DrainTimeout time.Duration
	// Logger receives start and shutdown messages; nil discards them.
	Logger *slog.Logger
	// OnListen, if set, is called with the bound address once the server
	// accepts connections (useful with port 0).
	OnListen func(addr net.Addr)
	// HeaderTimeout bounds how long a request's headers may take to
	// arrive; zero means HeaderTimeoutDefault, negative no limit. (The
	// body's own limit is Options.BodyTimeout, set by the handler.)
	HeaderTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection waits for its next
	// request before it is closed; zero means IdleTimeoutDefault, negative
	// no limit.
	IdleTimeout time.Duration
	// MaxConns bounds the open connections; zero means MaxConnsDefault,
	// negative no limit. At the limit, a new connection takes the place of
	// the connection that has waited longest with no request in progress
	// (connected but no request yet, or idle between requests), which is
	// closed; when every connection has a request in progress, the new one
	// is answered 503 over_capacity with Connection: close.
	MaxConns int
	// Listener, if set, is served instead of listening on addr: a socket
	// handed over by a parent process (agent-sdk serve --watch keeps the
	// port while it swaps hosts). Shutdown closes it.
	Listener net.Listener
}

// ListenAndServe serves handler on addr until ctx is done, then stops
// accepting connections and waits for in-flight requests to finish, up to
// the drain timeout. It returns nil after a clean shutdown. When handler
// is a *Server, its host's harness turns are given the MCP endpoint at the
// bound address (Server.HarnessMCP); a handler that wraps a Server does
// that itself with host.Host.SetHarnessMCP.
func ListenAndServe(ctx context.Context, addr string, handler http.Handler, opts *ListenOptions) error {
	var o ListenOptions
	if opts != nil {
		o = *opts
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = DrainTimeoutDefault
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.HeaderTimeout = orDefault(o.HeaderTimeout, HeaderTimeoutDefault)
	o.IdleTimeout = orDefault(o.IdleTimeout, IdleTimeoutDefault)
	o.MaxConns = orDefault(o.MaxConns, MaxConnsDefault)
	ln := o.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("listening on %s: %w", addr, err)
		}
	}
	srv := &http.Server{
		Handler: handler,
		// No ReadTimeout or WriteTimeout: they would bound whole requests,
		// and calls and event streams run long. The body has its own limit
		// (Options.BodyTimeout), taken by the handler.
		ReadHeaderTimeout: o.HeaderTimeout,
		IdleTimeout:       o.IdleTimeout,
		// In-flight calls keep running on shutdown, but a new request's
		// context is not tied to ctx: draining means letting them finish.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	if o.MaxConns > 0 {
		lim := newConnLimit(ln, o.MaxConns, o.Logger)
		ln, srv.ConnState = lim, lim.track
		srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }
	}
	if sh, ok := handler.(interface{ Shutdown() }); ok {
		srv.RegisterOnShutdown(sh.Shutdown) // ends event streams, which never end by themselves
	}
	if s, ok := handler.(*Server); ok {
		// Harness turns reach the agent's server tools at this address.
		s.host.SetHarnessMCP(s.HarnessMCP(ln.Addr()))
	}
	if o.OnListen != nil {
		o.OnListen(ln.Addr())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	o.Logger.Info("shutting down: draining in-flight requests", "timeout", o.DrainTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), o.DrainTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("draining in-flight requests: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	o.Logger.Info("stopped")
	return nil
}

// orDefault returns def for zero and zero for a negative v (no limit).
func orDefault[T int | time.Duration](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// connLimit is a listener with at most max connections open. At the
// limit, a new connection evicts one that serves no request: first one
// whose request was refused (401, 413: the server only drains it before
// closing it, see draining), else the one that has been waiting longest
// without a request in progress (http.StateNew: connected, no whole
// request head yet; http.StateIdle: between keep-alive requests), which
// http.Server reports through track. A peer holding connections open
// without a request, or sending requests without the token, thus keeps no
// place from anyone: each new connection takes the place of one of them.
// When every connection has a request in progress, the new one is
// refused: answered 503 over_capacity with Connection: close, then closed.
type connLimit struct {
	net.Listener
	max    int
	logger *slog.Logger

	mu   sync.Mutex
	open map[*limitedConn]struct{}
	seq  atomic.Int64 // orders connections by when they began to wait

	refusing chan struct{} // bounds the goroutines answering refused connections
	refused  atomic.Int64  // connections refused (503)
	evicted  atomic.Int64  // connections closed to make room
}

// maxRefusing bounds the refused connections answered at once; beyond it,
// a refused connection is closed without an answer.
const maxRefusing = 64

func newConnLimit(ln net.Listener, max int, logger *slog.Logger) *connLimit {
	return &connLimit{Listener: ln, max: max, logger: logger, open: make(map[*limitedConn]struct{}, max),
		refusing: make(chan struct{}, maxRefusing)}
}

// limitedConn is a connection counted by a connLimit until it is closed.
type limitedConn struct {
	net.Conn
	lim  *connLimit
	once sync.Once
	// Set by the server's goroutine for the connection, read under lim.mu
	// when a place is wanted; atomic rather than under lim.mu, which every
	// request would otherwise take twice.
	waiting  atomic.Int64 // while it has no request in progress (new or idle): lim.seq when it began to wait; else 0
	draining atomic.Bool  // its request was refused: it is closed once answered
}

func (c *limitedConn) Close() error {
	c.once.Do(func() {
		c.lim.mu.Lock()
		delete(c.lim.open, c)
		c.lim.mu.Unlock()
	})
	return c.Conn.Close()
}

func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &limitedConn{Conn: c, lim: l}
		lc.waiting.Store(l.seq.Add(1))
		l.mu.Lock()
		var victim *limitedConn
		if len(l.open) >= l.max {
			victim = l.waitingLongest()
		}
		if victim != nil {
			delete(l.open, victim)
		}
		full := len(l.open) >= l.max
		if !full {
			l.open[lc] = struct{}{}
		}
		l.mu.Unlock()
		if victim != nil {
			l.evicted.Add(1)
			// Not inline: Close waits for the connection's reader (its
			// server goroutine) to let go, and accepting must not.
			go victim.Close()
		}
		if full {
			l.refuse(c)
			continue
		}
		return lc, nil
	}
}

// waitingLongest is the open connection to close for a new one: a
// draining one, else the one that has waited longest without a request in
// progress; nil if every one has a request in progress. l.mu is held.
func (l *connLimit) waitingLongest() *limitedConn {
	var (
		oldest *limitedConn
		since  int64
	)
	for c := range l.open {
		if c.draining.Load() {
			return c
		}
		if w := c.waiting.Load(); w != 0 && (oldest == nil || w < since) {
			oldest, since = c, w
		}
	}
	return oldest
}

// track is the server's ConnState hook: it records where each connection
// stands.
func (l *connLimit) track(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*limitedConn)
	if !ok {
		return
	}
	var waiting int64
	if state == http.StateNew || state == http.StateIdle {
		waiting = l.seq.Add(1)
	}
	c.waiting.Store(waiting)
	if c.draining.Load() {
		c.draining.Store(false)
	}
}

// connKey is the context key of a request's connection, under a connLimit.
type connKey struct{}

// draining tells the connLimit, if any, that the connection of the
// request of ctx serves it no more: its answer is a refusal that closes
// it, and it is drained until then. It may be closed for a new one.
func draining(ctx context.Context) {
	c, ok := ctx.Value(connKey{}).(*limitedConn)
	if !ok {
		return
	}
	c.draining.Store(true)
}

// releaseConn closes the connection of the request of ctx, under a
// connLimit, whose whole answer has been written and flushed, while its
// handler runs on (a direct call answered by its watchdog): it then holds
// no place under the cap, nor its descriptor. The server's goroutine for
// it finishes once the handler returns, its writes failing. Without a
// connLimit (MaxConns negative), the connection is closed then.
func releaseConn(ctx context.Context) {
	c, ok := ctx.Value(connKey{}).(*limitedConn)
	if !ok {
		return
	}
	c.Close()
}

// refusal is the answer of a connection over the limit.
var refusal = func() []byte {
	body, _ := json.Marshal(api.ErrorResponse{Error: api.Errorf(api.CodeOverCapacity,
		"the host has as many connections with requests in progress as it allows (--max-conns); retry later")})
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\n"+
		"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s\n", len(body)+1, body)
}()

// refuse answers a connection over the limit with 503 and closes it,
// reading what the client sends meanwhile (for refusalGrace at most) so
// that the answer is not lost to a reset.
func (l *connLimit) refuse(c net.Conn) {
	if n := l.refused.Add(1); n == 1 || n%1000 == 0 {
		l.logger.Warn("refusing connections: every one allowed has a request in progress", "max_conns", l.max, "refused", n)
	}
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		c.SetDeadline(time.Now().Add(refusalGrace))
		if _, err := c.Write(refusal); err != nil {
			return
		}
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		io.Copy(io.Discard, io.LimitReader(c, 1<<20))
	}()
}

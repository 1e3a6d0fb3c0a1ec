package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// DrainTimeoutDefault is how long shutdown waits for in-flight requests.
const DrainTimeoutDefault = 30 * time.Second

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
}

// ListenAndServe serves handler on addr until ctx is done, then stops
// accepting connections and waits for in-flight requests to finish, up to
// the drain timeout. It returns nil after a clean shutdown.
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
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		// In-flight calls keep running on shutdown, but a new request's
		// context is not tied to ctx: draining means letting them finish.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	if sh, ok := handler.(interface{ Shutdown() }); ok {
		srv.RegisterOnShutdown(sh.Shutdown) // ends event streams, which never end by themselves
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

// Package serve puts a [host.Host] on HTTP: the API of package api (direct
// tool calls, sessions and their event streams, approvals, artifacts and
// the OpenAPI document) behind a bearer token, with request logs. [Server]
// is the http.Handler; [ListenAndServe] runs it and drains in-flight calls
// on shutdown. It opens no database: the host is given its store. The
// agent binaries agent-sdk builds run it through package agentmain.
//
// A Go program can skip the CLI and serve its own tool set:
//
//	set, _ := tool.NewSet(myTools...)
//	st, _ := sqlite.Open(ctx, "state/agent.db")
//	h, _ := host.New(set, &host.Options{StateRoot: "state", Store: st})
//	srv, _ := serve.New(h, &serve.Options{Slug: "myagent", Token: os.Getenv("AGENT_SDK_TOKEN")})
//	err := serve.ListenAndServe(ctx, "127.0.0.1:3000", srv, nil)
package serve

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
)

// Defaults of [Options].
const (
	// MaxBodyBytesDefault is the largest request body accepted by default.
	MaxBodyBytesDefault = 4 << 20
	// ApprovalWaitDefault is how long a direct call of a gated tool waits
	// for a decision before answering 202.
	ApprovalWaitDefault = 30 * time.Second
)

// Options configure a [Server].
type Options struct {
	// Slug prefixes every API path: /<slug>/v1/…. Required.
	Slug string
	// Token is the bearer token every endpoint but /healthz requires.
	// Required: a server without one refuses to start.
	Token string
	// MaxBodyBytes bounds request bodies; zero means MaxBodyBytesDefault.
	MaxBodyBytes int64
	// ApprovalWait is how long a direct call of a gated tool waits for a
	// decision before the answer is 202 approval_pending; zero means
	// ApprovalWaitDefault, negative answers at once.
	ApprovalWait time.Duration
	// Logger receives one line per request (method, path, status,
	// duration, call id). Nil discards them.
	Logger *slog.Logger
}

// Server is the HTTP API of one agent's host.
type Server struct {
	host    *host.Host
	slug    string
	token   []byte
	maxBody int64
	wait    time.Duration
	logger  *slog.Logger
	mux     *http.ServeMux

	closing   chan struct{} // closed when the server shuts down
	closeOnce sync.Once

	openAPIDoc func() ([]byte, error) // the OpenAPI document, made once: the tools do not change
}

// principal is who the bearer token stands for. There is one token per
// host today, so one principal.
const principal = "bearer-token"

// New returns the HTTP API for h.
func New(h *host.Host, opts *Options) (*Server, error) {
	if h == nil {
		return nil, errors.New("creating server: the host is nil")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := api.CheckSlug(o.Slug); err != nil {
		return nil, fmt.Errorf("creating server: %w", err)
	}
	if o.Token == "" {
		return nil, errors.New("creating server: Options.Token is required")
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = MaxBodyBytesDefault
	}
	if o.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("creating server: MaxBodyBytes is negative (%d)", o.MaxBodyBytes)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case o.ApprovalWait == 0:
		o.ApprovalWait = ApprovalWaitDefault
	case o.ApprovalWait < 0:
		o.ApprovalWait = 0
	}
	s := &Server{host: h, slug: o.Slug, token: []byte(o.Token), maxBody: o.MaxBodyBytes, wait: o.ApprovalWait, logger: o.Logger, mux: http.NewServeMux(), closing: make(chan struct{})}
	s.openAPIDoc = sync.OnceValues(func() ([]byte, error) { return api.OpenAPI(s.slug, h.Tools().Infos()) })
	handlers := s.handlers()
	// known holds the same routes, so that a request no route takes can be
	// told apart: 405 when its path exists for other methods, else 404.
	known := http.NewServeMux()
	for _, r := range api.Routes {
		fn, ok := handlers[r.Name]
		if !ok {
			return nil, fmt.Errorf("creating server: no handler for route %s", r.Name)
		}
		var h http.Handler = fn
		if !r.Public {
			h = s.authed(fn)
		}
		s.mux.Handle(r.Pattern(o.Slug), h)
		known.Handle(r.Pattern(o.Slug), h)
	}
	s.mux.Handle("/", s.authed(s.unrouted(known)))
	return s, nil
}

// handlers are the server's handlers, by api.Routes name.
func (s *Server) handlers() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"healthz":          s.healthz,
		"openapi":          s.openAPI,
		"listTools":        s.listTools,
		"callTool":         s.callTool,
		"createSession":    s.createSession,
		"listSessions":     s.listSessions,
		"getSession":       s.getSession,
		"sendMessage":      s.sendMessage,
		"cancelTurn":       s.cancelTurn,
		"events":           s.events,
		"resolveInSession": s.resolve,
		"resolve":          s.resolve,
		"listApprovals":    s.listApprovals,
		"callStatus":       s.callStatus,
		"listArtifacts":    s.listArtifacts,
		"getArtifact":      s.getArtifact,
	}
}

// Slug returns the server's slug.
func (s *Server) Slug() string { return s.slug }

// ServeHTTP serves the API and logs the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	s.mux.ServeHTTP(rec, r)
	ctx := r.Context()
	if !s.logger.Enabled(ctx, slog.LevelInfo) {
		return
	}
	method, path, status, took := slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.Int("status", rec.status), slog.Duration("duration", time.Since(start))
	if id := rec.Header()[CallIDHeader]; len(id) == 1 {
		s.logger.LogAttrs(ctx, slog.LevelInfo, "request", method, path, status, took, slog.String("call_id", id[0]))
		return
	}
	s.logger.LogAttrs(ctx, slog.LevelInfo, "request", method, path, status, took)
}

// CallIDHeader carries a direct call's id on its response. It is in
// canonical form, so that the header map can be used directly.
const CallIDHeader = "X-Agent-Call-Id"

// recorder remembers the status a handler wrote.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// authed requires the bearer token, compared in constant time.
func (s *Server) authed(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), s.token) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agent-sdk"`)
			writeError(w, &api.Error{Code: api.CodeUnauthorized,
				Message: "missing or wrong bearer token: send Authorization: Bearer <token> (see the host's state directory, file token)"})
			return
		}
		next(w, r)
	})
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.OKResponse{OK: true})
}

// unrouted answers a request no endpoint matched, in the API's error shape:
// 405 (with Allow) when the path exists for other methods, else 404.
func (s *Server) unrouted(known *http.ServeMux) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		probe := &statusProbe{header: http.Header{}}
		h, _ := known.Handler(r)
		h.ServeHTTP(probe, r)
		if probe.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", probe.header.Get("Allow"))
			writeError(w, api.Errorf(api.CodeMethodNotAllowed, "%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, probe.header.Get("Allow")))
			return
		}
		writeError(w, api.Errorf(api.CodeNotFound, "no endpoint %s %s; the API lives under /%s/v1", r.Method, r.URL.Path, s.slug))
	}
}

// statusProbe records what the mux's own 404/405 handler would answer.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header         { return p.header }
func (p *statusProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *statusProbe) WriteHeader(code int)        { p.status = code }

// Package serve puts a [host.Host] on HTTP: the API of package api (direct
// tool calls, sessions and their event streams, approvals, artifacts and
// the OpenAPI document), and the server tools over MCP at /<slug>/mcp,
// behind a bearer token, API keys with roles ([Principal],
// [Options.Roles]) or an OpenID Connect issuer's JWTs ([OIDCOptions]; with
// [Options.PublicURL], the MCP endpoint is an OAuth resource server too),
// with request logs. [Server]
// is the http.Handler; [ListenAndServe] runs it and drains in-flight calls
// on shutdown. It opens no database: the host is given its store. The
// agent binaries agent-sdk builds run it through package agentmain.
//
// A Go program can skip the CLI and serve its own tool set:
//
//	set, _ := tool.NewSet(myTools...)
//	st, _ := sqlite.Open(ctx, "state/agent.db")
//	h, _ := host.New(set, &host.Options{StateRoot: "state", Store: st})
//	ev, _ := evals.New(h, nil) // the routes /v1/evals; before h.Start
//	srv, _ := serve.New(h, &serve.Options{Slug: "myagent", Token: os.Getenv("AGENT_SDK_TOKEN"), Evals: ev})
//	err := serve.ListenAndServe(ctx, "127.0.0.1:3000", srv, nil)
package serve

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/textlog"
)

// Defaults of [Options].
const (
	// MaxBodyBytesDefault is the largest request body accepted by default.
	MaxBodyBytesDefault = 4 << 20
	// ApprovalWaitDefault is how long a direct call of a gated tool waits
	// for a decision before answering 202.
	ApprovalWaitDefault = 30 * time.Second
	// BodyTimeoutDefault is how long a request's body may take to arrive
	// after its headers.
	BodyTimeoutDefault = 30 * time.Second
	// MaxStreamsDefault is how many event streams (SSE subscribers) the
	// server follows at once.
	MaxStreamsDefault = 512
	// StreamWriteTimeoutDefault bounds each write of a streamed answer.
	StreamWriteTimeoutDefault = 30 * time.Second
	// UnauthBodyTimeoutDefault is how long the body of a request admitted
	// without the token (a signed channel route, the playground's sign-in)
	// may take to arrive after its headers.
	UnauthBodyTimeoutDefault = 5 * time.Second
	// MaxOverrunDefault is how many handlers of one tool's direct calls
	// may run on past their calls' answers before its direct calls are
	// refused.
	MaxOverrunDefault = 64
	// MaxUnauthBodiesDefault is how many bodies of requests admitted
	// without the token are read at once.
	MaxUnauthBodiesDefault = 32
)

// refusalGrace is how long the server still reads a request body it
// refused (401, 413) before closing the connection: long enough for what
// is already in flight to arrive, so that the client reads the answer
// rather than a reset, and no longer.
const refusalGrace = 250 * time.Millisecond

// Options configure a [Server].
type Options struct {
	// Slug prefixes every API path: /<slug>/v1/…. Required.
	Slug string
	// Token is the bearer token every endpoint but /healthz and /readyz requires.
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
	// BodyTimeout bounds how long a request's body may take to arrive
	// once its headers are read; a body still arriving then is answered
	// 408 request_timeout and its connection closed. Zero means
	// BodyTimeoutDefault, negative no limit.
	BodyTimeout time.Duration
	// MaxStreams bounds the event streams followed at once; one more is
	// answered 503 over_capacity. Zero means MaxStreamsDefault, negative
	// no limit.
	MaxStreams int
	// StreamWriteTimeout bounds each write of a streamed answer (an event
	// stream, a streamed direct call): a client that stops reading is cut
	// off after it, so that it holds neither a stream's place nor a call.
	// Zero means StreamWriteTimeoutDefault, negative no limit.
	StreamWriteTimeout time.Duration
	// IdempotencyTTL is how long the answer to a request made with an
	// Idempotency-Key is kept for its retries; zero means
	// IdempotencyTTLDefault (24 h).
	IdempotencyTTL time.Duration
	// MCPOrigins are the browser origins (scheme://host[:port]) allowed on
	// the MCP endpoint, /<slug>/mcp, besides loopback ones; a request with
	// any other Origin header is 403. Requests without Origin (MCP
	// clients that are not web pages) are not affected.
	MCPOrigins []string
	// MaxOverrun bounds, per tool, the handlers of direct calls still
	// running after their call was answered: past the tool's timeout (or
	// its client's end), the call is answered by its watchdog and its
	// connection closed, but a handler that ignores its context runs on.
	// At the bound, the tool's direct calls are answered 503 tool_overrun
	// until one returns; other tools are served. Each is logged with the
	// tool's name and counted in the metric agent.tool.overrunning (the
	// refusals in agent.tool.overrun_refused). Zero means
	// MaxOverrunDefault, negative no limit.
	MaxOverrun int
	// UnauthBodyTimeout bounds how long the body of a request admitted
	// without the token may take to arrive once its headers are read: a
	// signed channel route's (channel.Verify, channel.HMACSHA256), whose
	// verifier needs the body, and the playground's sign-in form's. A body
	// still arriving then is 408 request_timeout and its connection
	// closed. Zero means UnauthBodyTimeoutDefault, negative no limit
	// (BodyTimeout still holds).
	UnauthBodyTimeout time.Duration
	// MaxUnauthBodies bounds the bodies of requests admitted without the
	// token that are read at once; one more is answered 503 over_capacity
	// with Retry-After at once, its body unread, so that clients without
	// the token hold few connections however slowly they send. Such a
	// body is also limited to its route's size (channel.Route.MaxBodyBytes;
	// 8 KiB for the sign-in form), a declared Content-Length over it
	// refused before a byte is read. Zero means MaxUnauthBodiesDefault,
	// negative no limit.
	MaxUnauthBodies int
	// Roles are the host's roles, by name, over api.DefaultRoles (a role
	// of the same name replaces the default): agent.yaml's auth.roles. An
	// API key carries role names; a route needs its api.Route.Permission
	// of them. Nil: the defaults.
	Roles map[string][]api.Permission
	// Evals runs the eval batches of the routes /v1/evals (package evals:
	// evals.New on the same host). Nil: those routes answer no_jobs.
	Evals Evals
	// OIDC admits bearer JWTs from an OpenID Connect issuer besides the
	// token and API keys (agent.yaml's auth.oidc): a principal
	// oidc:<sub> with the roles of its roles claim. Nil: none.
	OIDC *OIDCOptions
	// PublicURL is the host's URL as clients reach it (serve
	// --public-url). With OIDC, it makes the MCP endpoint an OAuth
	// resource server: <public-url>/<slug>/mcp is its resource URL, the
	// aud its access tokens must carry, and its protected-resource
	// metadata is served (oidc_mcp.go).
	PublicURL string
}

// Server is the HTTP API of one agent's host.
type Server struct {
	host   *host.Host
	evals  Evals // Options.Evals, or noEvals
	slug   string
	token  []byte
	roles  roleTable // Options.Roles over api.DefaultRoles
	wait   time.Duration
	logger *slog.Logger
	mux    *http.ServeMux

	bearerBody  bodyRule            // how the body of a request with a credential is read
	unauth      *unauthBodies       // how the body of a request admitted without one is read (unauth.go)
	overruns    *overruns           // the direct calls' handlers running past their answer (overrun.go)
	maxStreams  int64               // Options.MaxStreams; 0: none
	streamWrite time.Duration       // Options.StreamWriteTimeout; 0: none
	streams     atomic.Int64        // event streams followed now
	public      map[string][]string // the public routes' mounted patterns, by path
	verified    map[string]bool     // channel routes with a verifier of their own, by pattern
	patterns    []string            // every pattern mounted on mux, in order

	closing   chan struct{} // closed when the server shuts down
	health    healthCache
	closeOnce sync.Once

	openAPIDoc func() ([]byte, error) // the OpenAPI document, made once: the tools do not change

	idemTTL time.Duration // Options.IdempotencyTTL

	oidc      *oidcAuth // Options.OIDC; nil without (oidc.go)
	keyCache  *keyCache // API keys read from the store lately (keys_cache.go)
	publicURL string    // Options.PublicURL, without a trailing /
	oauth     *mcpOAuth // the MCP endpoint's resource server; nil without a public URL (oidc_mcp.go)

	mcp    *mcpEndpoint
	pg     *playground  // the web UI at /<slug>/ (playground.go)
	direct *directRoute // the direct call's route, taken without the mux (directroute.go)
}

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
	o.BodyTimeout = orDefault(o.BodyTimeout, BodyTimeoutDefault)
	o.MaxStreams = orDefault(o.MaxStreams, MaxStreamsDefault)
	o.StreamWriteTimeout = orDefault(o.StreamWriteTimeout, StreamWriteTimeoutDefault)
	o.ApprovalWait = orDefault(o.ApprovalWait, ApprovalWaitDefault)
	s := &Server{host: h, slug: o.Slug, token: []byte(o.Token), wait: o.ApprovalWait, logger: o.Logger, mux: http.NewServeMux(), closing: make(chan struct{}), keyCache: newKeyCache(),
		idemTTL: o.IdempotencyTTL}
	s.bearerBody = bodyRule{max: o.MaxBodyBytes, timeout: o.BodyTimeout, timeoutName: "the host's body timeout"}
	s.unauth = newUnauthBodies(o, s.bearerBody)
	s.overruns = newOverruns(orDefault(o.MaxOverrun, MaxOverrunDefault), h.Tools(), o.Logger, h.Meter())
	s.maxStreams, s.public, s.verified = int64(o.MaxStreams), map[string][]string{}, map[string]bool{}
	s.streamWrite = o.StreamWriteTimeout
	s.evals = o.Evals
	roles, err := newRoleTable(o.Roles)
	if err != nil {
		return nil, fmt.Errorf("creating server: %w", err)
	}
	s.roles = roles
	s.publicURL = strings.TrimSuffix(o.PublicURL, "/")
	if o.OIDC != nil {
		if s.oidc, err = newOIDC(*o.OIDC, roles); err != nil {
			return nil, fmt.Errorf("creating server: %w", err)
		}
		if s.oauth, err = newMCPOAuth(o.PublicURL, o.Slug); err != nil {
			return nil, fmt.Errorf("creating server: %w", err)
		}
	}
	if s.evals == nil {
		s.evals = noEvals{}
	}
	s.openAPIDoc = sync.OnceValues(func() ([]byte, error) { return api.OpenAPI(s.slug, h.Tools().Infos()) })
	handlers := s.handlers()
	// known holds the same routes, so that a request no route takes can be
	// told apart: 405 when its path exists for other methods, else 404.
	// No handler checks the token: ServeHTTP does, before the mux can
	// answer anything (a path-cleaning redirect included).
	known := http.NewServeMux()
	for _, r := range api.Routes {
		fn, ok := handlers[r.Name]
		if !ok {
			return nil, fmt.Errorf("creating server: no handler for route %s", r.Name)
		}
		if r.Idempotent {
			fn = s.idempotently(fn)
		}
		if r.Permission != "" {
			fn = s.permit(r, fn)
		}
		pattern := r.Pattern(o.Slug)
		s.mux.Handle(pattern, fn)
		known.Handle(pattern, fn)
		if r.Name == "callTool" {
			s.direct = newDirectRoute(pattern, fn)
		}
		s.patterns = append(s.patterns, pattern)
		if r.Public {
			s.public[r.FullPath(o.Slug)] = append(s.public[r.FullPath(o.Slug)], pattern)
			s.unauth.limit(pattern, maxPublicBody)
		}
	}
	mcpEnd, err := newMCP(s, o.MCPOrigins)
	if err != nil {
		return nil, fmt.Errorf("creating server: %w", err)
	}
	s.mcp = mcpEnd
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		pattern := m + " /" + o.Slug + mcpPath
		s.mux.Handle(pattern, mcpEnd)
		known.Handle(pattern, mcpEnd)
		s.patterns = append(s.patterns, pattern)
	}
	s.mountOAuthMetadata(known)
	if err := s.mountChannels(known); err != nil {
		return nil, fmt.Errorf("creating server: %w", err)
	}
	if err := s.mountPlayground(known); err != nil {
		return nil, fmt.Errorf("creating server: %w", err)
	}
	s.mux.Handle("/", s.unrouted(known))
	s.patterns = append(s.patterns, "/")
	return s, nil
}

// handlers are the server's handlers, by api.Routes name.
func (s *Server) handlers() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"healthz":          s.healthz,
		"readyz":           s.readyz,
		"openapi":          s.openAPI,
		"listTools":        s.listTools,
		"callTool":         s.callTool,
		"createSession":    s.createSession,
		"listSessions":     s.listSessions,
		"getSession":       s.getSession,
		"sendMessage":      s.sendMessage,
		"cancelTurn":       s.cancelTurn,
		"compactSession":   s.compactSession,
		"events":           s.events,
		"resolveInSession": s.resolve,
		"resolve":          s.resolve,
		"listApprovals":    s.listApprovals,
		"callStatus":       s.callStatus,
		"usage":            s.usage,
		"listArtifacts":    s.listArtifacts,
		"getArtifact":      s.getArtifact,
		"runnerClaim":      s.runnerClaim,
		"runnerReport":     s.runnerReport,
		"runnerAdmit":      s.runnerAdmit,
		"runnerPermission": s.runnerPermission,
		"listSchedules":    s.listSchedules,
		"runSchedule":      s.runSchedule,
		"runEval":          s.runEval,
		"listEvals":        s.listEvals,
		"getEval":          s.getEval,
		"createKey":        s.createKey,
		"listKeys":         s.listKeys,
		"revokeKey":        s.revokeKey,
		"listAudit":        s.listAudit,
	}
}

// Slug returns the server's slug.
func (s *Server) Slug() string { return s.slug }

// ServeHTTP serves the API and logs the request. Before the mux sees a
// request, it checks the token (every route but the public ones) and reads
// the body under the limits ([Server.admit]).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	rec.Header()["X-Content-Type-Options"] = nosniff
	if r2, ok := s.admit(rec, r); ok {
		r = r2
		if _, ok := s.direct.name(r); ok {
			r.Pattern = s.direct.pattern
			s.direct.handler(rec, r)
		} else {
			s.mux.ServeHTTP(rec, r)
		}
	}
	ctx := r.Context()
	if !s.logger.Enabled(ctx, slog.LevelInfo) {
		return
	}
	now, callID := time.Now(), ""
	if id := rec.Header()[CallIDHeader]; len(id) == 1 {
		callID = id[0]
	}
	if h, ok := s.logger.Handler().(*textlog.Handler); ok {
		// agent-sdk serve's handler writes the line without a record.
		_ = h.Request(now, r.Method, r.URL.Path, rec.status, now.Sub(start), callID)
		return
	}
	// The record is handed to the handler directly, as LogAttrs would,
	// without the caller's program counter: LogAttrs takes it with
	// runtime.Callers on every request, for a source position (serve's own)
	// that tells nobody anything.
	rl := slog.NewRecord(now, slog.LevelInfo, "request", 0)
	rl.AddAttrs(slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.Int("status", rec.status), slog.Duration("duration", now.Sub(start)))
	if callID != "" {
		rl.AddAttrs(slog.String("call_id", callID))
	}
	_ = s.logger.Handler().Handle(ctx, rl) // as LogAttrs, which drops the handler's error
}

// nosniff is the X-Content-Type-Options value of every answer, shared
// rather than made for each (net/http only reads it).
var nosniff = []string{"nosniff"}

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

// admit lets a request through to the mux, as the principal it acts for
// (an API key's holder rides the returned request's context), or answers
// it: 401 without the token, a usable API key or the playground's cookie
// (before anything else, and without reading the body; 403 for the
// cookie without its CSRF token), 413 for
// a declared length over the limit (without reading the body either), and
// else reads the body whole within the body timeout (413, 408 or 400 when
// it cannot), so that no handler ever waits for a client. A route admitted
// without a credential (public, or a channel's with a verifier of its own)
// has its body read under tighter limits ([Server.admitUnauth]). A refusal
// closes the connection.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	unauth := s.isPublic(r)
	if !unauth && !s.authorized(r) && !s.runnerAuthorized(r) {
		switch p, isKey, err := s.keyPrincipal(r.Context(), r.Header); {
		case errors.Is(err, errBadKey) && s.verifiedRoute(r):
			unauth = true // a channel route's own verifier decides
		case err != nil:
			if errors.Is(err, errBadKey) {
				w.Header().Set("WWW-Authenticate", s.challenge(r, `error="invalid_token"`))
			}
			refuse(w, r, err, refusalGrace)
			return r, false
		case isKey:
			r = withPrincipal(r, p)
		default:
			switch p, isJWT, err := s.jwtPrincipal(r); {
			case isJWT && err == nil:
				r = withPrincipal(r, p)
			case isJWT && s.verifiedRoute(r):
				unauth = true // a channel route's own verifier decides
			case isJWT:
				s.refuseJWT(w, r, err)
				return r, false
			default:
				if unauth = s.verifiedRoute(r); !unauth {
					var ok bool
					if r, ok = s.admitCookie(w, r); !ok {
						return r, false
					}
				}
			}
		}
	}
	if unauth {
		return r, s.admitUnauth(w, r)
	}
	return r, s.admitBody(w, r, s.bearerBody)
}

// admitCookie lets r, without a valid bearer token, through on the
// playground's cookie, or refuses it: 401, or 403 for the cookie without
// its CSRF token.
func (s *Server) admitCookie(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	switch p, ok, err := s.cookieAdmits(r); {
	case err != nil: // the cookie without its CSRF token (403), or the store failed
		refuse(w, r, err, refusalGrace)
		return r, false
	case !ok:
		w.Header().Set("WWW-Authenticate", s.challenge(r, ""))
		refuse(w, r, &api.Error{Code: api.CodeUnauthorized,
			Message: "missing or wrong bearer token: send Authorization: Bearer <token> (see the host's state directory, file token)"}, refusalGrace)
		return r, false
	case p.ID != tokenPrincipalID:
		return withPrincipal(r, p), true
	}
	return r, true
}

// admitBody reads r's body under rule before the mux sees r (413 at once
// for a declared length over the limit), or refuses r.
func (s *Server) admitBody(w http.ResponseWriter, r *http.Request, rule bodyRule) bool {
	if r.ContentLength > rule.max {
		refuse(w, r, api.AsError(&http.MaxBytesError{Limit: rule.max}), refusalGrace)
		return false
	}
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return true
	}
	body, err := preread(w, r, rule)
	if err != nil {
		grace := refusalGrace
		if api.AsError(err).Code == api.CodeRequestTimeout {
			grace = 0 // the client had its time
		}
		refuse(w, r, err, grace)
		return false
	}
	r.Body = body
	return true
}

// refuse answers err and closes the connection, reading what is left of
// the request body for grace at most. Under ListenAndServe's connection
// cap, the connection no longer counts as serving a request.
func refuse(w http.ResponseWriter, r *http.Request, err error, grace time.Duration) {
	w.Header().Set("Connection", "close") // the server neither reads the body first nor keeps the connection
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(grace))
	draining(r.Context())
	writeError(w, err)
}

// isPublic reports whether r is for a public route (/healthz): exactly its
// path, so that no redirect to it is answered without the token either.
func (s *Server) isPublic(r *http.Request) bool {
	patterns, ok := s.public[r.URL.Path]
	if !ok {
		return false
	}
	_, pattern := s.mux.Handler(r)
	return slices.Contains(patterns, pattern)
}

// authorized reports whether r carries the bearer token, compared in
// constant time. The scheme is case-insensitive (RFC 9110, 11.1).
func (s *Server) authorized(r *http.Request) bool {
	cred, ok := bearerCredential(r.Header)
	return ok && subtle.ConstantTimeCompare([]byte(cred), s.token) == 1
}

// bearerCredential returns the credential of a request's Authorization:
// Bearer header; the scheme is case-insensitive (RFC 9110, 11.1).
func bearerCredential(h http.Header) (string, bool) {
	scheme, cred, ok := strings.Cut(h.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(cred), true
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

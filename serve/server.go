// Package serve puts a [host.Host] on HTTP: direct tool calls and the tool
// listing, behind a bearer token, with request logs. [Server] is the
// http.Handler; [ListenAndServe] runs it and drains in-flight calls on
// shutdown; [Main] is the entry point of agent binaries built by the
// agent-sdk CLI.
//
// A Go program can skip the CLI and serve its own tool set:
//
//	set, _ := tool.NewSet(myTools...)
//	h, _ := host.New(set, &host.Options{StateRoot: "state"})
//	srv, _ := serve.New(h, &serve.Options{Slug: "myagent", Token: os.Getenv("AGENT_SDK_TOKEN")})
//	err := serve.ListenAndServe(ctx, "127.0.0.1:3000", srv, nil)
package serve

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/tool"
)

// MaxBodyBytesDefault is the largest request body accepted by default.
const MaxBodyBytesDefault = 4 << 20

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
}

var validSlug = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// New returns the HTTP API for h.
func New(h *host.Host, opts *Options) (*Server, error) {
	if h == nil {
		return nil, errors.New("creating server: the host is nil")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if !validSlug.MatchString(o.Slug) {
		return nil, fmt.Errorf("creating server: invalid slug %q: use 1 to 64 letters, digits, '.', '_' or '-'", o.Slug)
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
	prefix := "/" + o.Slug + "/v1"
	routes := map[string]http.Handler{
		"GET /healthz":                                        http.HandlerFunc(s.healthz),
		"GET " + prefix + "/tools":                            s.authed(s.listTools),
		"POST " + prefix + "/tools/{name}":                    s.authed(s.callTool),
		"POST " + prefix + "/session":                         s.authed(s.createSession),
		"GET " + prefix + "/sessions":                         s.authed(s.listSessions),
		"GET " + prefix + "/session/{id}":                     s.authed(s.getSession),
		"POST " + prefix + "/session/{id}/messages":           s.authed(s.sendMessage),
		"POST " + prefix + "/session/{id}/cancel":             s.authed(s.cancelTurn),
		"GET " + prefix + "/session/{id}/events":              s.authed(s.events),
		"POST " + prefix + "/session/{id}/approvals/{callId}": s.authed(s.resolve),
		"POST " + prefix + "/approvals/{callId}":              s.authed(s.resolve),
		"GET " + prefix + "/approvals":                        s.authed(s.listApprovals),
		"GET " + prefix + "/calls/{callId}":                   s.authed(s.callStatus),
		"GET " + prefix + "/session/{id}/artifacts":           s.authed(s.listArtifacts),
		"GET " + prefix + "/session/{id}/artifacts/{name...}": s.authed(s.getArtifact),
	}
	// known holds the same routes, so that a request no route takes can be
	// told apart: 405 when its path exists for other methods, else 404.
	known := http.NewServeMux()
	for pattern, h := range routes {
		s.mux.Handle(pattern, h)
		known.Handle(pattern, h)
	}
	s.mux.Handle("/", s.authed(s.unrouted(known)))
	return s, nil
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
			writeError(w, &apiError{Status: http.StatusUnauthorized, Code: "unauthorized",
				Message: "missing or wrong bearer token: send Authorization: Bearer <token> (see the host's state directory, file token)"})
			return
		}
		next(w, r)
	})
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
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
			writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
				Message: fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, probe.header.Get("Allow"))})
			return
		}
		writeError(w, &apiError{Status: http.StatusNotFound, Code: "not_found",
			Message: fmt.Sprintf("no endpoint %s %s; the API lives under /%s/v1", r.Method, r.URL.Path, s.slug)})
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

// toolList is the body of GET /<slug>/v1/tools.
type toolList struct {
	OK    bool        `json:"ok"`
	Tools []tool.Info `json:"tools"`
}

func (s *Server) listTools(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, toolList{OK: true, Tools: s.host.Tools().Infos()})
}

// CallRequest is the body of POST /<slug>/v1/tools/<name>.
type CallRequest struct {
	Input     json.RawMessage `json:"input"`
	SessionID string          `json:"sessionId,omitempty"`
}

// CallResponse is the body of a successful direct call.
type CallResponse struct {
	OK bool `json:"ok"`
	host.Outcome
}

func (s *Server) callTool(w http.ResponseWriter, r *http.Request) {
	body, apiErr := s.readBody(w, r)
	if apiErr == nil {
		var req CallRequest
		if req, apiErr = parseCallRequest(body); apiErr == nil {
			out, err := s.host.CallTool(r.Context(), r.PathValue("name"), req.Input, &host.CallOptions{SessionID: req.SessionID, Wait: s.wait, Principal: principal})
			var pending *host.ApprovalPendingError
			if errors.As(err, &pending) {
				w.Header()[CallIDHeader] = []string{pending.CallID}
				writeJSON(w, http.StatusAccepted, map[string]any{"ok": true, "status": "approval_pending", "callId": pending.CallID,
					"approve": "POST /" + s.slug + "/v1/approvals/" + pending.CallID + ` {"approved": true|false, "reason": "…"}`,
					"outcome": "GET /" + s.slug + "/v1/calls/" + pending.CallID})
				return
			}
			if err != nil {
				apiErr = callError(err)
			} else {
				w.Header()[CallIDHeader] = []string{out.CallID}
				writeOutcome(w, out)
				return
			}
		}
	}
	writeError(w, apiErr)
}

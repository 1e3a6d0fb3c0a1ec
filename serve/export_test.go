package serve

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"

	"github.com/agentsdk/agentsdk/api"
)

// MountedPatterns lists the patterns s mounts on its mux, in order: the
// router's own list, for tests that must cover every route.
func MountedPatterns(s *Server) []string { return slices.Clone(s.patterns) }

// SetMCPFastPath turns the MCP endpoint's fast path on or off.
func SetMCPFastPath(s *Server, on bool) { s.mcp.noFast = !on }

// MCPFastHits counts the requests the MCP fast path answered.
func MCPFastHits(s *Server) int64 { return s.mcp.fastHits.Load() }

// Verified reports whether a mounted pattern is a channel route with a
// verifier of its own (admitted by it, not by the token).
func Verified(s *Server, pattern string) bool { return s.verified[pattern] }

// Public reports whether a mounted pattern is public: admitted without the
// token (/healthz, and the playground's sign-in, assets and page, which
// checks its cookie itself).
func Public(s *Server, pattern string) bool {
	for _, patterns := range s.public {
		if slices.Contains(patterns, pattern) {
			return true
		}
	}
	return false
}

// PlaygroundCSRF returns the CSRF token the playground's page carries for
// a session cookie's value.
func PlaygroundCSRF(s *Server, cookie string) string {
	sid, _, _ := strings.Cut(cookie, ".")
	return s.pg.csrf(sid)
}

// SetDirectRoute turns the direct call's shortcut past the mux on or off.
func SetDirectRoute(s *Server, on bool) {
	if on {
		// The handler the mux mounts for a call (made idempotent there).
		pattern := s.callToolPattern()
		_, path, _ := strings.Cut(strings.Replace(pattern, "{name}", "t", 1), " ")
		h, _ := s.mux.Handler(httptest.NewRequest(http.MethodPost, path, nil))
		s.direct = newDirectRoute(pattern, h.ServeHTTP)
	} else {
		s.direct = nil
	}
}

// DirectRouteTakes reports whether the direct call's shortcut takes r.
func DirectRouteTakes(s *Server, r *http.Request) bool {
	_, ok := s.direct.name(r)
	return ok
}

func (s *Server) callToolPattern() string {
	for _, r := range api.Routes {
		if r.Name == "callTool" {
			return r.Pattern(s.slug)
		}
	}
	return ""
}

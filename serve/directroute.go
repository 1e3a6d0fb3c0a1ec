package serve

import (
	"net/http"
	"strings"
)

// directRoute routes a direct tool call, the API's hot path, without the
// mux's pattern matching. A POST to /<slug>/v1/tools/<name> whose path is
// clean and unescaped, and whose name has only the characters a tool name
// can have, goes straight to the route's handler (callTool, made idempotent
// as the route says), as the mux would send it there.
// Every other request, a call with an odd path included, goes through the
// mux, which redirects, refuses or routes it as it always has.
type directRoute struct {
	prefix  string           // "/<slug>/v1/tools/"
	pattern string           // the route's pattern, set as r.Pattern as the mux would
	handler http.HandlerFunc // what the mux mounts at pattern
}

// newDirectRoute returns the direct route of the callTool route's mounted
// pattern and handler, or nil (no shortcut) if the pattern is not
// "POST /…/{name}".
func newDirectRoute(pattern string, handler http.HandlerFunc) *directRoute {
	path, ok := strings.CutPrefix(pattern, http.MethodPost+" ")
	if !ok {
		return nil
	}
	prefix, ok := strings.CutSuffix(path, "{name}")
	if !ok || !strings.HasPrefix(prefix, "/") || !strings.HasSuffix(prefix, "/") || strings.ContainsAny(prefix, "{}") {
		return nil
	}
	return &directRoute{prefix: prefix, pattern: pattern, handler: handler}
}

// name returns the tool name of a request the route takes.
func (d *directRoute) name(r *http.Request) (string, bool) {
	if d == nil || r.Method != http.MethodPost || r.URL.RawPath != "" {
		return "", false
	}
	name, ok := strings.CutPrefix(r.URL.Path, d.prefix)
	if !ok || name == "" || len(name) > 64 {
		return "", false
	}
	for i := 0; i < len(name); i++ { // no '/', no '.', nothing to clean or unescape
		if c := name[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return "", false
		}
	}
	return name, true
}

// toolName is the name of the tool a callTool request calls.
func (s *Server) toolName(r *http.Request) string {
	if name, ok := s.direct.name(r); ok {
		return name
	}
	return r.PathValue("name")
}

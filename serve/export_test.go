package serve

import "slices"

// MountedPatterns lists the patterns s mounts on its mux, in order: the
// router's own list, for tests that must cover every route.
func MountedPatterns(s *Server) []string { return slices.Clone(s.patterns) }

// SetMCPFastPath turns the MCP endpoint's fast path on or off.
func SetMCPFastPath(s *Server, on bool) { s.mcp.noFast = !on }

// MCPFastHits counts the requests the MCP fast path answered.
func MCPFastHits(s *Server) int64 { return s.mcp.fastHits.Load() }

package serve

import "slices"

// MountedPatterns lists the patterns s mounts on its mux, in order: the
// router's own list, for tests that must cover every route.
func MountedPatterns(s *Server) []string { return slices.Clone(s.patterns) }

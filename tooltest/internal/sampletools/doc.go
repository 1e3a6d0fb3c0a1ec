// Package sampletools defines tools the way an agent's agent/tools does,
// one a file, for tooltest's own tests; a test imports it for its
// definitions (tool.Registered).
package sampletools

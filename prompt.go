// Package agentsdk is the root of the Agent SDK for Go: typed tools (package
// [github.com/agentsdk/agentsdk/tool]), a host that runs them (package
// [github.com/agentsdk/agentsdk/host]) and helpers shared by both.
package agentsdk

import "strings"

// Prompt returns s with its blank first and last lines removed and the
// indentation common to its non-blank lines stripped, so that long
// descriptions and messages can sit indented in Go source:
//
//	Description: agentsdk.Prompt(`
//		Inspect a pull request before approval.
//		Prefer this over guessing from the title alone.
//	`),
//
// Blank lines inside the text are kept (as empty lines); trailing spaces and
// tabs on each line are removed. Indentation is compared byte for byte, so a
// tab and a space are different indentation.
func Prompt(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	if len(lines) > 0 && lines[0] == "" {
		lines = lines[1:]
	}
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	prefix, first := "", true
	for _, l := range lines {
		if l == "" {
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			prefix, first = indent, false
			continue
		}
		prefix = commonPrefix(prefix, indent)
	}
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, prefix)
	}
	return strings.Join(lines, "\n")
}

func commonPrefix(a, b string) string {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return a[:i]
}

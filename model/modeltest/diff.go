package modeltest

import (
	"fmt"
	"strings"
)

// flatten is a normalised request as lines that each say where they are
// from ("system: …", "messages[2] user: …"), for diffs that name what
// changed.
func flatten(r *request) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for _, l := range r.System {
		add("system: %q", l)
	}
	for i, t := range r.Tools {
		add("tools[%d]: %s", i, t.Name)
		for _, l := range t.Description {
			add("tools[%d] %s description: %q", i, t.Name, l)
		}
		add("tools[%d] %s inputSchema: %s", i, t.Name, jsonLine(t.InputSchema, t.InputSchemaText))
	}
	if r.MaxTokens != 0 {
		add("maxTokens: %d", r.MaxTokens)
	}
	for i, m := range r.Messages {
		at := fmt.Sprintf("messages[%d] %s", i, m.Role)
		if len(m.Text) == 0 && len(m.Reasoning) == 0 && len(m.ToolCalls) == 0 && len(m.ToolResults) == 0 {
			add("%s: (empty)", at)
		}
		for _, rs := range m.Reasoning {
			for _, l := range rs.Text {
				add("%s reasoning: %q", at, l)
			}
			if rs.Signature != "" {
				add("%s reasoning signature: %s", at, short(rs.Signature))
			}
			if rs.Redacted != "" {
				add("%s reasoning redacted: %s", at, short(rs.Redacted))
			}
		}
		for _, l := range m.Text {
			add("%s: %q", at, l)
		}
		for _, c := range m.ToolCalls {
			add("%s calls %s %s (id %s)", at, c.Name, jsonLine(c.Input, c.InputText), c.ID)
		}
		for _, tr := range m.ToolResults {
			what := "result"
			if tr.IsError {
				what = "error"
			}
			if len(tr.Content) == 0 && len(tr.Images) == 0 {
				add("%s %s of %s: (empty)", at, what, tr.CallID)
			}
			for _, l := range tr.Content {
				add("%s %s of %s: %q", at, what, tr.CallID, l)
			}
			for _, img := range tr.Images {
				add("%s %s of %s: image %s, %d bytes, sha256 %s", at, what, tr.CallID, img.MimeType, img.Bytes, short(img.SHA256))
			}
		}
	}
	return out
}

// jsonLine is a JSON value or text of the cassette on one line.
func jsonLine(j []byte, text *string) string {
	if text != nil {
		return fmt.Sprintf("(not JSON) %q", *text)
	}
	if len(j) == 0 {
		return "(none)"
	}
	return string(bytesOf(j, nil))
}

// short is s cut to 16 bytes, for opaque data.
func short(s string) string {
	if len(s) > 16 {
		return s[:16] + "…"
	}
	return s
}

// maxCells bounds the table of a diff's middle part (past the common
// prefix and suffix); a larger one is shown as all removed, then added.
const maxCells = 4 << 20

// op is a line of an edit script: ' ' kept, '-' removed, '+' added.
type op struct {
	kind byte
	line string
}

// edits is an edit script from a to b: the longest common subsequence of
// the part past their common prefix and suffix.
func edits(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var out []op
	for _, l := range a[:pre] {
		out = append(out, op{' ', l})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if (len(ma)+1)*(len(mb)+1) > maxCells {
		for _, l := range ma {
			out = append(out, op{'-', l})
		}
		for _, l := range mb {
			out = append(out, op{'+', l})
		}
	} else {
		// lcs[i][j] is the LCS of ma[i:] and mb[j:].
		w := len(mb) + 1
		lcs := make([]int32, (len(ma)+1)*w)
		for i := len(ma) - 1; i >= 0; i-- {
			for j := len(mb) - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
				} else {
					lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(ma) || j < len(mb) {
			switch {
			case i < len(ma) && j < len(mb) && ma[i] == mb[j]:
				out = append(out, op{' ', ma[i]})
				i++
				j++
			case i < len(ma) && (j == len(mb) || lcs[(i+1)*w+j] >= lcs[i*w+j+1]):
				out = append(out, op{'-', ma[i]})
				i++
			default:
				out = append(out, op{'+', mb[j]})
				j++
			}
		}
	}
	for _, l := range a[len(a)-suf:] {
		out = append(out, op{' ', l})
	}
	return out
}

// distance is the number of lines removed and added from a to b.
func distance(a, b []string) int {
	n := 0
	for _, o := range edits(a, b) {
		if o.kind != ' ' {
			n++
		}
	}
	return n
}

// diffContext is the number of unchanged lines shown around a change;
// diffLines the most lines a diff shows.
const (
	diffContext = 2
	diffLines   = 60
)

// diff shows the lines that differ from a to b, with a few lines around
// each change, "…" between them.
func diff(a, b []string) string {
	ops := edits(a, b)
	show := make([]bool, len(ops))
	for i, o := range ops {
		if o.kind == ' ' {
			continue
		}
		for k := max(0, i-diffContext); k <= min(len(ops)-1, i+diffContext); k++ {
			show[k] = true
		}
	}
	var sb strings.Builder
	shown, gap := 0, false
	for i, o := range ops {
		if !show[i] {
			gap = true
			continue
		}
		if shown == diffLines {
			rest := 0
			for _, o := range ops[i:] {
				if o.kind != ' ' {
					rest++
				}
			}
			if rest > 0 {
				fmt.Fprintf(&sb, "… and %d more lines differ\n", rest)
			}
			break
		}
		if gap && shown > 0 {
			sb.WriteString("  …\n")
		}
		gap = false
		sb.WriteByte(o.kind)
		sb.WriteByte(' ')
		sb.WriteString(o.line)
		sb.WriteByte('\n')
		shown++
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

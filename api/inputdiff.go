package api

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"

	"github.com/agentsdk/agentsdk/tool"
)

// ApprovalVote is one principal's approval of a call that needs several
// (tool.ApprovalVote).
type ApprovalVote = tool.ApprovalVote

// InputChange is one difference between a call's input as asked and as an
// approver edited it: at Path (in the notation of a violation, rooted at
// "input": input.env, input.items), From is the value asked for and To the
// value that runs; a side that is absent has no value there (the field
// was added or removed).
type InputChange struct {
	Path string          `json:"path"`
	From json.RawMessage `json:"from,omitempty"`
	To   json.RawMessage `json:"to,omitempty"`
}

// maxChanges bounds the changes DiffInput lists; past it the last one is
// the object holding the rest, whole.
const maxChanges = 100

// DiffInput lists how to differs from from, field by field through
// objects (arrays and other values compare whole, their JSON compacted),
// in path order; nil when they are the same JSON value. Input that is not
// JSON compares whole, as text.
func DiffInput(from, to json.RawMessage) []InputChange {
	var out []InputChange
	diffValue("input", from, to, &out)
	return out
}

func diffValue(path string, from, to json.RawMessage, out *[]InputChange) {
	var a, b map[string]json.RawMessage
	if len(*out) < maxChanges && json.Unmarshal(from, &a) == nil && json.Unmarshal(to, &b) == nil && a != nil && b != nil {
		keys := slices.Sorted(maps.Keys(a))
		for k := range b {
			if _, ok := a[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			diffValue(path+fieldPath(k), a[k], b[k], out)
		}
		return
	}
	cf, ct := compactJSON(from), compactJSON(to)
	if bytes.Equal(cf, ct) {
		return
	}
	*out = append(*out, InputChange{Path: path, From: cf, To: ct})
}

// fieldPath is ".name", or `["odd name"]` for a key that is not an
// identifier.
func fieldPath(k string) string {
	ident := k != ""
	for i, r := range k {
		if !(r == '_' || r == '$' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			ident = false
			break
		}
	}
	if ident {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

// compactJSON is v compacted, or v itself when it is not JSON (nil when
// absent).
func compactJSON(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return nil
	}
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		s, _ := json.Marshal(string(v))
		return s
	}
	return buf.Bytes()
}

package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
)

// DiffInput lists changes field by field through objects, in path order,
// arrays and values whole, JSON compacted; an added or removed field has
// one side absent; the same JSON is no change.
func TestDiffInput(t *testing.T) {
	for _, c := range []struct {
		name, from, to string
		want           []string
	}{
		{"same", `{"a": 1, "b": [1, 2]}`, `{"b":[1,2],"a":1}`, nil},
		{"a value", `{"env":"production","version":"v42"}`, `{"env":"production","version":"v41"}`, []string{`input.version "v42" → "v41"`}},
		{"nested", `{"a":{"b":1,"c":2}}`, `{"a":{"b":1,"c":3}}`, []string{`input.a.c 2 → 3`}},
		{"added and removed", `{"a":1}`, `{"b":2}`, []string{`input.a 1 → `, `input.b  → 2`}},
		{"an array whole", `{"xs":[1,2]}`, `{"xs":[1, 3]}`, []string{`input.xs [1,2] → [1,3]`}},
		{"an odd key", `{"a b":1}`, `{"a b":2}`, []string{`input["a b"] 1 → 2`}},
		{"not objects", `1`, `"x"`, []string{`input 1 → "x"`}},
		{"not JSON", `{`, `{}`, []string{`input "{" → {}`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, ch := range api.DiffInput(json.RawMessage(c.from), json.RawMessage(c.to)) {
				got = append(got, ch.Path+" "+string(ch.From)+" → "+string(ch.To))
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("DiffInput(%s, %s):\n%s\nwant:\n%s", c.from, c.to, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

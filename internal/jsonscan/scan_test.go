package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

var seeds = []string{
	`{}`, `[]`, `{"a":1}`, ` {"a" : [1, -2.5e+3, "x\n", true, false, null, {}]} `, `"\u00e9\ud83d\ude00"`,
	`{"a":}`, `{"a":1,}`, `[1,]`, `01`, `1.`, `-`, `1e`, `"\x"`, `"\u12"`, "\"a\tb\"", `{"a" 1}`, `nul`, `[1 2]`, `{} {}`,
	strings.Repeat("[", 100) + strings.Repeat("]", 100),
}

// Skip accepts exactly the texts encoding/json accepts.
func FuzzSkipAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := Scanner{Data: data}
		s.Space()
		ours := s.Skip() && s.AtEnd()
		if theirs := json.Valid(data); ours != theirs {
			t.Fatalf("Skip says %v, json.Valid says %v, for %q", ours, theirs, data)
		}
	})
}

func TestObject(t *testing.T) {
	var keys, values []string
	err := Object([]byte(` { "a" : [1, 2] , "b\n":"x", "c":{"d":null} } `), func(key []byte, plain bool, value []byte) error {
		keys = append(keys, string(key)+map[bool]string{true: "", false: "*"}[plain])
		values = append(values, string(value))
		return nil
	})
	if err != nil || strings.Join(keys, ",") != `a,b\n*,c` || strings.Join(values, "|") != `[1, 2]|"x"|{"d":null}` {
		t.Errorf("keys %v, values %v, err %v", keys, values, err)
	}
	for _, bad := range []string{`[]`, `{"a":1} x`, `{"a":1`, `{a:1}`, ``} {
		if err := Object([]byte(bad), func([]byte, bool, []byte) error { return nil }); err == nil {
			t.Errorf("Object(%q) succeeded", bad)
		}
	}
}

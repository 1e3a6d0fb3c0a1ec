package fakemodel

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

// walkSeeds are bodies as the SDKs write them, and JSON that a careless
// walk gets wrong: escaped quotes and backslashes, braces in strings,
// white space, nesting, empty containers, repeated keys.
var walkSeeds = []string{
	`{"max_tokens":100,"messages":[{"content":[{"text":"hi","cache_control":{"type":"ephemeral"},"type":"text"}],"role":"user"}],"model":"claude-test","stream":true}`,
	`{"messages":[{"content":"a \"quoted\" {brace} [bracket] \\","role":"user"}],"tools":[{"name":"t","input_schema":{"type":"object","properties":{}}}]}`,
	` { "a" : [ 1 , -2.5e3 , true , false , null , "x\\\"y" , { } , [ ] ] , "b\u00e9" : { "c" : "\\\\" } } `,
	`{"k":"\\\\\"","k":"last","e":{},"f":[]}`,
	`{}`, `[]`, `[{"a":[[[]]]},"}"]`,
}

// FuzzWalk: members and elements find what encoding/json decodes, for any
// valid JSON object or array.
func FuzzWalk(f *testing.F) {
	for _, s := range walkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var wantObj map[string]json.RawMessage
		if json.Unmarshal(b, &wantObj) == nil && wantObj != nil {
			got := map[string]json.RawMessage{}
			if !members(b, func(k string, v []byte) { got[k] = v }) {
				t.Fatalf("members failed on %s", b)
			}
			if !maps.EqualFunc(got, wantObj, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
				t.Fatalf("members of %s: %q, want %q", b, got, wantObj)
			}
		}
		var wantArr []json.RawMessage
		if json.Unmarshal(b, &wantArr) == nil && wantArr != nil {
			var got []json.RawMessage
			if !elements(b, func(v []byte) { got = append(got, v) }) {
				t.Fatalf("elements failed on %s", b)
			}
			if !slices.EqualFunc(got, wantArr, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
				t.Fatalf("elements of %s: %q, want %q", b, got, wantArr)
			}
		}
	})
}

// TestWalkRequests: the walk of a request reads what decoding it does.
func TestWalkRequests(t *testing.T) {
	t.Parallel()
	for _, s := range walkSeeds[:2] {
		var want, got anthropicRequest
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatal(err)
		}
		if !walkAnthropic([]byte(s), &got) {
			t.Fatalf("the walk of %s failed", s)
		}
		w, _ := json.Marshal(want)
		g, _ := json.Marshal(got)
		if !bytes.Equal(w, g) {
			t.Errorf("walked %s\nwant    %s", g, w)
		}
		var wantO, gotO openaiRequest
		json.Unmarshal([]byte(s), &wantO)
		if !walkOpenAI([]byte(s), &gotO) {
			t.Fatalf("the walk of %s failed", s)
		}
		w, _ = json.Marshal(wantO)
		g, _ = json.Marshal(gotO)
		if !bytes.Equal(w, g) {
			t.Errorf("walked %s\nwant    %s", g, w)
		}
	}
}

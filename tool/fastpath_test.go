package tool

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

type fastAddress struct {
	Street string `json:"street" jsonschema:"minLength=1,maxLength=20"`
	Zip    string `json:"zip,omitempty" jsonschema:"pattern=^[0-9]{5}$"`
}

type fastInput struct {
	URL     string            `json:"url" jsonschema:"format=uri"`
	When    string            `json:"when,omitempty" jsonschema:"format=date-time"`
	Mode    string            `json:"mode,omitempty" jsonschema:"enum=a,enum=b"`
	Count   int               `json:"count,omitempty" jsonschema:"minimum=1,maximum=10"`
	Ratio   float64           `json:"ratio,omitempty" jsonschema:"exclusiveMinimum=0,exclusiveMaximum=1"`
	On      *bool             `json:"on"`
	Home    *fastAddress      `json:"home,omitempty"`
	Visits  []fastAddress     `json:"visits,omitempty" jsonschema:"maxItems=3"`
	Labels  map[string]int    `json:"labels,omitempty"`
	Meta    map[string]string `json:"meta,omitempty"`
	Any     any               `json:"any,omitempty"`
	Numbers []float64         `json:"numbers,omitempty" jsonschema:"minItems=1"`
}

// fastSchemas are the schemas the differential tests run: inferred ones,
// which the fast path must handle, and a raw one with type unions.
func fastSchemas(t testing.TB) []*compiledSchema {
	var out []*compiledSchema
	for _, raw := range []json.RawMessage{
		mustInfer(t, SchemaOf[fastInput]()),
		mustInfer(t, SchemaOf[fastAddress]()),
		json.RawMessage(`{"type":"object","properties":{"v":{"type":["string","null"]},"n":{"type":"integer"},"s":{}},"required":["v"]}`),
	} {
		cs, err := compileSchema(raw)
		if err != nil {
			t.Fatal(err)
		}
		if cs.fast == nil {
			t.Fatalf("the fast path does not handle %s", raw)
		}
		out = append(out, cs)
	}
	return out
}

func mustInfer(t testing.TB, s Schema) json.RawMessage {
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.raw
}

// fullyValid is the full validator's verdict.
func fullyValid(cs *compiledSchema, data []byte) bool {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	return err == nil && cs.sch.Validate(doc) == nil
}

var fastSeeds = []string{
	`{"url":"https://x.example/1","on":true}`,
	`{"url":"https://x.example/1","on":false,"when":"2026-11-29T10:00:00Z","mode":"a","count":3,"ratio":0.5}`,
	`{"url":"https://x.example/1","on":false,"home":{"street":"Main","zip":"12345"},"visits":[{"street":"A"}]}`,
	`{"url":"https://x.example/1","on":true,"labels":{"a":1},"meta":{"k":"v"},"any":[1,{"x":null}],"numbers":[1e3,-0.5]}`,
	`{"url":"https://x.example/1","on":true,"count":1.0}`,
	`{"url":"https://x.example/1","on":true,"count":10000000000000000000000}`,
	`{"url":"https://x.example/1","on":true,"ratio":1}`,
	`{"url":"https://x.example/1","on":true,"home":{"street":"\u004dain"}}`,
	`{"url":"https://x.example/1","on":true,"home":{"street":"Mä\nin"}}`,
	`{"url":"relative","on":true}`,
	`{"url":"https://x.example/1","on":true,"url":"relative"}`,
	`{"street":""}`, `{"street":"x","zip":"1234"}`, `{"v":null}`, `{"v":"x","n":-0}`, `{"v":1}`,
	`{"url":"https://x.example/1","on":true} x`, `{"url":"https://x.example/1","on":true,}`, `{"on":true`, ` {"v":"x"} `, `[]`, `"x"`, `null`,
}

func TestFastPathHandlesCommonInput(t *testing.T) {
	cs := fastSchemas(t)[0]
	for _, in := range fastSeeds[:4] {
		if !cs.fast.valid([]byte(in)) {
			t.Errorf("the fast path should accept %s", in)
		}
	}
}

func TestFastPathAgreesOnSeeds(t *testing.T) {
	for _, cs := range fastSchemas(t) {
		for _, in := range fastSeeds {
			if cs.fast.valid([]byte(in)) && !fullyValid(cs, []byte(in)) {
				t.Errorf("fast path accepts %s, which the full validator rejects, for %s", in, cs.raw)
			}
		}
	}
}

// FuzzFastPathAgrees checks the fast path's one promise: whatever it
// accepts, the full validator accepts too.
func FuzzFastPathAgrees(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	schemas := fastSchemas(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, cs := range schemas {
			if cs.fast.valid(data) && !fullyValid(cs, data) {
				t.Fatalf("fast path accepts %q, which the full validator rejects, for %s", data, cs.raw)
			}
		}
	})
}

// Every string plainURI accepts passes the full validator's "uri" check:
// random strings drawn from the characters plainURI allows (and a few it
// does not), and strings at the edges of url.Parse.
func TestPlainURIPassesTheValidator(t *testing.T) {
	validate := formatSchema("uri")
	if validate == nil {
		t.Fatal("the validator has no uri format")
	}
	check := func(s string) bool {
		if plainURI(s) && validate(s) != nil {
			t.Errorf("plainURI accepts %q, which the validator rejects: %v", s, validate(s))
		}
		return plainURI(s)
	}
	for _, s := range []string{"https://github.com/acme/checkout/pull/42", "http:", "a:", "mailto:x", "http://", "http:///p",
		"http://a?b", "http://a?", "x+y.z-w://h/p?q=1&r=(2)*!$';,~", "urn:isbn:0451450523", "http://[::1]/", "http://h:80/",
		"http://u@h/", "http://h/%41", "http://h/#f", "1http://h/", ":x", "http://h/ p", "http://h/\x7f", "http://h/é", "HTTP://H/"} {
		check(s)
	}
	if !check("https://github.com/acme/checkout/pull/42") {
		t.Error("plainURI should accept a plain https URL")
	}
	const scheme = "abcXYZ019+-."
	const rest = "abcXYZ019-._~/?=&+,;!$'()*:@%#[] "
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(from string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = from[rng.IntN(len(from))]
		}
		return string(b)
	}
	accepted := 0
	for range 200_000 {
		s := pick(scheme, rng.IntN(4)) + ":"
		if rng.IntN(2) == 0 {
			s += "//"
		}
		if check(s + pick(rest, rng.IntN(24))) {
			accepted++
		}
	}
	if accepted < 1000 {
		t.Errorf("only %d random strings were plain URIs: the test checks too little", accepted)
	}
}

package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/tool"
)

type prInput struct {
	PRURL string `json:"prUrl" jsonschema:"description=the pull request URL,format=uri"`
}

type validationInput struct {
	PRURL   string            `json:"prUrl" jsonschema:"format=uri"`
	Mode    string            `json:"mode,omitempty" jsonschema:"enum=words,enum=lines"`
	Count   int               `json:"count,omitempty" jsonschema:"minimum=1,maximum=10"`
	Small   int8              `json:"small,omitempty"`
	Code    string            `json:"code,omitempty" jsonschema:"pattern=^[A-Z]{3}$"`
	Name    string            `json:"name,omitempty" jsonschema:"minLength=2,maxLength=5"`
	When    string            `json:"when,omitempty" jsonschema:"format=date-time"`
	Email   string            `json:"email,omitempty" jsonschema:"format=email"`
	Home    *address          `json:"home,omitempty"`
	Visits  []address         `json:"visits,omitempty" jsonschema:"maxItems=2"`
	Tags    []string          `json:"tags,omitempty" jsonschema:"uniqueItems=true"`
	Weights map[string]int    `json:"weights,omitempty"`
	Meta    map[string]string `json:"meta,omitempty"`
}

func noop[In any](ctx context.Context, call *tool.Call, in In) (any, error) { return in, nil }

func mustNew[In, Out any](t testing.TB, name string, cfg tool.Config, h tool.Handler[In, Out]) *tool.Tool {
	t.Helper()
	if cfg.Description == "" {
		cfg.Description = "a test tool"
	}
	tl, err := tool.New(name, cfg, h)
	if err != nil {
		t.Fatalf("defining %s: %v", name, err)
	}
	return tl
}

func TestValidationMessages(t *testing.T) {
	typed := mustNew(t, "typed", tool.Config{}, noop[validationInput])
	raw := mustNew(t, "raw", tool.Config{InputSchema: tool.RawSchema(`{
		"type": "object",
		"properties": {
			"repo": {"type": "string"},
			"opts": {"type": "object", "properties": {"depth": {"type": "integer"}}, "additionalProperties": false},
			"weird key": {"type": "number"}
		},
		"required": ["repo"],
		"additionalProperties": false
	}`)}, noop[json.RawMessage])
	cases := []struct {
		name  string
		tool  *tool.Tool
		input string
	}{
		{"valid", typed, `{"prUrl":"https://github.com/acme/checkout/pull/42"}`},
		{"not a uri", typed, `{"prUrl":"not a url"}`},
		{"unknown property with a near name", typed, `{"prurl":"https://x.example/1"}`},
		{"unknown property with a typo", typed, `{"prUrl":"https://x.example/1","mdoe":"words"}`},
		{"unknown property far from any", typed, `{"prUrl":"https://x.example/1","zzzzzzzz":1}`},
		{"missing required", typed, `{}`},
		{"empty input", typed, ``},
		{"null input", typed, `null`},
		{"array input", typed, `[1,2]`},
		{"malformed JSON", typed, `{"prUrl":`},
		{"trailing garbage", typed, `{"prUrl":"https://x.example/1"} x`},
		{"wrong types", typed, `{"prUrl":42,"count":"three","tags":"a"}`},
		{"enum", typed, `{"prUrl":"https://x.example/1","mode":"chars"}`},
		{"range", typed, `{"prUrl":"https://x.example/1","count":11}`},
		{"not an integer", typed, `{"prUrl":"https://x.example/1","count":1.5}`},
		{"does not fit int8", typed, `{"prUrl":"https://x.example/1","small":1000}`},
		{"pattern and lengths", typed, `{"prUrl":"https://x.example/1","code":"abc","name":"x"}`},
		{"formats", typed, `{"prUrl":"https://x.example/1","when":"yesterday","email":"nobody"}`},
		{"nested", typed, `{"prUrl":"https://x.example/1","home":{"stret":"Main"},"visits":[{"street":"A"},{"street":1},{"street":"C"}]}`},
		{"unique items", typed, `{"prUrl":"https://x.example/1","tags":["a","b","a"]}`},
		{"map values", typed, `{"prUrl":"https://x.example/1","weights":{"a":1,"b":"two"},"meta":{"x y":3}}`},
		{"every violation at once", typed, `{"prUrl":"nope","count":0,"mode":"x","extra":true}`},
		{"number with a huge exponent", typed, `{"prUrl":"https://x.example/1","count":1e99999999}`},
		{"number with a huge negative exponent", typed, `{"prUrl":"https://x.example/1","weights":{"a":-1.5e-9999999}}`},
		{"number beyond float64", typed, `{"prUrl":"https://x.example/1","count":1e400}`},
		{"raw valid", raw, `{"repo":"acme/checkout","opts":{"depth":2}}`},
		{"raw nested unknown", raw, `{"repo":"acme/checkout","opts":{"dpeth":2}}`},
		{"raw odd key", raw, `{"repo":"r","weird key":"x"}`},
		{"raw missing", raw, `{"opts":{}}`},
	}
	var b strings.Builder
	for _, c := range cases {
		fmt.Fprintf(&b, "## %s (%s)\n%s\n", c.name, c.tool.Name(), c.input)
		_, err := c.tool.Validate(json.RawMessage(c.input))
		var ie *tool.InputError
		switch {
		case err == nil:
			b.WriteString("ok\n")
		case errors.As(err, &ie):
			if ie.Tool != c.tool.Name() {
				t.Errorf("%s: InputError.Tool = %q", c.name, ie.Tool)
			}
			for _, v := range ie.Violations {
				fmt.Fprintf(&b, "- %s\n", v)
			}
		default:
			t.Errorf("%s: error is %T, not *tool.InputError: %v", c.name, err, err)
		}
		b.WriteString("\n")
	}
	golden(t, "validation.golden", []byte(b.String()))
}

// The exact messages the issue and the design promise.
func TestValidationPromisedMessages(t *testing.T) {
	tl := mustNew(t, "inspect_pr", tool.Config{}, noop[prInput])
	for input, want := range map[string]string{
		`{"prUrl":"not a url"}`:             "input.prUrl: must be a uri",
		`{"prurl":"https://x.example/1"}`:   "input.prurl: unknown property, did you mean prUrl?",
		`{}`:                                "input.prUrl: is required",
		`{"prUrl":["https://x.example/1"]}`: "input.prUrl: must be a string, got array",
	} {
		_, err := tl.Validate(json.RawMessage(input))
		var ie *tool.InputError
		if !errors.As(err, &ie) {
			t.Fatalf("Validate(%s) error = %v, want an InputError", input, err)
		}
		var got []string
		for _, v := range ie.Violations {
			got = append(got, v.String())
		}
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("Validate(%s) violations = %q, want %q among them", input, got, want)
		}
	}
}

func TestValidatedInputIsACopy(t *testing.T) {
	tl := mustNew(t, "inspect_pr", tool.Config{}, noop[prInput])
	buf := []byte(`{"prUrl":"https://x.example/1"}`)
	in, err := tl.Validate(buf)
	if err != nil {
		t.Fatal(err)
	}
	copy(buf, `{"prUrl":"https://evil.example"}`)
	if got := string(in.JSON()); got != `{"prUrl":"https://x.example/1"}` {
		t.Errorf("validated input changed with the caller's buffer: %s", got)
	}
}

// BenchmarkValidate measures validating a typical small input: on the fast
// path (a schema inferred from a Go type), and on the full validator (a raw
// schema the fast path does not handle).
func BenchmarkValidate(b *testing.B) {
	typed := mustNew(b, "typed", tool.Config{}, noop[validationInput])
	full := mustNew(b, "full", tool.Config{InputSchema: tool.RawSchema(`{
		"type": "object",
		"properties": {"prUrl": {"type": "string", "format": "uri"}, "count": {"type": "integer"}, "home": {"type": "object"}},
		"patternProperties": {"^x-": {"type": "string"}}
	}`)}, noop[json.RawMessage])
	for _, c := range []struct {
		name  string
		tool  *tool.Tool
		input string
	}{
		{"fast/small", typed, `{"prUrl":"https://github.com/acme/checkout/pull/42"}`},
		{"fast/nested", typed, `{"prUrl":"https://github.com/acme/checkout/pull/42","mode":"words","count":3,"home":{"street":"Main","city":"Springfield"},"visits":[{"street":"A"},{"street":"B"}],"meta":{"a":"1","b":"2"}}`},
		{"full/small", full, `{"prUrl":"https://github.com/acme/checkout/pull/42","count":3,"home":{"street":"Main"},"x-trace":"abc"}`},
	} {
		input := json.RawMessage(c.input)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.tool.Validate(input); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

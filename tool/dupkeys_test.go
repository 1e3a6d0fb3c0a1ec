package tool_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/tool"
)

type deployInput struct {
	Environment string            `json:"environment" jsonschema:"enum=staging,enum=production"`
	Targets     []deployTarget    `json:"targets,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Options     *deployOptions    `json:"options,omitempty"`
}

type deployTarget struct {
	Host string `json:"host"`
	Port int    `json:"port,omitempty"`
}

type deployOptions struct {
	DryRun bool           `json:"dryRun,omitempty"`
	Extra  map[string]any `json:"extra,omitempty"`
}

// Input that repeats a key is refused, whatever the schema: a person
// approving {"environment":"staging","environment":"production"} sees
// staging while the tool would run with production. The error is the
// normal validation error, with the path of each repeated key.
func TestDuplicateKeysRefused(t *testing.T) {
	typed := mustNew(t, "deploy", tool.Config{NeedsApproval: tool.Always}, noop[deployInput])
	raw := mustNew(t, "raw", tool.Config{InputSchema: tool.RawSchema(`{"type":"object"}`)}, noop[json.RawMessage])
	// A schema the fast path does not handle: the full validator's path.
	full := mustNew(t, "full", tool.Config{InputSchema: tool.RawSchema(`{"type":"object","patternProperties":{"^x-":{}}}`)}, noop[json.RawMessage])
	cases := []struct {
		name  string
		input string
		want  []string // the violations, as strings
	}{
		{"top level", `{"environment":"staging","environment":"production"}`,
			[]string{"input.environment: is a duplicate key: an object may have each key only once"}},
		{"with white space", "{ \"environment\" : \"staging\" ,\n\t\"environment\" : \"production\" }",
			[]string{"input.environment: is a duplicate key: an object may have each key only once"}},
		{"three times", `{"environment":"staging","environment":"production","environment":"staging"}`,
			[]string{"input.environment: is a duplicate key: an object may have each key only once"}},
		{"nested object", `{"environment":"staging","options":{"dryRun":true,"extra":{"a":{"b":1,"b":2}},"dryRun":false}}`,
			[]string{"input.options.extra.a.b: is a duplicate key: an object may have each key only once",
				"input.options.dryRun: is a duplicate key: an object may have each key only once"}},
		{"array of objects", `{"environment":"staging","targets":[{"host":"a"},{"host":"b","port":1,"host":"c"}]}`,
			[]string{"input.targets[1].host: is a duplicate key: an object may have each key only once"}},
		{"map keys", `{"environment":"staging","labels":{"team":"a","owner":"b","team":"c"}}`,
			[]string{"input.labels.team: is a duplicate key: an object may have each key only once"}},
		{"escaped key", `{"environment":"staging","\u0065nvironment":"production"}`,
			[]string{"input.environment: is a duplicate key: an object may have each key only once"}},
		{"escaped the other way", `{"\u0065nvironment":"staging","environment":"production"}`,
			[]string{"input.environment: is a duplicate key: an object may have each key only once"}},
		{"escaped nested", `{"environment":"staging","labels":{"a":"x","\u0061":"y"}}`,
			[]string{"input.labels.a: is a duplicate key: an object may have each key only once"}},
		{"odd key", `{"environment":"staging","labels":{"a b":"x","a\u0020b":"y"}}`,
			[]string{`input.labels["a b"]: is a duplicate key: an object may have each key only once`}},
		{"also invalid otherwise", `{"environment":"nowhere","environment":"production","bogus":1}`,
			[]string{"input.environment: is a duplicate key: an object may have each key only once"}},
	}
	for _, c := range cases {
		for _, tl := range []*tool.Tool{typed, raw, full} {
			in, err := tl.Validate(json.RawMessage(c.input))
			var ie *tool.InputError
			if !errors.As(err, &ie) {
				t.Errorf("%s, %s: Validate = %v, %v; want an *InputError", c.name, tl.Name(), in, err)
				continue
			}
			if ie.Tool != tl.Name() {
				t.Errorf("%s: InputError.Tool = %q", c.name, ie.Tool)
			}
			var got []string
			for _, v := range ie.Violations {
				got = append(got, v.String())
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("%s, %s: violations\n%s\nwant\n%s", c.name, tl.Name(), strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		}
	}
}

// The same key in different objects, at different depths, or differing
// only in case is not a repeat; nor is a repeated value.
func TestDuplicateKeysValidInputUnaffected(t *testing.T) {
	typed := mustNew(t, "deploy", tool.Config{}, noop[deployInput])
	raw := mustNew(t, "raw", tool.Config{InputSchema: tool.RawSchema(`{"type":"object"}`)}, noop[json.RawMessage])
	for _, c := range []struct {
		tool  *tool.Tool
		input string
	}{
		{typed, `{"environment":"staging"}`},
		{typed, `{"environment":"staging","targets":[{"host":"a","port":1},{"host":"a","port":1}]}`},
		{typed, `{"environment":"staging","labels":{"environment":"staging","host":"a"},"options":{"extra":{"environment":{"environment":1}}}}`},
		{typed, `{"environment":"staging","labels":{"a":"x","A":"y","\u00e9":"z","e\u0301":"w"}}`},
		{raw, `{"a":{"a":{"a":[{"a":1},{"a":2}]}},"b":"a","c":["a","a"]}`},
		{raw, `{"Environment":"staging","environment":"production"}`},
	} {
		in, err := c.tool.Validate(json.RawMessage(c.input))
		if err != nil {
			t.Errorf("%s(%s): %v", c.tool.Name(), c.input, err)
			continue
		}
		if string(in.JSON()) != c.input {
			t.Errorf("%s(%s): validated JSON %s", c.tool.Name(), c.input, in.JSON())
		}
	}
}

// Text that is not JSON is refused by the validator with its reason, even
// where the part read so far repeats a key.
func TestDuplicateKeysInvalidJSON(t *testing.T) {
	tl := mustNew(t, "deploy", tool.Config{}, noop[deployInput])
	for _, input := range []string{`{"environment":"staging","environment":`, `{"environment":"staging","environment":"production"} x`} {
		_, err := tl.Validate(json.RawMessage(input))
		var ie *tool.InputError
		if !errors.As(err, &ie) || len(ie.Violations) != 1 || ie.Violations[0].Path != "input" ||
			!strings.Contains(ie.Violations[0].Message, "is not valid JSON") {
			t.Errorf("Validate(%s) = %v, want the validator's syntax error", input, err)
		}
	}
}

// An input repeating keys everywhere lists a bounded number of them.
func TestDuplicateKeysBounded(t *testing.T) {
	tl := mustNew(t, "raw", tool.Config{InputSchema: tool.RawSchema(`{"type":"object"}`)}, noop[json.RawMessage])
	input := `{"items":[` + strings.TrimSuffix(strings.Repeat(`{"a":1,"a":2},`, 1000), ",") + "]}"
	_, err := tl.Validate(json.RawMessage(input))
	var ie *tool.InputError
	if !errors.As(err, &ie) || len(ie.Violations) != 20 {
		t.Fatalf("Validate: %v", err)
	}
	if ie.Violations[0].Path != "input.items[0].a" || ie.Violations[19].Path != "input.items[19].a" {
		t.Errorf("violations %v", ie.Violations)
	}
}

package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Typed output. A handler that returns a concrete struct (or map) type
// declares its output: Define and New infer the output schema from it, with
// the same tag syntax as inputs, and every result is checked against it
// before it leaves the tool. A handler returning any has no output schema,
// and its results are not checked.

// outputSchema infers the output schema of Out: none (nil) for an
// interface type, whose results are whatever the handler returns, and
// for a type that is not a JSON object (a string, a slice), which MCP's
// structured content cannot carry.
func outputSchema(out reflect.Type) (*compiledSchema, error) {
	if out.Kind() != reflect.Interface {
		if why := notJSON(out, "output", true); why != "" {
			return nil, fmt.Errorf("the output type %s cannot be encoded as JSON: %s", out, why)
		}
	}
	base := out
	for base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	switch {
	case out.Kind() == reflect.Interface, base == reflect.TypeFor[Result]():
		return nil, nil // free-form, or a Result, whose content is the MCP shape
	case base.Kind() == reflect.Struct && base != timeType && base != urlType:
	case base.Kind() == reflect.Map && base.Key().Kind() == reflect.String:
	default:
		return nil, nil
	}
	raw, err := inferSchemaOf(out, "output")
	if err != nil {
		return nil, err
	}
	if raw, err = allowNulls(raw, base); err != nil {
		return nil, fmt.Errorf("output type %s: %w", out, err)
	}
	s, err := compileSchema(raw)
	if err != nil {
		return nil, fmt.Errorf("output schema of %s: %w", out, err)
	}
	return s, nil
}

// allowNulls lets every field that encoding/json may write as null — a
// pointer, slice, map or interface without omitempty — be null in an
// output schema: a nil slice is a valid result of a Go handler.
func allowNulls(raw json.RawMessage, t reflect.Type) (json.RawMessage, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	defs, _ := doc["$defs"].(map[string]any)
	nullable(doc, t, defs, map[reflect.Type]bool{})
	return json.Marshal(doc)
}

// nullable walks a schema along the Go type it was inferred from.
func nullable(s map[string]any, t reflect.Type, defs map[string]any, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if ref, ok := s["$ref"].(string); ok {
		if name, ok := strings.CutPrefix(ref, "#/$defs/"); ok {
			if def, ok := defs[name].(map[string]any); ok {
				s = def
			}
		}
	}
	switch t.Kind() {
	case reflect.Struct:
		if t == timeType || t == urlType || seen[t] {
			return
		}
		seen[t] = true
		props, _ := s["properties"].(map[string]any)
		for name, f := range jsonFields(t) {
			p, ok := props[name].(map[string]any)
			if !ok {
				continue
			}
			nullable(p, f.Type, defs, seen)
			switch f.Type.Kind() {
			case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
				if !strings.Contains(f.Tag.Get("json"), ",omitempty") {
					props[name] = orNull(p)
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if items, ok := s["items"].(map[string]any); ok {
			nullable(items, t.Elem(), defs, seen)
		}
	case reflect.Map:
		if addl, ok := s["additionalProperties"].(map[string]any); ok {
			nullable(addl, t.Elem(), defs, seen)
		}
	}
}

// orNull returns a schema that also accepts null.
func orNull(p map[string]any) map[string]any {
	switch ty := p["type"].(type) {
	case string:
		p["type"] = []any{ty, "null"}
		return p
	case []any:
		if !slices.Contains(ty, any("null")) {
			p["type"] = append(ty, "null")
		}
		return p
	case nil:
		if len(p) == 0 {
			return p // accepts anything already
		}
	}
	return map[string]any{"anyOf": []any{p, map[string]any{"type": "null"}}}
}

// OutputSchema returns the JSON Schema of the tool's results, or nil when
// it declares none (its handler returns any, or a tool that is not a Go
// handler).
func (t *Tool) OutputSchema() []byte {
	if t.output == nil {
		return nil
	}
	return t.output.raw
}

// checkOutput checks a successful result against the tool's output
// schema. A result that does not match is a bug in the tool: the call's
// output becomes an isError result naming where it went wrong, never a
// silent pass.
func (t *Tool) checkOutput(out Output) Output {
	if t.output == nil || out.IsError {
		return out
	}
	if t.output.fast != nil && t.output.fast.valid(out.Result) {
		return out
	}
	vs, err := t.output.violations(out.Result)
	if err != nil {
		return ErrorOutput(fmt.Sprintf("the tool's result could not be checked against its output schema: %v", err))
	}
	if len(vs) == 0 {
		return out
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = "result" + strings.TrimPrefix(v.Path, "input") + ": " + v.Message
	}
	return ErrorOutput(fmt.Sprintf("the tool's result does not match its output schema (a bug in tool %s): %s", t.name, strings.Join(parts, "; ")))
}

// violations validates data with the full validator and lists what is
// wrong with it, sorted; none for valid data.
func (s *compiledSchema) violations(data []byte) (vs []Violation, err error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			vs, err = nil, fmt.Errorf("the validator panicked: %v", p)
		}
	}()
	verr := s.sch.Validate(doc)
	if verr == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(verr, &ve) {
		return nil, verr
	}
	s.collect(ve, doc, &vs)
	slices.SortFunc(vs, func(a, b Violation) int {
		return strings.Compare(a.Path+"\x00"+a.Message, b.Path+"\x00"+b.Message)
	})
	return slices.Compact(vs), nil
}

package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"time"

	invopop "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is the JSON Schema of a tool's input: inferred from a Go type by
// [SchemaOf], or given as raw JSON by [RawSchema]. The zero Schema means
// "none given". An invalid schema is reported when the tool is defined.
type Schema struct {
	raw json.RawMessage
	err error
}

// SchemaOf returns the input schema inferred from T, exactly as [Define]
// infers it from a handler's input type. Use it for agent tools, whose input
// has no Go handler to infer it from:
//
//	tool.DefineScript(tool.Config{InputSchema: tool.SchemaOf[EchoInput]()}, script)
func SchemaOf[T any]() Schema {
	raw, err := inferSchema(reflect.TypeFor[T]())
	return Schema{raw: raw, err: err}
}

// RawSchema returns a schema given as JSON Schema text (draft 2020-12 unless
// the text says otherwise with "$schema"). It must describe an object.
func RawSchema(jsonSchema string) Schema {
	return Schema{raw: json.RawMessage(jsonSchema)}
}

// IsZero reports whether no schema was given.
func (s Schema) IsZero() bool { return s.raw == nil && s.err == nil }

// JSON returns the schema's JSON text, or nil for the zero Schema.
func (s Schema) JSON() json.RawMessage { return s.raw }

// schemaURL is the base URL given to the validator for every input schema.
const schemaURL = "agentsdk:///input.json"

// compiledSchema is an input schema ready to validate against.
type compiledSchema struct {
	raw json.RawMessage    // compact JSON, as described to models
	doc any                // the parsed schema, for "did you mean" lookups
	sch *jsonschema.Schema // the compiled validator
	// fast checks the common case without building a value tree; nil when
	// the schema uses keywords it does not handle.
	fast *fastSchema
}

// refuseLoader stops a schema from reading files or URLs through $ref.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("loading %s: input schemas must be self-contained", url)
}

// compileSchema compiles an input schema and checks that it describes an
// object, as model providers and MCP require of tool inputs.
func compileSchema(raw json.RawMessage) (*compiledSchema, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fmt.Errorf("parsing input schema: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(compact.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("parsing input schema: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok || obj["type"] != "object" {
		return nil, errors.New(`input schema must describe an object ("type": "object")`)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("compiling input schema: %w", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("compiling input schema: %w", err)
	}
	fast, ok := compileFast(doc, true)
	if !ok {
		fast = nil
	}
	return &compiledSchema{raw: compact.Bytes(), doc: doc, sch: sch, fast: fast}, nil
}

// inferSchema reflects the JSON Schema of an input type. The struct tag
// syntax is invopop/jsonschema's, plus the MCP Go SDK's convention that a
// jsonschema tag with no "=" is the field's description; a pointer field is
// optional like an omitempty one.
func inferSchema(t reflect.Type) (raw json.RawMessage, err error) {
	return inferSchemaOf(t, "input")
}

// inferSchemaOf is inferSchema of a tool's input or its output (what),
// whose errors name which.
func inferSchemaOf(t reflect.Type, what string) (raw json.RawMessage, err error) {
	base := t
	for base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	switch {
	case base.Kind() == reflect.Struct && base != timeType && base != urlType:
	case base.Kind() == reflect.Map && base.Key().Kind() == reflect.String:
	default:
		return nil, fmt.Errorf("%s type %s: a tool's %s must be a struct or a map with string keys (a JSON object)", what, t, what)
	}
	if why := notJSON(t, what, what == "output"); why != "" && what == "input" {
		return nil, fmt.Errorf("the input type %s cannot be decoded from JSON: %s", t, why)
	} else if why != "" {
		return nil, fmt.Errorf("the output type %s cannot be encoded as JSON: %s", t, why)
	}
	defer func() {
		if p := recover(); p != nil {
			raw, err = nil, fmt.Errorf("inferring the %s schema of %s: %v", what, t, p)
		}
	}()
	// A type that refers to itself needs $defs and $ref; any other is
	// written out inline, which models read best.
	rec := recursive(base, map[reflect.Type]bool{})
	r := &invopop.Reflector{
		Anonymous:      true,
		DoNotReference: !rec,
		ExpandedStruct: !rec,
		LookupComment:  descriptionTag,
	}
	s := r.ReflectFromType(base)
	if name, ok := strings.CutPrefix(s.Ref, "#/$defs/"); ok && s.Definitions[name] != nil {
		// Make the root the referenced definition itself, so that it says
		// "type": "object", keeping $defs for the references inside.
		top := *s.Definitions[name]
		top.Definitions = s.Definitions
		s = &top
	}
	s.Version = ""
	relaxPointers(base, s, s.Definitions, map[*invopop.Schema]bool{})
	return json.Marshal(s)
}

var (
	timeType = reflect.TypeFor[time.Time]()
	urlType  = reflect.TypeFor[url.URL]()
)

// descriptionTag implements the MCP Go SDK's convention: a jsonschema tag
// with no "=" in it is taken whole as the field's description.
func descriptionTag(t reflect.Type, field string) string {
	if field == "" || t.Kind() != reflect.Struct {
		return ""
	}
	f, ok := t.FieldByName(field)
	if !ok {
		return ""
	}
	tag := f.Tag.Get("jsonschema")
	if tag == "" || tag == "-" || strings.Contains(tag, "=") {
		return ""
	}
	return tag
}

// recursive reports whether a type refers to itself, in which case the
// schema needs $defs and $ref rather than being written out inline.
func recursive(t reflect.Type, onPath map[reflect.Type]bool) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return recursive(t.Elem(), onPath)
	case reflect.Struct:
		if t == timeType || t == urlType {
			return false
		}
		if onPath[t] {
			return true
		}
		onPath[t] = true
		defer delete(onPath, t)
		for i := range t.NumField() {
			if recursive(t.Field(i).Type, onPath) {
				return true
			}
		}
	}
	return false
}

// relaxPointers removes pointer fields from the required lists that invopop
// derives from json tags alone.
func relaxPointers(t reflect.Type, s *invopop.Schema, defs invopop.Definitions, seen map[*invopop.Schema]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s == nil {
		return
	}
	if name, ok := strings.CutPrefix(s.Ref, "#/$defs/"); ok {
		s = defs[name]
	}
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	switch t.Kind() {
	case reflect.Struct:
		if t == timeType || t == urlType || s.Properties == nil {
			return
		}
		fields := jsonFields(t)
		required := s.Required[:0]
		for _, name := range s.Required {
			if f, ok := fields[name]; ok && f.Type.Kind() == reflect.Pointer {
				continue
			}
			required = append(required, name)
		}
		s.Required = required
		for name, f := range fields {
			if p, ok := s.Properties.Get(name); ok {
				relaxPointers(f.Type, p, defs, seen)
			}
		}
	case reflect.Slice, reflect.Array:
		relaxPointers(t.Elem(), s.Items, defs, seen)
	case reflect.Map:
		relaxPointers(t.Elem(), s.AdditionalProperties, defs, seen)
	}
}

// jsonFields maps the JSON names of a struct's fields, promoted fields of
// embedded structs included, to the fields.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for _, f := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			continue // flattened: its fields are visible on their own
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f
	}
	return out
}

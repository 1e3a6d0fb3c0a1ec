package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/agentsdk/agentsdk/tool"
)

// schema is a JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1) as
// the document writes it. Maps marshal with sorted keys, which keeps the
// document's bytes stable.
type schema = map[string]any

const componentsPrefix = "#/components/schemas/"

var (
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	timeType       = reflect.TypeFor[time.Time]()
	marshalerType  = reflect.TypeFor[json.Marshaler]()
	apiPackage     = reflect.TypeFor[Session]().PkgPath()
)

// declaredInTool are the API's types declared in package tool (aliases
// here), named as if declared here, as they were before they moved.
var declaredInTool = map[reflect.Type]string{
	reflect.TypeFor[Event]():          "Event",
	reflect.TypeFor[Kind]():           "Kind",
	reflect.TypeFor[Approval]():       "Approval",
	reflect.TypeFor[ApprovalStatus](): "ApprovalStatus",
}

// enums lists the values of the string types that have a list of them.
// Those types become components of their own; other string types are
// plain strings.
var enums = map[reflect.Type][]string{
	reflect.TypeFor[Code]():           strs(Codes()),
	reflect.TypeFor[Kind]():           strs(Kinds),
	reflect.TypeFor[ApprovalStatus](): strs(ApprovalStatuses),
	reflect.TypeFor[tool.Execution](): strs([]tool.Execution{tool.Server, tool.Agent}),
}

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// components reflects Go types into the document's component schemas, one
// per named struct type (and enum type), referred to with $ref.
type components struct {
	schemas map[string]any
	names   map[reflect.Type]string
	err     error // the first type that could not be described
}

func newComponents() *components {
	return &components{schemas: map[string]any{}, names: map[reflect.Type]string{}}
}

// ref returns the schema of t where it is used: a $ref to its component
// for a named struct or enum type, the schema itself for any other.
//
// The JSON names come from the json tags, and a field is required unless
// it is omitempty (or omitzero). A pointer is its element: the API omits
// the optional ones and never writes null for the others.
// json.RawMessage is any JSON, time.Time a date-time string.
func (c *components) ref(t reflect.Type) schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == rawMessageType:
		return schema{}
	case t == timeType:
		return schema{"type": "string", "format": "date-time"}
	case reflect.PointerTo(t).Implements(marshalerType):
		c.fail(fmt.Errorf("describing %s: it has its own MarshalJSON, whose output has no schema here", t))
		return schema{}
	case enums[t] != nil || (t.Kind() == reflect.Struct && t.Name() != ""):
		return schema{"$ref": componentsPrefix + c.component(t)}
	}
	switch t.Kind() {
	case reflect.Bool:
		return schema{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return schema{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return schema{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return schema{"type": "number"}
	case reflect.String:
		return schema{"type": "string"}
	case reflect.Interface:
		return schema{}
	case reflect.Struct:
		return c.object(t)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return schema{"type": "string", "contentEncoding": "base64"}
		}
		return schema{"type": "array", "items": c.ref(t.Elem())}
	case reflect.Map:
		if t.Key().Kind() == reflect.String {
			return schema{"type": "object", "additionalProperties": c.ref(t.Elem())}
		}
	}
	c.fail(fmt.Errorf("describing %s: no JSON Schema for a %s", t, t.Kind()))
	return schema{}
}

// component adds the component of a named type once, and returns its name.
func (c *components) component(t reflect.Type) string {
	if name, ok := c.names[t]; ok {
		return name
	}
	name, moved := declaredInTool[t]
	if !moved {
		name = t.Name()
	}
	if pkg := t.PkgPath(); pkg != apiPackage && !moved {
		// Other packages' types are prefixed: tool.Info is ToolInfo.
		base := pkg[strings.LastIndex(pkg, "/")+1:]
		name = strings.ToUpper(base[:1]) + base[1:] + name
	}
	if !componentName.MatchString(name) || c.schemas[name] != nil {
		c.fail(fmt.Errorf("describing %s: component name %q is invalid or taken", t, name))
		return name
	}
	c.names[t] = name
	c.schemas[name] = schema{} // taken, for recursive types
	if values := enums[t]; values != nil {
		c.schemas[name] = schema{"type": "string", "enum": values}
	} else {
		c.schemas[name] = c.object(t)
	}
	return name
}

var componentName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// object describes a struct as encoding/json writes it.
func (c *components) object(t reflect.Type) schema {
	props := schema{}
	required := []string{}
	c.fields(t, props, &required)
	s := schema{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	if t == reflect.TypeFor[Event]() {
		s["allOf"] = c.eventData()
	}
	return s
}

// fields adds the JSON fields of t to props, those of embedded structs
// without a JSON name included.
func (c *components) fields(t reflect.Type, props schema, required *[]string) {
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		if ft := f.Type; f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				c.fields(ft, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = c.ref(f.Type)
		if optional := slices.ContainsFunc(strings.Split(opts, ","), func(o string) bool {
			return o == "omitempty" || o == "omitzero"
		}); !optional {
			*required = append(*required, name)
		}
	}
}

// eventData describes an Event's data by its kind: for each kind in
// [Kinds], the schema of its payload type ([PayloadOf]).
func (c *components) eventData() []any {
	cases := make([]any, 0, len(Kinds))
	for _, k := range Kinds {
		p := PayloadOf(k)
		if p == nil {
			c.fail(fmt.Errorf("describing events: kind %s has no payload type", k))
			continue
		}
		cases = append(cases, schema{
			"if":   schema{"properties": schema{"kind": schema{"const": string(k)}}, "required": []string{"kind"}},
			"then": schema{"properties": schema{"data": c.ref(reflect.TypeOf(p))}},
		})
	}
	return cases
}

// closed marks the component of a request body as taking no other fields:
// the server refuses unknown ones.
func (c *components) closed(t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := c.schemas[c.names[t]].(schema); ok {
		s["additionalProperties"] = false
	}
}

func (c *components) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// toolInput adds a tool's input schema to the components as tool.<name>,
// and returns a $ref to it. The schema's own definitions ($defs, or
// draft-07 definitions) become components tool.<name>.<def>, and its local
// $refs are rewritten to point there ("#/$defs/Node" becomes
// "#/components/schemas/tool.<name>.Node", "#" the input schema itself), so
// that they resolve within the document.
func (c *components) toolInput(name string, raw json.RawMessage) (schema, error) {
	return c.toolSchema(name, "input", "tool."+name, raw)
}

// toolOutput adds a tool's output schema as tool.<name>.output, as
// toolInput adds its input schema.
func (c *components) toolOutput(name string, raw json.RawMessage) (schema, error) {
	return c.toolSchema(name, "output", "tool."+name+".output", raw)
}

// toolSchema adds one of a tool's schemas under the component prefix.
func (c *components) toolSchema(name, which, prefix string, raw json.RawMessage) (schema, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep numbers as written
	var root schema
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("reading the %s schema of tool %s: %w", which, name, err)
	}
	if root == nil {
		return nil, fmt.Errorf("reading the %s schema of tool %s: it is null", which, name)
	}
	lifted := map[string]any{prefix: root}
	dialect, _ := root["$schema"].(string)
	if strings.Contains(dialect, "/draft/2020-12/") {
		dialect = "" // OpenAPI 3.1's own
	}
	delete(root, "$schema")
	delete(root, "$id") // its refs now resolve against the document
	for _, key := range []string{"$defs", "definitions"} {
		defs, _ := root[key].(map[string]any)
		delete(root, key)
		for def, s := range defs {
			id := prefix + "." + componentSafe(def)
			if lifted[id] != nil {
				return nil, fmt.Errorf("lifting the definitions of tool %s: two are named %s", name, id)
			}
			lifted[id] = s
		}
	}
	for id, s := range lifted {
		if c.schemas[id] != nil {
			return nil, fmt.Errorf("adding the %s schema of tool %s: component %s is taken", which, name, id)
		}
		if m, ok := s.(map[string]any); ok && dialect != "" {
			m["$schema"] = dialect
		}
		rewriteRefs(s, prefix)
		c.schemas[id] = s
	}
	return schema{"$ref": componentsPrefix + prefix}, nil
}

// rewriteRefs points the local $refs of a lifted tool schema into the
// components. It walks the subschemas, not the values that are data.
func rewriteRefs(v any, prefix string) {
	switch v := v.(type) {
	case map[string]any:
		for k, sub := range v {
			switch k {
			case "$ref":
				if ref, ok := sub.(string); ok {
					v[k] = liftedRef(ref, prefix)
				}
			case "properties", "patternProperties", "dependentSchemas", "$defs", "definitions":
				if named, ok := sub.(map[string]any); ok {
					for _, s := range named {
						rewriteRefs(s, prefix)
					}
				}
			case "const", "default", "enum", "examples":
			default:
				rewriteRefs(sub, prefix)
			}
		}
	case []any:
		for _, sub := range v {
			rewriteRefs(sub, prefix)
		}
	}
}

// liftedRef rewrites a $ref within a tool's input schema: "#/$defs/<def>…"
// to "#/components/schemas/<prefix>.<def>…", any other "#…" pointer to
// "#/components/schemas/<prefix>…". Other refs are left as they are.
func liftedRef(ref, prefix string) string {
	if ref != "#" && !strings.HasPrefix(ref, "#/") {
		return ref
	}
	tokens := strings.Split(strings.TrimPrefix(ref, "#"), "/")[1:]
	target := prefix
	if len(tokens) >= 2 && (tokens[0] == "$defs" || tokens[0] == "definitions") {
		def, err := url.PathUnescape(tokens[1])
		if err != nil {
			return ref
		}
		def = strings.NewReplacer("~1", "/", "~0", "~").Replace(def)
		target, tokens = prefix+"."+componentSafe(def), tokens[2:]
	}
	return strings.Join(append([]string{componentsPrefix + target}, tokens...), "/")
}

// componentSafe replaces the characters a component name cannot hold.
func componentSafe(name string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune(".-_", r) || r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '_'
	}, name)
}

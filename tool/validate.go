package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Input is a tool's input that passed validation, decoded and ready to run.
// It is immutable: the JSON it was validated from is kept as it was.
type Input struct {
	tool  *Tool
	raw   json.RawMessage
	value any // a *In, the handler's input type, decoded from raw
}

// JSON returns the input as it was validated.
func (in *Input) JSON() json.RawMessage { return in.raw }

// Tool returns the tool the input was validated for.
func (in *Input) Tool() *Tool { return in.tool }

// NeedsApproval reports whether running the tool with this input needs a
// person's approval, per the tool's [Config.NeedsApproval]. A predicate that
// panics fails closed: the answer is true, with an error saying why.
func (in *Input) NeedsApproval() (needed bool, err error) {
	return in.tool.approval.check(in.value)
}

// Violation is one way an input breaks its tool's schema.
type Violation struct {
	// Path is where in the input the problem is, in JavaScript notation
	// rooted at "input": input.items[2].name.
	Path string `json:"path"`
	// Message says which rule was broken: "must be a uri".
	Message string `json:"message"`
}

// String returns "path: message".
func (v Violation) String() string { return v.Path + ": " + v.Message }

// Validate checks raw JSON input against the tool's schema and decodes it
// into the handler's input type. Empty input counts as {}. Input in which
// an object repeats a key (at any depth, escapes resolved) is refused
// before the schema is looked at: it would mean one thing to a person
// approving the call and another to the handler. The error is an
// [*InputError] listing every violation.
func (t *Tool) Validate(raw json.RawMessage) (*Input, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	fast := t.schema.fast != nil && t.schema.fast.valid(raw)
	if fast && t.decodeFlat != nil {
		// An input the flat decoder takes has no repeated key: the scan
		// for them is not needed.
		if v, ok := t.decodeFlat(raw); ok {
			return &Input{tool: t, raw: bytes.Clone(raw), value: v}, nil
		}
	}
	if err := t.duplicateKeys(raw); err != nil {
		return nil, err
	}
	if fast {
		return t.decodeValid(raw)
	}
	return t.validateFully(raw)
}

// validateFully validates with the full JSON Schema validator and explains
// every violation.
func (t *Tool) validateFully(raw json.RawMessage) (in *Input, err error) {
	if n := findHugeNumber(raw); n != nil {
		if len(n) > 40 {
			n = append(bytes.Clone(n[:40]), "…"...)
		}
		return nil, t.inputError(Violation{"input", fmt.Sprintf("has a number out of range: %s", n)})
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, t.inputError(Violation{"input", "is not valid JSON: " + strings.TrimPrefix(err.Error(), "invalid json: ")})
	}
	defer func() {
		// The validator is third-party code fed hostile input: a panic in
		// it refuses the input instead of taking the host down.
		if p := recover(); p != nil {
			in, err = nil, t.inputError(Violation{"input", fmt.Sprintf("could not be validated: %v", p)})
		}
	}()
	if err := t.schema.sch.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, t.inputError(Violation{"input", err.Error()})
		}
		var vs []Violation
		t.schema.collect(ve, doc, &vs)
		slices.SortFunc(vs, func(a, b Violation) int {
			return strings.Compare(a.Path+"\x00"+a.Message, b.Path+"\x00"+b.Message)
		})
		return nil, &InputError{Tool: t.name, Violations: slices.Compact(vs)}
	}
	return t.decodeValid(raw)
}

// decodeValid decodes input that passed validation into the handler's type.
// A panic in the type's own UnmarshalJSON refuses the input: hosts validate
// on goroutines of their own, where a panic would end the process.
func (t *Tool) decodeValid(raw json.RawMessage) (in *Input, err error) {
	defer func() {
		if p := recover(); p != nil {
			in, err = nil, t.inputError(Violation{"input", fmt.Sprintf("could not be decoded: %v", p)})
		}
	}()
	raw = bytes.Clone(raw) // the caller's buffer stays the caller's
	value, err := t.decode(raw)
	if err != nil {
		return nil, t.inputError(decodeViolation(err))
	}
	return &Input{tool: t, raw: raw, value: value}, nil
}

func (t *Tool) inputError(v Violation) *InputError {
	return &InputError{Tool: t.name, Violations: []Violation{v}}
}

// decodeViolation describes a failure to decode valid JSON into the Go
// input type, such as a number too large for an int32 field.
func decodeViolation(err error) Violation {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		path := "input"
		if te.Field != "" {
			path += "." + te.Field
		}
		return Violation{path, fmt.Sprintf("%s does not fit Go type %s", te.Value, te.Type)}
	}
	return Violation{"input", "cannot be decoded: " + err.Error()}
}

// collect flattens a validation error tree into violations: one for each
// leaf, which is where a keyword actually failed.
func (s *compiledSchema) collect(e *jsonschema.ValidationError, doc any, out *[]Violation) {
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			s.collect(c, doc, out)
		}
		return
	}
	path := instancePath(doc, e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, name := range k.Missing {
			*out = append(*out, Violation{joinPath(path, name), "is required"})
		}
	case *kind.AdditionalProperties:
		known := s.propertiesAt(e.SchemaURL)
		for _, name := range k.Properties {
			msg := "unknown property"
			if guess := closest(name, known); guess != "" {
				msg += ", did you mean " + guess + "?"
			} else if len(known) > 0 && len(known) <= 8 {
				msg += " (known: " + strings.Join(known, ", ") + ")"
			}
			*out = append(*out, Violation{joinPath(path, name), msg})
		}
	default:
		*out = append(*out, Violation{path, ruleMessage(e.ErrorKind)})
	}
}

var english = message.NewPrinter(language.English)

// ruleMessage says which rule a value broke, in the words a person (or a
// model fixing its call) reads best.
func ruleMessage(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = article(w)
		}
		return "must be " + strings.Join(want, " or ") + ", got " + k.Got
	case *kind.Format:
		return "must be " + article(k.Want)
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = display(w)
		}
		if len(want) == 1 {
			return "must be " + want[0]
		}
		return "must be one of " + strings.Join(want, ", ")
	case *kind.Const:
		return "must be " + display(k.Want)
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters long", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long", k.Want)
	case *kind.Pattern:
		return "must match the pattern " + k.Want
	case *kind.Minimum:
		return "must be >= " + ratString(k.Want)
	case *kind.Maximum:
		return "must be <= " + ratString(k.Want)
	case *kind.ExclusiveMinimum:
		return "must be > " + ratString(k.Want)
	case *kind.ExclusiveMaximum:
		return "must be < " + ratString(k.Want)
	case *kind.MultipleOf:
		return "must be a multiple of " + ratString(k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d items", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items", k.Want)
	case *kind.UniqueItems:
		return fmt.Sprintf("must not repeat items (items %d and %d are equal)", k.Duplicates[0], k.Duplicates[1])
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %d properties", k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d properties", k.Want)
	case *kind.FalseSchema:
		return "is not allowed here"
	case *kind.OneOf:
		return "must match exactly one of the allowed shapes"
	}
	return k.LocalizedString(english)
}

// article puts "a" or "an" before a type or format name.
func article(name string) string {
	switch {
	case name == "null":
		return "null"
	case name != "" && strings.ContainsRune("aeio", rune(name[0])):
		return "an " + name
	}
	return "a " + name
}

func display(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// instancePath renders a location in the input: input.items[0]["a b"].
func instancePath(doc any, loc []string) string {
	var b strings.Builder
	b.WriteString("input")
	v := doc
	for _, tok := range loc {
		switch cur := v.(type) {
		case []any:
			b.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(cur) {
				v = cur[i]
			} else {
				v = nil
			}
		case map[string]any:
			b.WriteString(propertySuffix(tok))
			v = cur[tok]
		default:
			b.WriteString(propertySuffix(tok))
			v = nil
		}
	}
	return b.String()
}

func joinPath(path, name string) string { return path + propertySuffix(name) }

var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

func propertySuffix(name string) string {
	if identifier.MatchString(name) {
		return "." + name
	}
	return "[" + strconv.Quote(name) + "]"
}

// propertiesAt lists the properties declared by the schema at a schema URL
// the validator reported, such as agentsdk:///input.json#/properties/repo.
func (s *compiledSchema) propertiesAt(at string) []string {
	base, ptr, _ := strings.Cut(at, "#")
	if base != schemaURL {
		return nil
	}
	v := s.doc
	if ptr != "" {
		for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
			tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(unescapeURL(tok))
			switch cur := v.(type) {
			case map[string]any:
				v = cur[tok]
			case []any:
				i, err := strconv.Atoi(tok)
				if err != nil || i < 0 || i >= len(cur) {
					return nil
				}
				v = cur[i]
			default:
				return nil
			}
		}
	}
	obj, _ := v.(map[string]any)
	props, _ := obj["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func unescapeURL(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// closest returns the known name nearest to name: the same name in another
// case, or one within a few edits; "" when nothing is near.
func closest(name string, known []string) string {
	lower := strings.ToLower(name)
	best, bestDist := "", max(1, len(name)/3)+1 // accept up to max(1, len/3) edits
	for _, k := range known {
		if strings.ToLower(k) == lower {
			return k
		}
		if d := editDistance(lower, strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between two
// strings, in bytes: insertions, deletions, substitutions and swaps of two
// neighbours each count one.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return len(a) + len(b) // not worth comparing, and bounded in cost
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

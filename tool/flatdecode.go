package tool

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/agentsdk/agentsdk/internal/jsonscan"
)

// flatDecoder decodes a JSON object into a struct whose members are
// strings, booleans and numbers, the usual shape of a tool's input, at a
// fraction of json.Unmarshal's cost, with json.Unmarshal's result. It
// takes only what it can decode exactly as json.Unmarshal would: every key
// one of the struct's JSON names as it is (no escapes, no case folding),
// every value a string without escapes, a boolean, or a number that fits
// its field, and no key twice. On anything else — another key, an escape,
// null, a nested value, a type json.Unmarshal would refuse, a number out
// of range, a repeated key — it says so, and the caller checks and decodes
// as it always has. So an input it takes has no repeated key anywhere.
type flatDecoder struct {
	fields map[string]flatField // by JSON name
}

// flatField is where a struct field is and how it is decoded; kind
// reflect.Invalid marks a field left to json.Unmarshal (a slice, a map, a
// pointer, a type with its own unmarshalling).
type flatField struct {
	off  uintptr
	typ  reflect.Type
	kind reflect.Kind
	bit  uint64 // the field's bit in a mask of the fields seen
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonNumberType      = reflect.TypeFor[json.Number]()
)

// newFlatDecoder returns the flat decoder of struct type t, or nil when t
// is not flat: not a struct, a struct with its own unmarshalling, with an
// embedded field (whose fields json.Unmarshal promotes), with a field
// tagged ",string", with two fields of one JSON name, or with more than 64
// fields it could decode.
func newFlatDecoder(t reflect.Type) *flatDecoder {
	if t.Kind() != reflect.Struct || unmarshalsItself(t) {
		return nil
	}
	d := &flatDecoder{fields: make(map[string]flatField, t.NumField())}
	bits := 0
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil
		}
		if !f.IsExported() {
			continue // json.Unmarshal leaves it alone
		}
		name, opts, _, ok := jsonName(f)
		if !ok {
			continue
		}
		if hasOption(opts, "string") {
			return nil
		}
		if _, dup := d.fields[name]; dup {
			return nil // json.Unmarshal's rules for conflicting names are not copied here
		}
		kind := f.Type.Kind()
		switch {
		case unmarshalsItself(f.Type), f.Type == jsonNumberType: // json.Number's strings are checked as numbers
			kind = reflect.Invalid
		case kind == reflect.String, kind == reflect.Bool,
			reflect.Int <= kind && kind <= reflect.Int64,
			reflect.Uint <= kind && kind <= reflect.Uint64,
			kind == reflect.Float32, kind == reflect.Float64:
		default:
			kind = reflect.Invalid
		}
		field := flatField{off: f.Offset, typ: f.Type, kind: kind}
		if kind != reflect.Invalid {
			if bits == 64 {
				return nil
			}
			field.bit = 1 << bits
			bits++
		}
		d.fields[name] = field
	}
	return d
}

// unmarshalsItself reports whether json.Unmarshal would hand a value of
// type t (addressable, so with *t's methods) to its own method.
func unmarshalsItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshalerType) || p.Implements(jsonUnmarshalerType) ||
		t.Implements(textUnmarshalerType) || p.Implements(textUnmarshalerType)
}

// jsonName returns the name encoding/json gives struct field f — its
// tag's, if that is a valid name, else its Go name — the tag's options, and
// whether the tag named it; ok is false for a field tagged "-", which
// encoding/json leaves out.
func jsonName(f reflect.StructField) (name, opts string, tagged, ok bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", "", false, false
	}
	name, opts, _ = strings.Cut(tag, ",")
	if !isValidTag(name) {
		return f.Name, opts, false, true
	}
	return name, opts, true, true
}

// hasOption reports whether a tag's comma-separated options hold opt.
func hasOption(opts, opt string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == opt {
			return true
		}
	}
	return false
}

// isValidTag is encoding/json's test of a tag's name: a name it does not
// take leaves the field under its Go name.
func isValidTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// decode decodes data into the struct at p, which must be the zero value
// of the decoder's type; false means it has not, and p must be discarded
// (some fields may be set).
func (d *flatDecoder) decode(data []byte, p unsafe.Pointer) bool {
	s := jsonscan.Scanner{Data: data}
	s.Space()
	if !s.Consume('{') {
		return false
	}
	s.Space()
	if s.Consume('}') {
		return s.AtEnd()
	}
	var seen uint64
	for {
		s.Space()
		key, plain, ok := s.String()
		if !ok || !plain {
			return false
		}
		f, ok := d.fields[string(key)]
		if !ok || f.kind == reflect.Invalid || seen&f.bit != 0 {
			return false
		}
		seen |= f.bit
		s.Space()
		if !s.Consume(':') {
			return false
		}
		s.Space()
		if !f.set(&s, unsafe.Add(p, f.off)) {
			return false
		}
		s.Space()
		if s.Consume('}') {
			return s.AtEnd()
		}
		if !s.Consume(',') {
			return false
		}
	}
}

// set reads the value at s's position into the field at p.
func (f flatField) set(s *jsonscan.Scanner, p unsafe.Pointer) bool {
	switch f.kind {
	case reflect.String:
		raw, plain, ok := s.String()
		if !ok {
			return false
		}
		if !plain && !verbatim(raw) {
			return false
		}
		*(*string)(p) = string(raw)
		return true
	case reflect.Bool:
		switch {
		case s.Literal("true"):
			*(*bool)(p) = true
		case s.Literal("false"):
			*(*bool)(p) = false
		default:
			return false
		}
		return true
	}
	tok, integer, ok := s.Number()
	if !ok {
		return false
	}
	// As json.Unmarshal stores a number: parsed for the field's kind, and
	// refused when reflect says it overflows the field.
	text := unsafe.String(unsafe.SliceData(tok), len(tok)) // not kept: on an error it is dropped
	v := reflect.NewAt(f.typ, p).Elem()
	switch {
	case f.kind == reflect.Float32 || f.kind == reflect.Float64:
		n, err := strconv.ParseFloat(text, f.typ.Bits())
		if err != nil || v.OverflowFloat(n) {
			return false
		}
		v.SetFloat(n)
	case !integer: // json.Unmarshal refuses a fraction or an exponent for an integer
		return false
	case reflect.Uint <= f.kind && f.kind <= reflect.Uint64:
		n, err := strconv.ParseUint(text, 10, 64)
		if err != nil || v.OverflowUint(n) {
			return false
		}
		v.SetUint(n)
	default:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || v.OverflowInt(n) {
			return false
		}
		v.SetInt(n)
	}
	return true
}

// verbatim reports whether a JSON string's raw bytes are its value as
// json.Unmarshal decodes it: no escapes, and valid UTF-8 (which it would
// otherwise replace).
func verbatim(raw []byte) bool {
	for _, c := range raw {
		if c == '\\' {
			return false
		}
	}
	return utf8.Valid(raw)
}

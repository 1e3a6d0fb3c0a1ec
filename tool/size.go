package tool

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
)

// The cap on a result. A tool's result is encoded once, whole, before it
// goes anywhere; one far over the cap must not be: the host would hold it
// twice (the value and its JSON), and a small value (a slice of pointers to
// one large row) can encode to gigabytes. So before encoding, Run walks
// the value and adds up a lower bound of its JSON size, stopping as soon as
// it is over the cap; what passes is encoded, and checked again.

// MaxResultBytesDefault is the cap on a result a host sets when
// neither the tool nor the host says otherwise.
const MaxResultBytesDefault = 16 << 20

// maxResult is the cap of a call: the tool's, else the host's (CallInfo),
// else none.
func (t *Tool) maxResult(call *Call) int64 {
	switch {
	case t.maxResultBytes > 0:
		return t.maxResultBytes
	case call != nil && call.maxResultBytes > 0:
		return call.maxResultBytes
	}
	return 0
}

// tooLarge is the result of a call over its cap.
func tooLarge(size, limit int64, atLeast bool) Output {
	how := ""
	if atLeast {
		how = "at least "
	}
	return ErrorOutput(fmt.Sprintf("the tool's result is too large: %s%d bytes, over the limit of %d (MaxResultBytes)", how, size, limit))
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// sizeAtLeast returns a lower bound of the JSON size of v, stopping once it
// passes limit. Types with their own marshalling count as nothing here, and
// so do a struct's fields that json.Marshal may leave out (empty ones with
// omitempty or omitzero) and its embedded structs.
func sizeAtLeast(v any, limit int64) int64 {
	s := sizer{limit: limit}
	if !s.common(v, 0) {
		s.walk(reflect.ValueOf(v), 0)
	}
	return s.n
}

type sizer struct {
	n, limit int64
}

// commas is the number of commas between n elements.
func commas(n int) int64 { return int64(max(n-1, 0)) }

// common adds up the types JSON values usually come as without
// reflection (which would allocate for every map entry); false for any
// other type.
func (s *sizer) common(v any, depth int) bool {
	if s.n > s.limit || depth > 200 {
		return true
	}
	switch v := v.(type) {
	case nil:
		s.n += 4
	case string:
		s.n += int64(len(v)) + 2
	case bool, int, int64, float64, int32, uint, uint64:
		s.n++
	case json.RawMessage:
		s.n += nonSpace(v) // json.Marshal compacts it
	case []byte:
		s.n += int64(len(v))*4/3 + 2
	case []string:
		s.n += 2 + commas(len(v))
		for _, e := range v {
			s.n += int64(len(e)) + 2
		}
	case map[string]string:
		s.n += 2 + commas(len(v))
		for k, e := range v {
			s.n += int64(len(k)+len(e)) + 5 // four quotes and a colon
		}
	case []any:
		s.n += 2 + commas(len(v))
		for _, e := range v {
			if !s.common(e, depth+1) {
				s.walk(reflect.ValueOf(e), depth+1)
			}
		}
	case map[string]any:
		s.n += 2 + commas(len(v))
		for k, e := range v {
			s.n += int64(len(k)) + 3 // quotes and a colon
			if !s.common(e, depth+1) {
				s.walk(reflect.ValueOf(e), depth+1)
			}
		}
	default:
		return false
	}
	return true
}

// nonSpace counts the bytes of b that are not JSON white space.
func nonSpace(b []byte) int64 {
	n := int64(len(b))
	for _, c := range b {
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			n--
		}
	}
	return n
}

func (s *sizer) walk(v reflect.Value, depth int) {
	if s.n > s.limit || depth > 200 || !v.IsValid() {
		return
	}
	t := v.Type()
	if t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType) {
		return // opaque: checked after encoding
	}
	switch v.Kind() {
	case reflect.String:
		if t == jsonNumberType {
			s.n += int64(v.Len()) // written as it is, unquoted
			return
		}
		s.n += int64(v.Len()) + 2
	case reflect.Slice:
		if v.IsNil() {
			s.n += 4
			return
		}
		if t.Elem().Kind() == reflect.Uint8 {
			s.n += int64(v.Len())*4/3 + 2 // base64
			return
		}
		fallthrough
	case reflect.Array:
		s.n += 2 + commas(v.Len())
		for i := range v.Len() {
			if s.n > s.limit {
				return
			}
			s.walk(v.Index(i), depth+1)
		}
	case reflect.Map:
		if v.IsNil() {
			s.n += 4
			return
		}
		s.n += 2 + commas(v.Len())
		// Reused temporaries: MapRange's Key and Value would allocate a
		// copy of each.
		key, val := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
		it := v.MapRange()
		for it.Next() {
			if s.n > s.limit {
				return
			}
			s.n++ // the colon; a key is written as a string (quotes counted here or by walk)
			key.SetIterKey(it)
			val.SetIterValue(it)
			if key.Kind() == reflect.String {
				s.walk(key, depth+1)
			} else {
				s.n += 2
			}
			s.walk(val, depth+1)
		}
	case reflect.Struct:
		s.n += 2
		counted := 0
		for _, f := range sizedFields(t) {
			fv := v.Field(f.index)
			if f.optional && (fv.IsZero() || emptyValue(fv)) {
				continue // json.Marshal may leave it out
			}
			counted++
			s.n += int64(f.nameLen) + 3 // quotes and a colon
			s.walk(fv, depth+1)
		}
		s.n += commas(counted)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			s.n += 4
			return
		}
		s.walk(v.Elem(), depth+1)
	default:
		s.n++ // a number or a bool is at least a byte
	}
}

// emptyValue is encoding/json's omitempty test.
func emptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// sizedField is a struct field json.Marshal writes under its name.
type sizedField struct {
	index    int
	nameLen  int  // the JSON name's length
	optional bool // omitempty or omitzero: may be left out
}

// sizedFieldsByType caches sizedFields.
var sizedFieldsByType sync.Map // reflect.Type -> []sizedField

// sizedFields returns the fields of struct type t that json.Marshal writes
// under a name of their own: exported, not tagged "-", not embedded without
// a name (whose fields it promotes by rules not copied here; they count as
// nothing, which keeps the bound a lower one).
func sizedFields(t reflect.Type) []sizedField {
	if fs, ok := sizedFieldsByType.Load(t); ok {
		return fs.([]sizedField)
	}
	var fs []sizedField
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, tagged, ok := jsonName(f)
		if !ok || !f.IsExported() || f.Anonymous && !tagged {
			continue
		}
		fs = append(fs, sizedField{index: i, nameLen: len(name), optional: hasOption(opts, "omitempty") || hasOption(opts, "omitzero")})
	}
	sizedFieldsByType.Store(t, fs)
	return fs
}

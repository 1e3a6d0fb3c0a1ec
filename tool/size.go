package tool

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
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
// passes limit. Types with their own marshalling count as nothing here.
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
		s.n += int64(len(v))
	case []byte:
		s.n += int64(len(v))*4/3 + 2
	case []string:
		s.n += 2
		for _, e := range v {
			s.n += int64(len(e)) + 3
		}
	case map[string]string:
		s.n += 2
		for k, e := range v {
			s.n += int64(len(k)+len(e)) + 6
		}
	case []any:
		s.n += 2
		for _, e := range v {
			s.n++
			if !s.common(e, depth+1) {
				s.walk(reflect.ValueOf(e), depth+1)
			}
		}
	case map[string]any:
		s.n += 2
		for k, e := range v {
			s.n += int64(len(k)) + 4
			if !s.common(e, depth+1) {
				s.walk(reflect.ValueOf(e), depth+1)
			}
		}
	default:
		return false
	}
	return true
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
		s.n += 2
		for i := range v.Len() {
			if s.n > s.limit {
				return
			}
			s.n++ // the comma
			s.walk(v.Index(i), depth+1)
		}
	case reflect.Map:
		s.n += 2
		// Reused temporaries: MapRange's Key and Value would allocate a
		// copy of each.
		key, val := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
		it := v.MapRange()
		for it.Next() {
			if s.n > s.limit {
				return
			}
			s.n += 4 // quotes, colon, comma
			key.SetIterKey(it)
			val.SetIterValue(it)
			s.walk(key, depth+1)
			s.walk(val, depth+1)
		}
	case reflect.Struct:
		s.n += 2
		for i := range v.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			s.n += int64(len(t.Field(i).Name)) + 4
			s.walk(v.Field(i), depth+1)
		}
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

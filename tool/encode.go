package tool

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// appendJSON appends v's JSON, byte for byte as json.Marshal writes it, for
// the values a free-form result is usually made of — maps of strings to
// values, slices, strings, booleans, numbers and nil — without reflection;
// false means v holds something else (a struct, a pointer, a value with its
// own marshalling, a float json.Marshal refuses, nesting deeper than 64),
// and the caller encodes it with json.Marshal, which then decides and
// explains as it always has. b's contents past its length at the call are
// then undefined.
func appendJSON(b []byte, v any, depth int) ([]byte, bool) {
	if depth > 64 {
		return b, false
	}
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return appendJSONString(b, v), true
	case bool:
		return strconv.AppendBool(b, v), true
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case int32:
		return strconv.AppendInt(b, int64(v), 10), true
	case uint:
		return strconv.AppendUint(b, uint64(v), 10), true
	case uint64:
		return strconv.AppendUint(b, v, 10), true
	case float64:
		return appendJSONFloat(b, v, 64)
	case float32:
		return appendJSONFloat(b, float64(v), 32)
	case []string:
		return appendArray(b, v, appendStringValue)
	case []any:
		return appendArray(b, v, func(b []byte, e any) ([]byte, bool) { return appendJSON(b, e, depth+1) })
	case map[string]any:
		return appendObject(b, v, func(b []byte, e any) ([]byte, bool) { return appendJSON(b, e, depth+1) })
	case map[string]string:
		return appendObject(b, v, appendStringValue)
	}
	return b, false
}

// appendArray appends s as a JSON array (nil: null), each element by
// value; false as soon as value refuses one.
func appendArray[V any](b []byte, s []V, value func([]byte, V) ([]byte, bool)) ([]byte, bool) {
	if s == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i, e := range s {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = value(b, e); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

// appendObject appends m as a JSON object (nil: null) with its keys in
// json.Marshal's order, each value by value; false as soon as value
// refuses one.
func appendObject[V any](b []byte, m map[string]V, value func([]byte, V) ([]byte, bool)) ([]byte, bool) {
	if m == nil {
		return append(b, "null"...), true
	}
	b = append(b, '{')
	var small [16]string
	for i, k := range sortedKeys(m, small[:0]) {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendJSONString(b, k), ':')
		var ok bool
		if b, ok = value(b, m[k]); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendStringValue is appendJSONString as an element's encoder.
func appendStringValue(b []byte, s string) ([]byte, bool) { return appendJSONString(b, s), true }

// encodable reports whether appendJSON may take v: whether v is of a type
// it encodes (what v holds may still not be), so that a buffer is made only
// for those.
func encodable(v any) bool {
	switch v.(type) {
	case nil, string, bool, int, int64, int32, uint, uint64, float64, float32,
		[]string, []any, map[string]any, map[string]string:
		return true
	}
	return false
}

// sortedKeys returns m's keys in json.Marshal's order, appended to keys
// (the caller's, on its stack, for a small map).
func sortedKeys[V any](m map[string]V, keys []string) []string {
	if len(m) > cap(keys) {
		keys = make([]string, 0, len(m))
	}
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// appendJSONFloat is json.Marshal's float format: like %g, with its own
// exponent cut-offs and no padding of the exponent; false for NaN and the
// infinities, which json.Marshal refuses.
func appendJSONFloat(b []byte, f float64, bits int) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// e-09 is written e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// appendJSONString is json.Marshal's string: quoted, with <, > and &
// escaped for HTML, invalid UTF-8 replaced, and U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if htmlSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default: // other control characters, and <, > and &
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// htmlSafe tells the ASCII bytes json.Marshal writes as they are.
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for c := byte(0x20); c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

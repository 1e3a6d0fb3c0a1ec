package tool

import (
	"bytes"
	"encoding/json"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentsdk/agentsdk/internal/jsonscan"
)

// fastSchema checks input against a common subset of JSON Schema directly on
// the JSON bytes, without building a value tree first. It is sound only in
// one direction: when it says "valid", the full validator would agree. On
// anything it does not handle, and on anything invalid, it says "not
// valid", and the full validator decides and explains. Schemas inferred from
// Go types almost always fit the subset.
type fastSchema struct {
	types     typeSet
	props     map[string]*fastSchema // nil entries accept anything
	required  map[string]uint64      // name -> its bit in the seen mask
	allReq    uint64
	addl      *fastSchema // additionalProperties, when a schema
	addlFalse bool        // additionalProperties: false
	items     *fastSchema
	enum      []string // a string enum
	hasEnum   bool
	format    func(any) error   // the full validator's own format check
	formatOK  func(string) bool // true: the string passes format for sure (false: ask format)
	minLen    int               // -1 when absent
	maxLen    int
	pattern   *regexp.Regexp
	min, max  *big.Rat // inclusive bounds
	xmin      *big.Rat // exclusive bounds
	xmax      *big.Rat
	minItems  int // -1 when absent
	maxItems  int
}

type typeSet uint8

const (
	typeNull typeSet = 1 << iota
	typeBoolean
	typeObject
	typeArray
	typeNumber
	typeInteger
	typeString
)

var typeNames = map[string]typeSet{
	"null": typeNull, "boolean": typeBoolean, "object": typeObject, "array": typeArray,
	"number": typeNumber, "integer": typeInteger, "string": typeString,
}

// annotations are keywords that do not affect validation.
var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "$comment": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "contentEncoding": true, "contentMediaType": true,
}

// compileFast compiles the subset it handles; ok is false for any other
// schema, which then always takes the full validator.
func compileFast(doc any, root bool) (f *fastSchema, ok bool) {
	switch doc := doc.(type) {
	case bool:
		return nil, doc // true accepts anything; false is left to the full validator
	case map[string]any:
		f = &fastSchema{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
		for k, v := range doc {
			if !f.keyword(k, v, root) {
				return nil, false
			}
		}
		if f.required != nil {
			for _, bit := range f.required {
				f.allReq |= bit
			}
		}
		return f, true
	}
	return nil, false
}

func (f *fastSchema) keyword(k string, v any, root bool) bool {
	if annotations[k] {
		return true
	}
	switch k {
	case "$schema":
		return root && v == "https://json-schema.org/draft/2020-12/schema"
	case "type":
		switch v := v.(type) {
		case string:
			f.types = typeNames[v]
			return f.types != 0
		case []any:
			for _, t := range v {
				s, _ := t.(string)
				if typeNames[s] == 0 {
					return false
				}
				f.types |= typeNames[s]
			}
			return true
		}
	case "properties":
		props, ok := v.(map[string]any)
		if !ok {
			return false
		}
		f.props = make(map[string]*fastSchema, len(props))
		for name, p := range props {
			sub, ok := compileFast(p, false)
			if !ok {
				return false
			}
			f.props[name] = sub
		}
		return true
	case "required":
		names, ok := v.([]any)
		if !ok || len(names) > 64 {
			return false
		}
		f.required = map[string]uint64{}
		for i, n := range names {
			s, ok := n.(string)
			if !ok {
				return false
			}
			f.required[s] = 1 << i
		}
		return true
	case "additionalProperties":
		if b, ok := v.(bool); ok {
			f.addlFalse = !b
			return true
		}
		sub, ok := compileFast(v, false)
		f.addl = sub
		return ok
	case "items":
		sub, ok := compileFast(v, false)
		f.items = sub
		return ok && v != false
	case "enum":
		vals, ok := v.([]any)
		if !ok {
			return false
		}
		for _, e := range vals {
			s, ok := e.(string)
			if !ok {
				return false
			}
			f.enum = append(f.enum, s)
		}
		f.hasEnum = true
		return true
	case "format":
		s, ok := v.(string)
		if !ok {
			return false
		}
		f.format = formatSchema(s)
		if s == "uri" {
			f.formatOK = plainURI
		}
		return f.format != nil
	case "minLength", "maxLength", "minItems", "maxItems":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		i, err := n.Int64()
		if err != nil || i < 0 || i > 1<<31 {
			return false
		}
		switch k {
		case "minLength":
			f.minLen = int(i)
		case "maxLength":
			f.maxLen = int(i)
		case "minItems":
			f.minItems = int(i)
		case "maxItems":
			f.maxItems = int(i)
		}
		return true
	case "pattern":
		s, ok := v.(string)
		if !ok {
			return false
		}
		re, err := regexp.Compile(s) // as the full validator compiles it
		f.pattern = re
		return err == nil
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		r, ok := new(big.Rat).SetString(string(n))
		if !ok {
			return false
		}
		switch k {
		case "minimum":
			f.min = r
		case "maximum":
			f.max = r
		case "exclusiveMinimum":
			f.xmin = r
		case "exclusiveMaximum":
			f.xmax = r
		}
		return true
	}
	return false
}

// formatSchema returns the full validator's check of a format, taken from
// a compiled {"format": name}, so that the fast path checks formats exactly
// as the full validator does. It is nil for a format the validator does not
// know (which it then ignores, and so does the fast path's caller).
func formatSchema(name string) func(any) error {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource("agentsdk:///format.json", map[string]any{"format": name}); err != nil {
		return nil
	}
	s, err := c.Compile("agentsdk:///format.json")
	if err != nil || s.Format == nil {
		return nil
	}
	return s.Format.Validate
}

// valid reports whether data is a single JSON value, surrounded by nothing
// but white space, that matches f. False means "invalid or not sure".
func (f *fastSchema) valid(data []byte) bool {
	s := jsonscan.Scanner{Data: data}
	s.Space()
	return checkValue(&s, f, 0) && s.AtEnd()
}

const maxFastDepth = 64

// checkValue reads one value and checks it against f (nil accepts anything).
func checkValue(s *jsonscan.Scanner, f *fastSchema, depth int) bool {
	switch c := s.Peek(); {
	case c == '{':
		return depth < maxFastDepth && f.allows(typeObject) && checkObject(s, f, depth+1)
	case c == '[':
		return depth < maxFastDepth && f.allows(typeArray) && checkArray(s, f, depth+1)
	case c == '"':
		raw, plain, ok := s.String()
		return ok && f.allows(typeString) && f.checkString(raw, plain)
	case c == 't':
		return f.allows(typeBoolean) && s.Literal("true")
	case c == 'f':
		return f.allows(typeBoolean) && s.Literal("false")
	case c == 'n':
		return f.allows(typeNull) && s.Literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		tok, integer, ok := s.Number()
		return ok && f.checkNumber(tok, integer)
	}
	return false
}

func (f *fastSchema) allows(t typeSet) bool {
	if f == nil {
		return true
	}
	if f.hasEnum && t != typeString {
		return false
	}
	return f.types == 0 || f.types&t != 0
}

func checkObject(s *jsonscan.Scanner, f *fastSchema, depth int) bool {
	s.Pos++ // {
	var seen uint64
	s.Space()
	if s.Consume('}') {
		return f == nil || f.allReq == 0
	}
	for {
		s.Space()
		key, plain, ok := s.String()
		if !ok || !plain {
			return false // escaped or non-ASCII keys take the full validator
		}
		var sub *fastSchema
		if f != nil {
			p, known := f.props[string(key)]
			switch {
			case known:
				sub = p
			case f.addlFalse:
				return false
			default:
				sub = f.addl
			}
			seen |= f.required[string(key)]
		}
		s.Space()
		if !s.Consume(':') {
			return false
		}
		s.Space()
		if !checkValue(s, sub, depth) {
			return false
		}
		s.Space()
		if s.Consume('}') {
			return f == nil || seen&f.allReq == f.allReq
		}
		if !s.Consume(',') {
			return false
		}
	}
}

func checkArray(s *jsonscan.Scanner, f *fastSchema, depth int) bool {
	s.Pos++ // [
	var items *fastSchema
	if f != nil {
		items = f.items
	}
	n := 0
	s.Space()
	if s.Consume(']') {
		return f.countOK(0)
	}
	for {
		s.Space()
		if !checkValue(s, items, depth) {
			return false
		}
		n++
		s.Space()
		if s.Consume(']') {
			return f.countOK(n)
		}
		if !s.Consume(',') {
			return false
		}
	}
}

func (f *fastSchema) countOK(n int) bool {
	if f == nil {
		return true
	}
	return (f.minItems < 0 || n >= f.minItems) && (f.maxItems < 0 || n <= f.maxItems)
}

func (f *fastSchema) checkString(raw []byte, plain bool) bool {
	if f == nil || (!f.hasEnum && f.minLen < 0 && f.maxLen < 0 && f.pattern == nil && f.format == nil) {
		return true
	}
	var str string
	if plain {
		// A view of raw, not a copy: nothing below keeps str, and raw does
		// not change while the input is checked.
		str = unsafe.String(unsafe.SliceData(raw), len(raw))
	} else {
		var ok bool
		if str, ok = unquote(raw); !ok {
			return false
		}
	}
	if f.minLen >= 0 || f.maxLen >= 0 {
		n := utf8.RuneCountInString(str)
		if (f.minLen >= 0 && n < f.minLen) || (f.maxLen >= 0 && n > f.maxLen) {
			return false
		}
	}
	if f.hasEnum && !slices.Contains(f.enum, str) {
		return false
	}
	if f.pattern != nil && !f.pattern.MatchString(str) {
		return false
	}
	return f.format == nil || f.formatOK != nil && f.formatOK(str) || f.format(str) == nil
}

// plainURI reports whether s is an absolute URI of the plainest kind:
// a scheme, then only unreserved characters, sub-delimiters, '/' and '?'
// (no port, user, fragment, IP literal or escape). Every such string passes
// the full validator's "uri" check (url.Parse, an absolute URL, no bare IPv6
// host), which the fast path thus skips for the usual case, with its
// allocations; TestPlainURIPassesTheValidator holds the two together.
func plainURI(s string) bool {
	i := 0
	for ; i < len(s) && s[i] != ':'; i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	if i == 0 || i == len(s) {
		return false
	}
	for _, c := range []byte(s[i+1:]) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~/?=&+,;!$'()*", c) >= 0) {
			return false
		}
	}
	return true
}

// unquote decodes the inside of a JSON string exactly as the full
// validator's JSON decoder does. (Apart from checkString, so that its plain
// strings need no allocation.)
func unquote(raw []byte) (string, bool) {
	quoted := make([]byte, 0, len(raw)+2)
	quoted = append(append(append(quoted, '"'), raw...), '"')
	var str string
	err := json.Unmarshal(quoted, &str)
	return str, err == nil
}

// checkNumber checks a number's type and bounds.
func (f *fastSchema) checkNumber(tok []byte, integer bool) bool {
	if hugeNumber(tok) {
		return false // the full path refuses it with a clear message
	}
	if f == nil {
		return true
	}
	if f.hasEnum {
		return false
	}
	// 1.0 and 1e2 are integers too, but leave them to the full validator.
	if f.types != 0 && f.types&typeNumber == 0 && !(integer && f.types&typeInteger != 0) {
		return false
	}
	if f.min == nil && f.max == nil && f.xmin == nil && f.xmax == nil {
		return true
	}
	r, ok := new(big.Rat).SetString(string(tok))
	if !ok {
		return false
	}
	return (f.min == nil || r.Cmp(f.min) >= 0) && (f.max == nil || r.Cmp(f.max) <= 0) &&
		(f.xmin == nil || r.Cmp(f.xmin) > 0) && (f.xmax == nil || r.Cmp(f.xmax) < 0)
}

// Bounds on numbers in input: beyond them a number is refused before
// validation, since exact arithmetic on it (10^1e9) would take the host down.
const (
	maxNumberLen      = 1000
	maxNumberExponent = 1000
)

// hugeNumber reports whether a number token is beyond those bounds.
func hugeNumber(tok []byte) bool {
	if len(tok) > maxNumberLen {
		return true
	}
	i := bytes.IndexAny(tok, "eE")
	if i < 0 {
		return false
	}
	exp := strings.TrimLeft(string(tok[i+1:]), "+-")
	exp = strings.TrimLeft(exp, "0")
	n, err := strconv.Atoi(exp)
	return len(exp) > 6 || err != nil && exp != "" || n > maxNumberExponent
}

// findHugeNumber returns the first number in a JSON text that is beyond the
// bounds, or nil. It scans the text without parsing it, skipping strings.
func findHugeNumber(data []byte) []byte {
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case c == '-' || ('0' <= c && c <= '9'):
			j := i
			for j < len(data) && strings.IndexByte("0123456789+-.eE", data[j]) >= 0 {
				j++
			}
			if hugeNumber(data[i:j]) {
				return data[i:j]
			}
			i = j - 1
		}
	}
	return nil
}

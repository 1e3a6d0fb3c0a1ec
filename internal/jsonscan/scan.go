// Package jsonscan reads JSON text in place, without decoding it into Go
// values: enough to check syntax, pick an object's fields apart and look at
// strings and numbers, at a fraction of encoding/json's cost. Its grammar is
// RFC 8259's, as encoding/json accepts it.
package jsonscan

import (
	"errors"
	"unicode/utf8"
)

// MaxDepth is how deeply Skip follows nested objects and arrays.
const MaxDepth = 10000

// Scanner reads one JSON text. Pos is the offset of the next byte to read.
type Scanner struct {
	Data  []byte
	Pos   int
	depth int
}

// Space skips white space.
func (s *Scanner) Space() {
	for s.Pos < len(s.Data) {
		switch s.Data[s.Pos] {
		case ' ', '\t', '\n', '\r':
			s.Pos++
		default:
			return
		}
	}
}

// Peek returns the next byte, or 0 at the end.
func (s *Scanner) Peek() byte {
	if s.Pos < len(s.Data) {
		return s.Data[s.Pos]
	}
	return 0
}

// Consume skips c if it is the next byte and reports whether it was.
func (s *Scanner) Consume(c byte) bool {
	if s.Pos < len(s.Data) && s.Data[s.Pos] == c {
		s.Pos++
		return true
	}
	return false
}

// AtEnd reports whether only white space is left.
func (s *Scanner) AtEnd() bool {
	s.Space()
	return s.Pos == len(s.Data)
}

// Literal reads lit (true, false or null) if it is next.
func (s *Scanner) Literal(lit string) bool {
	if len(s.Data)-s.Pos < len(lit) || string(s.Data[s.Pos:s.Pos+len(lit)]) != lit {
		return false
	}
	s.Pos += len(lit)
	return true
}

// String reads a string at Pos, returning its bytes between the quotes and
// whether they are plain ASCII with no escapes (and so are the value).
func (s *Scanner) String() (raw []byte, plain bool, ok bool) {
	if s.Peek() != '"' {
		return nil, false, false
	}
	start := s.Pos + 1
	plain = true
	for i := start; i < len(s.Data); i++ {
		// Most bytes are plain: step over them in a tight loop.
		for i < len(s.Data) && plainByte[s.Data[i]] {
			i++
		}
		if i >= len(s.Data) {
			break
		}
		c := s.Data[i]
		switch {
		case c == '"':
			s.Pos = i + 1
			return s.Data[start:i], plain, true
		case c == '\\':
			plain = false
			i++
			if i >= len(s.Data) {
				return nil, false, false
			}
			switch s.Data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(s.Data) {
					return nil, false, false
				}
				for _, h := range s.Data[i+1 : i+5] {
					if !isHex(h) {
						return nil, false, false
					}
				}
				i += 4
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		default: // c >= utf8.RuneSelf
			plain = false
		}
	}
	return nil, false, false
}

// plainByte tells the bytes a string can hold as they are, with no
// further look: printable ASCII but the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Number reads a number at Pos, returning its text and whether it has no
// fraction or exponent.
func (s *Scanner) Number() (tok []byte, integer bool, ok bool) {
	d, i := s.Data, s.Pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	default:
		return nil, false, false
	}
	integer = true
	if i < len(d) && d[i] == '.' {
		integer = false
		i++
		if i >= len(d) || !isDigit(d[i]) {
			return nil, false, false
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		integer = false
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !isDigit(d[i]) {
			return nil, false, false
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	tok = d[s.Pos:i]
	s.Pos = i
	return tok, integer, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// Enter notes one more level of nesting; false means too deep.
func (s *Scanner) Enter() bool {
	s.depth++
	return s.depth <= MaxDepth
}

// Leave undoes Enter.
func (s *Scanner) Leave() { s.depth-- }

// Skip reads any one value, checking its syntax.
func (s *Scanner) Skip() bool {
	switch c := s.Peek(); {
	case c == '{':
		if !s.Enter() {
			return false
		}
		ok := s.skipMembers()
		s.Leave()
		return ok
	case c == '[':
		if !s.Enter() {
			return false
		}
		ok := s.skipElements()
		s.Leave()
		return ok
	}
	return s.scalar()
}

// scalar reads a string, number, true, false or null.
func (s *Scanner) scalar() bool {
	switch c := s.Peek(); {
	case c == '"':
		_, _, ok := s.String()
		return ok
	case c == 't':
		return s.Literal("true")
	case c == 'f':
		return s.Literal("false")
	case c == 'n':
		return s.Literal("null")
	case c == '-' || isDigit(c):
		_, _, ok := s.Number()
		return ok
	}
	return false
}

// skipMembers reads an object from its {.
func (s *Scanner) skipMembers() bool {
	s.Pos++
	s.Space()
	if s.Consume('}') {
		return true
	}
	for {
		s.Space()
		if _, _, ok := s.String(); !ok {
			return false
		}
		s.Space()
		if !s.Consume(':') {
			return false
		}
		s.Space()
		if !s.Skip() {
			return false
		}
		s.Space()
		if s.Consume('}') {
			return true
		}
		if !s.Consume(',') {
			return false
		}
	}
}

// skipElements reads an array from its [.
func (s *Scanner) skipElements() bool {
	s.Pos++
	s.Space()
	if s.Consume(']') {
		return true
	}
	for {
		s.Space()
		if !s.Skip() {
			return false
		}
		s.Space()
		if s.Consume(']') {
			return true
		}
		if !s.Consume(',') {
			return false
		}
	}
}

// ErrSyntax is returned for text that is not JSON, or not the JSON asked for.
var ErrSyntax = errors.New("invalid JSON")

// Object reads data as one JSON object, calling field for each member with
// its key (the raw bytes, and whether they are plain) and its value's text.
// It checks the syntax of the whole text.
func Object(data []byte, field func(key []byte, plain bool, value []byte) error) error {
	s := Scanner{Data: data}
	s.Space()
	if !s.Consume('{') {
		return ErrSyntax
	}
	s.Space()
	if s.Consume('}') {
		if !s.AtEnd() {
			return ErrSyntax
		}
		return nil
	}
	for {
		s.Space()
		key, plain, ok := s.String()
		if !ok {
			return ErrSyntax
		}
		s.Space()
		if !s.Consume(':') {
			return ErrSyntax
		}
		s.Space()
		start := s.Pos
		if !s.Skip() {
			return ErrSyntax
		}
		if err := field(key, plain, s.Data[start:s.Pos]); err != nil {
			return err
		}
		s.Space()
		if s.Consume('}') {
			break
		}
		if !s.Consume(',') {
			return ErrSyntax
		}
	}
	if !s.AtEnd() {
		return ErrSyntax
	}
	return nil
}

package jsonscan

import (
	"hash/maphash"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Step is one step of a path into a JSON value: an object's member, by its
// key, or an array's element, by its index.
type Step struct {
	Key   string // the member's key, unescaped; "" for an element
	Index int    // the element's index; -1 for a member
}

// DuplicateKeys reads data as one JSON text and returns the path of each
// object member whose key repeats an earlier key of the same object, in the
// order they come, at most limit of them (limit <= 0: all). Keys are
// compared as encoding/json decodes them, so "a" and "\u0061" are the same
// key, and so are two invalid UTF-8 sequences that each decode to U+FFFD.
// It reads the text once, compares the keys of a small object one by one
// and looks those of a large one up in a hash table, and allocates only
// for what it returns. The error is [ErrSyntax] for text that is not JSON.
func DuplicateKeys(data []byte, limit int) ([][]Step, error) {
	d := dupScanners.Get().(*dupScanner)
	d.Scanner = Scanner{Data: data}
	d.limit = limit
	d.Space()
	ok := d.value() && d.AtEnd()
	found := d.found
	d.release()
	if !ok {
		return found, ErrSyntax
	}
	return found, nil
}

// dupScanner walks a JSON text keeping the keys of the objects it is in.
// Its slices are stacks, one region per open object (or array, for path),
// reused from one text to the next.
type dupScanner struct {
	Scanner
	keys    [][]byte  // the keys read so far of each open object
	table   []int32   // the hash tables of open large objects: 1 + an index in keys, or 0
	path    []pathRef // where the value being read is
	scratch []byte    // unescaped keys
	seed    maphash.Seed
	found   [][]Step
	limit   int
}

var dupScanners = sync.Pool{New: func() any { return &dupScanner{seed: maphash.MakeSeed()} }}

// release returns d to the pool, unless it grew large on a large text.
func (d *dupScanner) release() {
	if cap(d.keys) > 1<<10 || cap(d.table) > 1<<12 || cap(d.path) > 1<<10 || cap(d.scratch) > 1<<14 {
		return
	}
	d.Scanner, d.found = Scanner{}, nil
	d.keys, d.table, d.path, d.scratch = d.keys[:0], d.table[:0], d.path[:0], d.scratch[:0]
	clear(d.keys[:cap(d.keys)]) // let the text go
	clear(d.path[:cap(d.path)])
	dupScanners.Put(d)
}

// pathRef is a step of the path being read.
type pathRef struct {
	member bool
	key    []byte // a member's key, unescaped
	index  int    // an element's index
}

// tableAt is the number of keys from which an object's keys are looked
// up in a hash table instead of compared one by one.
const tableAt = 16

func (d *dupScanner) value() bool {
	switch d.Peek() {
	case '{':
		return d.object()
	case '[':
		return d.array()
	}
	return d.scalar()
}

func (d *dupScanner) object() bool {
	if !d.Enter() {
		return false
	}
	d.Pos++ // {
	d.Space()
	if d.Consume('}') {
		d.Leave()
		return true
	}
	keys, table, path, scratch := len(d.keys), len(d.table), len(d.path), len(d.scratch)
	d.path = append(d.path, pathRef{member: true})
	ok := d.members(keys, table)
	d.keys, d.table, d.path, d.scratch = d.keys[:keys], d.table[:table], d.path[:path], d.scratch[:scratch]
	d.Leave()
	return ok
}

// members reads an object's members; its keys start at keys[first] and
// its hash table, once it has one, at table[tableStart].
func (d *dupScanner) members(first, tableStart int) bool {
	for {
		d.Space()
		raw, plain, ok := d.String()
		if !ok {
			return false
		}
		key := raw
		if !plain {
			start := len(d.scratch)
			d.scratch = appendUnquoted(d.scratch, raw)
			key = d.scratch[start:len(d.scratch):len(d.scratch)]
		}
		d.path[len(d.path)-1].key = key
		if d.add(key, first, tableStart) {
			d.report()
		}
		d.Space()
		if !d.Consume(':') {
			return false
		}
		d.Space()
		if !d.value() {
			return false
		}
		d.Space()
		if d.Consume('}') {
			return true
		}
		if !d.Consume(',') {
			return false
		}
	}
}

// add adds key to the object whose keys start at keys[first], unless it
// is there already: then it reports true. A small object's keys are
// compared one by one; a large one's are in a hash table (open
// addressing, linear probing) at table[tableStart:], the last region of
// table since the object's own members are being read.
func (d *dupScanner) add(key []byte, first, tableStart int) bool {
	n := len(d.keys) - first
	if n < tableAt {
		for _, k := range d.keys[first:] {
			if len(k) == len(key) && string(k) == string(key) {
				return true
			}
		}
		d.keys = append(d.keys, key)
		if n+1 == tableAt {
			d.rehash(first, tableStart)
		}
		return false
	}
	t := d.table[tableStart:]
	mask := uint64(len(t) - 1)
	for i := maphash.Bytes(d.seed, key) & mask; ; i = (i + 1) & mask {
		j := t[i]
		if j == 0 {
			t[i] = int32(len(d.keys) + 1)
			break
		}
		if k := d.keys[j-1]; len(k) == len(key) && string(k) == string(key) {
			return true
		}
	}
	d.keys = append(d.keys, key)
	if 2*(n+1) > len(t) {
		d.rehash(first, tableStart)
	}
	return false
}

// rehash builds the object's hash table anew, four times the size of its
// keys.
func (d *dupScanner) rehash(first, tableStart int) {
	size := 4
	for size < 4*(len(d.keys)-first) {
		size <<= 1
	}
	d.table = append(d.table[:tableStart], make([]int32, size)...)
	t := d.table[tableStart:]
	mask := uint64(size - 1)
	for j := first; j < len(d.keys); j++ {
		i := maphash.Bytes(d.seed, d.keys[j]) & mask
		for t[i] != 0 {
			i = (i + 1) & mask
		}
		t[i] = int32(j + 1)
	}
}

func (d *dupScanner) array() bool {
	if !d.Enter() {
		return false
	}
	d.Pos++ // [
	d.Space()
	if d.Consume(']') {
		d.Leave()
		return true
	}
	path := len(d.path)
	d.path = append(d.path, pathRef{})
	ok := d.elements()
	d.path = d.path[:path]
	d.Leave()
	return ok
}

func (d *dupScanner) elements() bool {
	for i := 0; ; i++ {
		d.path[len(d.path)-1].index = i
		d.Space()
		if !d.value() {
			return false
		}
		d.Space()
		if d.Consume(']') {
			return true
		}
		if !d.Consume(',') {
			return false
		}
	}
}

// report records the path being read as a duplicate.
func (d *dupScanner) report() {
	if d.limit > 0 && len(d.found) >= d.limit {
		return
	}
	p := make([]Step, len(d.path))
	for i, r := range d.path {
		if r.member {
			p[i] = Step{Key: string(r.key), Index: -1}
		} else {
			p[i] = Step{Index: r.index}
		}
	}
	d.found = append(d.found, p)
}

// appendUnquoted appends to dst the value of a string's raw bytes between
// its quotes, as [Scanner.String] returns them, decoded exactly as
// encoding/json decodes strings: escapes resolved, and each invalid UTF-8
// byte or unpaired surrogate escape replaced by U+FFFD.
func appendUnquoted(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\' && i+1 < len(raw):
			e := raw[i+1]
			i += 2
			switch e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, ok := hex4(raw[i:])
				if !ok {
					return dst // not reached for text String accepted
				}
				i += 4
				if utf16.IsSurrogate(r) {
					if len(raw)-i >= 6 && raw[i] == '\\' && raw[i+1] == 'u' {
						if r2, ok := hex4(raw[i+2:]); ok {
							if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
								dst = utf8.AppendRune(dst, dec)
								i += 6
								continue
							}
						}
					}
					r = unicode.ReplacementChar
				}
				dst = utf8.AppendRune(dst, r)
			default: // " \ /
				dst = append(dst, e)
			}
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			dst = utf8.AppendRune(dst, r)
			i += size
		}
	}
	return dst
}

// hex4 reads four hex digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

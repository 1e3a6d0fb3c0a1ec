package jsonscan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
)

// pathString renders a path as a JSON Pointer, for comparing in tests.
func pathString(p []Step) string {
	var b strings.Builder
	for _, s := range p {
		b.WriteByte('/')
		if s.Index >= 0 {
			b.WriteString(strconv.Itoa(s.Index))
		} else {
			b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s.Key))
		}
	}
	return b.String()
}

func pathStrings(ps [][]Step) string {
	var out []string
	for _, p := range ps {
		out = append(out, pathString(p))
	}
	return strings.Join(out, " ")
}

// manyKeys is an object of n distinct keys k0…, then the extra members.
func manyKeys(n int, extra string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, `"k%d":%d,`, i, i)
	}
	b.WriteString(extra + "}")
	return b.String()
}

func TestDuplicateKeys(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{}`, ``},
		{`{"environment":"staging","environment":"production"}`, `/environment`},
		{`{"a":1,"b":2,"c":3}`, ``},
		{` { "a" : 1 , "a" : 2 } `, `/a`},
		{`{"a":1,"a":2,"a":3}`, `/a /a`},
		{`{"a":{"b":1},"c":{"b":2}}`, ``},                        // the same key in sibling objects
		{`{"a":{"a":{"a":1}}}`, ``},                              // and at different depths
		{`{"a":{"b":{"c":1,"c":2}}}`, `/a/b/c`},                  // nested
		{`{"a":{"b":1,"b":2},"a":3}`, `/a/b /a`},                 // in order
		{`{"list":[{"x":1},{"x":2,"x":3}]}`, `/list/1/x`},        // arrays of objects
		{`[[{"a":1}],[{},{"b":[{"c":1,"c":1}]}]]`, `/1/1/b/0/c`}, // arrays all the way
		{`{"a":1,"\u0061":2}`, `/a`},                             // escaped keys equal once unescaped
		{`{"\u0061":1,"a":2}`, `/a`},
		{`{"\u00e9":1,"é":2}`, `/é`},
		{`{"\ud83d\ude00":1,"😀":2}`, `/😀`},
		{`{"\ud800":1,"\udc00":2}`, "/\ufffd"}, // unpaired surrogates both decode to U+FFFD
		{"{\"\xff\":1,\"\xfe\":2}", "/\ufffd"}, // and so do invalid UTF-8 bytes
		{`{"a\nb":1,"a\u000ab":2}`, "/a\nb"},
		{`{"a/b":1,"a\/b":2}`, `/a~1b`},
		{`{"":1,"":2}`, `/`},
		{`{"A":1,"a":2}`, ``}, // keys are compared exactly, not folded
		{`{"a":"a","b":"a"}`, ``},
		{manyKeys(100, `"k7":0`), `/k7`},          // an indexed object
		{manyKeys(100, `"k100":0,"k0":1`), `/k0`}, // indexed after more keys
		{manyKeys(tableAt, `"k0":0`), `/k0`},      // at the threshold
		{manyKeys(tableAt-1, `"k0":0,"k0":1`), `/k0 /k0`},
		{`{"a":[` + manyKeys(40, `"\u006b3":1`) + `,{"k3":1}]}`, `/a/0/k3`},
	} {
		got, err := DuplicateKeys([]byte(c.in), 0)
		if err != nil {
			t.Errorf("DuplicateKeys(%s): %v", c.in, err)
			continue
		}
		if s := pathStrings(got); s != c.want {
			t.Errorf("DuplicateKeys(%.80s) = %q, want %q", c.in, s, c.want)
		}
	}
}

func TestDuplicateKeysLimit(t *testing.T) {
	got, err := DuplicateKeys([]byte(`{"a":1,"a":2,"b":1,"b":2,"c":1,"c":2}`), 2)
	if err != nil || pathStrings(got) != "/a /b" {
		t.Errorf("with limit 2: %q, %v", pathStrings(got), err)
	}
}

func TestDuplicateKeysSyntax(t *testing.T) {
	for _, s := range seeds {
		_, err := DuplicateKeys([]byte(s), 0)
		if valid := json.Valid([]byte(s)); (err == nil) != valid {
			t.Errorf("DuplicateKeys(%q): error %v, json.Valid says %v", s, err, valid)
		}
	}
	deep := strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1)
	if _, err := DuplicateKeys([]byte(deep), 0); err != ErrSyntax {
		t.Errorf("nesting past MaxDepth: %v, want ErrSyntax", err)
	}
	ok := strings.Repeat(`[{"a":`, MaxDepth/2) + "1" + strings.Repeat("}]", MaxDepth/2)
	if _, err := DuplicateKeys([]byte(ok), 0); err != nil {
		t.Errorf("nesting at MaxDepth: %v", err)
	}
}

var dupSeeds = []string{
	`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"a":{"b":[{"c":1,"c":2}]}}`, `{"\ud800":1,"\udc00":2}`,
	"{\"\xff\":1,\"\xfe\":2}", `{"\ud83d\ude00":1,"😀":2}`, `{"\ud83d\u0041":1,"\ufffdA":2}`,
	`[{"x":1},{"x":1,"y":2,"x":3}]`, manyKeys(40, `"k1":1`), `{"n":2` + strings.Repeat("0", 400) + `,"n":1e999}`, `{"a\/b":1,"a/b":2}`, `{"\"":1,"\u0022":2}`,
}

// reference finds the duplicate keys with encoding/json's own decoder.
func reference(data []byte) (string, error) {
	type frame struct {
		object bool
		keys   map[string]bool
		key    string
		index  int
		inKey  bool // the next token of an object is a key
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers beyond float64 are JSON too
	var stack []*frame
	var found []string
	path := func() string {
		var p []Step
		for _, f := range stack {
			if f.object {
				p = append(p, Step{Key: f.key, Index: -1})
			} else {
				p = append(p, Step{Index: f.index})
			}
		}
		return pathString(p)
	}
	// value notes that a value was read in the innermost container.
	value := func() {
		if n := len(stack); n > 0 {
			if f := stack[n-1]; f.object {
				f.inKey = true
			} else {
				f.index++
			}
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return strings.Join(found, " "), nil
		}
		if err != nil {
			return "", err
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].inKey {
			if k, ok := tok.(string); ok {
				f := stack[n-1]
				f.key, f.inKey = k, false
				if f.keys[k] {
					found = append(found, path())
				}
				f.keys[k] = true
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, inKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			value()
		default:
			value()
		}
	}
}

// DuplicateKeys finds exactly the keys encoding/json decodes as repeated,
// and accepts exactly the texts it accepts.
func FuzzDuplicateKeysAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range append(seeds, dupSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := DuplicateKeys(data, 0)
		if valid := json.Valid(data); (err == nil) != valid {
			t.Fatalf("DuplicateKeys(%q): error %v, json.Valid says %v", data, err, valid)
		}
		if err != nil {
			return
		}
		want, err := reference(data)
		if err != nil {
			t.Fatalf("the reference failed on %q: %v", data, err)
		}
		if s := pathStrings(got); s != want {
			t.Fatalf("DuplicateKeys(%q) = %q, encoding/json sees %q", data, s, want)
		}
	})
}

// appendUnquoted decodes strings exactly as encoding/json does.
func FuzzUnquoteAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{`"a"`, `"\u0061\n\t\/\\\""`, `"\ud800"`, `"\ud800\udc00"`, `"\ud800\u0041"`, `"\udc00\ud800"`,
		`"\ud83d\ude00"`, "\"\xff\xfe\"", "\"\xed\xa0\x80\"", `"é😀"`, `"\uD834\uDD1E"`, `"\ud800\ud800\udc00"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := Scanner{Data: data}
		raw, plain, ok := s.String()
		if !ok || s.Pos != len(data) {
			return
		}
		var want string
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("String accepts %q, encoding/json does not: %v", data, err)
		}
		if plain && string(raw) != want {
			t.Fatalf("String says %q is plain, but it decodes to %q", raw, want)
		}
		if got := appendUnquoted(nil, raw); string(got) != want {
			t.Fatalf("appendUnquoted(%q) = %q, encoding/json decodes %q", raw, got, want)
		}
	})
}

var benchTexts = []struct{ name, in string }{
	{"small", `{"prUrl":"https://github.com/acme/checkout/pull/42"}`},
	{"nested", `{"prUrl":"https://github.com/acme/checkout/pull/42","mode":"words","count":3,"home":{"street":"Main","city":"Springfield"},"visits":[{"street":"A"},{"street":"B"}],"meta":{"a":"1","b":"2"}}`},
	{"escaped", `{"pr\u0055rl":"https://github.com/acme/checkout/pull/42","café":1}`},
	{"100keys", strings.TrimSuffix(manyKeys(100, ""), ",}") + "}"},
}

func BenchmarkDuplicateKeys(b *testing.B) {
	for _, c := range benchTexts {
		data := []byte(c.in)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if found, err := DuplicateKeys(data, 0); err != nil || found != nil {
					b.Fatal(found, err)
				}
			}
		})
	}
}

// BenchmarkSkip is the floor DuplicateKeys is measured against: reading
// the same texts without looking at their keys.
func BenchmarkSkip(b *testing.B) {
	for _, c := range benchTexts {
		data := []byte(c.in)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				s := Scanner{Data: data}
				if !s.Skip() {
					b.Fatal("invalid")
				}
			}
		})
	}
}

package tool

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

type encodeNamed string

func (encodeNamed) MarshalJSON() ([]byte, error) { return []byte(`"named"`), nil }

// encodeValues are values appendJSON must write as json.Marshal does, or
// leave to it.
var encodeValues = []any{
	nil, "", "plain", "héllo ☃", "<a href='x'>&amp;</a>", "tab\tnew\nline\rcr\bbs\fff", "\x00\x01\x1f\x7f", "quote\" back\\",
	"bad \xff utf8 \xc3", "\u2028\u2029", "\ufffd", true, false, 0, -1, math.MaxInt64, int64(math.MinInt64), int32(-7), uint(7),
	uint64(math.MaxUint64), 0.0, math.Copysign(0, -1), 1.5, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64,
	float32(1e21), float32(1e-7), float32(3.14), float32(16777216), math.Inf(1), math.NaN(), float32(math.Inf(-1)),
	[]string(nil), []string{}, []string{"a", "<b>"}, []any(nil), []any{}, []any{1.0, "x", nil, []any{true}},
	map[string]any(nil), map[string]any{}, map[string]any{"b": 1.0, "a": "x", "A": nil, "é": []string{"z"}, "<": map[string]string{"k": "v"}},
	map[string]string(nil), map[string]string{"z": "1", "y": "2"}, map[string]any{"bad": math.NaN()}, map[string]any{"named": encodeNamed("x")},
	[]any{json.RawMessage(`{"a" : 1}`)}, map[string]any{"n": json.Number("12")}, []byte("bytes"), struct{ A int }{1}, encodeNamed("x"),
	map[string]any{"k1": 1.0, "k2": 2.0, "k3": 3.0, "k4": 4.0, "k5": 5.0, "k6": 6.0, "k7": 7.0, "k8": 8.0, "k9": 9.0, "k10": 10.0,
		"k11": 11.0, "k12": 12.0, "k13": 13.0, "k14": 14.0, "k15": 15.0, "k16": 16.0, "k17": 17.0},
}

// TestAppendJSONAsMarshal: what appendJSON writes is json.Marshal's output
// byte for byte, and what json.Marshal refuses appendJSON leaves to it.
func TestAppendJSONAsMarshal(t *testing.T) {
	for _, v := range encodeValues {
		checkAppendJSON(t, v)
	}
	deep := any("x")
	for range 70 {
		deep = []any{deep}
	}
	if _, ok := appendJSON(nil, deep, 0); ok {
		t.Error("appendJSON took a value nested 70 deep")
	}
	for _, v := range []any{"plain", map[string]any{"prUrl": "https://x", "checks": []string{"unit"}, "ready": true}, 1.5, []any{nil}} {
		if _, ok := appendJSON(nil, v, 0); !ok {
			t.Errorf("appendJSON did not take %#v", v)
		}
	}
}

func checkAppendJSON(t *testing.T, v any) {
	t.Helper()
	want, err := json.Marshal(v)
	got, ok := appendJSON([]byte("prefix"), v, 0)
	if !ok {
		return
	}
	if err != nil {
		t.Fatalf("%#v: appendJSON wrote %s where json.Marshal fails: %v", v, got, err)
	}
	if !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("%#v: appendJSON wrote %s, json.Marshal %s", v, got[len("prefix"):], want)
	}
}

func FuzzAppendJSON(f *testing.F) {
	f.Add([]byte(`{"a":[1,"x",null,true,{"b":1e-7}],"<":"\u2028"}`), "s\xff<", 1.5, int64(-3))
	f.Fuzz(func(t *testing.T, doc []byte, s string, x float64, n int64) {
		var v any
		if json.Unmarshal(doc, &v) == nil {
			checkAppendJSON(t, v)
			if want, err := json.Marshal(v); err == nil && sizeAtLeast(v, math.MaxInt64) > int64(len(want)) {
				t.Fatalf("%s: counted %d bytes, json.Marshal writes %d", want, sizeAtLeast(v, math.MaxInt64), len(want))
			}
		}
		checkAppendJSON(t, s)
		checkAppendJSON(t, map[string]any{s: x, "n": n, "f": float32(x), "l": []string{s}})
		checkAppendJSON(t, map[string]string{s: s})
	})
}

// BenchmarkEncodeResult: a free-form result encoded by appendJSON and by
// json.Marshal.
func BenchmarkEncodeResult(b *testing.B) {
	v := map[string]any{"prUrl": "https://github.com/acme/checkout/pull/42", "checks": []string{"unit", "lint"}, "ready": true,
		"score": 0.75, "files": []any{map[string]any{"path": "main.go", "added": 12.0}}}
	b.Run("appendJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := appendJSON(make([]byte, 0, 160), v, 0); !ok {
				b.Fatal("not taken")
			}
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

type sizeInner struct {
	X string `json:"x"`
}

type sizeOuter struct {
	sizeInner
	*sizeInner2
	LongGoName string          `json:"n"`
	Skipped    string          `json:"-"`
	Empty      string          `json:"e,omitempty"`
	Zero       sizeInner       `json:"z,omitzero"`
	NilPtr     *int            `json:"p,omitempty"`
	Keep       []int           `json:"k"`
	EmptySlice []int           `json:"es,omitempty"`
	IntKeys    map[int]string  `json:"ik"`
	Raw        json.RawMessage `json:"raw"`
	Inner      sizeInner       `json:"inner"`
	Untagged   bool
	//lint:ignore U1000 an unexported field is what this one is for
	hidden  string
	Arr     [3]int8           `json:"arr"`
	Any     any               `json:"any,omitempty"`
	StrKeys map[string]string `json:"sk,omitempty"`
}

type sizeInner2 struct{ Y int }

// TestSizeIsALowerBound: the walk that refuses a result before it is
// encoded never counts more than json.Marshal writes, so a result within
// the cap is never refused; and for the usual values it is exact.
func TestSizeIsALowerBound(t *testing.T) {
	values := append([]any{}, encodeValues...)
	values = append(values,
		sizeOuter{}, sizeOuter{LongGoName: "v", Empty: "x", Keep: []int{1, 2}, IntKeys: map[int]string{1: "a", 22: "b"},
			Raw: json.RawMessage(" { \"a\" :\n 1 } "), Untagged: true, Any: []any{"x"}, StrKeys: map[string]string{"a": "b"}},
		&sizeOuter{sizeInner2: &sizeInner2{Y: 3}}, []sizeOuter{{}, {}}, map[string]sizeInner{"a": {}}, []*int{nil},
		json.RawMessage("  [1, 2]  "), [][]string{{"a", "b"}, {}}, map[string][]byte{"b": []byte("xyz")})
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			continue
		}
		if n := sizeAtLeast(v, math.MaxInt64); n > int64(len(want)) {
			t.Errorf("%#v: counted %d bytes, json.Marshal writes %d: %s", v, n, len(want), want)
		}
	}
	for _, v := range []any{"plain", map[string]any{"a": "b", "c": []string{"d", "e"}, "f": map[string]string{"g": "h"}, "i": []any{"j", nil}},
		[]string{}, map[string]any{}, []sizeInner{{X: "a"}, {X: "b"}}} {
		want, _ := json.Marshal(v)
		if n := sizeAtLeast(v, math.MaxInt64); n != int64(len(want)) {
			t.Errorf("%#v: counted %d bytes, json.Marshal writes %d: %s", v, n, len(want), want)
		}
	}
}

package tool

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"
)

type flatMode string

type flatText struct{ s string }

func (f *flatText) UnmarshalText(b []byte) error { f.s = "text:" + string(b); return nil }

// flatAll has a field of every kind the flat decoder takes, and of several
// it leaves to json.Unmarshal.
type flatAll struct {
	S       string  `json:"s"`
	B       bool    `json:"b,omitempty"`
	I       int     `json:"i"`
	I8      int8    `json:"i8"`
	I16     int16   `json:"i16"`
	I32     int32   `json:"i32"`
	I64     int64   `json:"i64"`
	U       uint    `json:"u"`
	U8      uint8   `json:"u8"`
	U16     uint16  `json:"u16"`
	U32     uint32  `json:"u32"`
	U64     uint64  `json:"u64"`
	F32     float32 `json:"f32"`
	F64     float64 `json:"f64"`
	Mode    flatMode
	Num     json.Number `json:"num"`
	List    []string    `json:"list"`
	Text    flatText    `json:"text"`
	Ptr     *string     `json:"ptr"`
	Skipped string      `json:"-"`
	//lint:ignore SA5008 an invalid tag name is what this field is for: the field keeps its Go name
	Odd    string `json:"a\\b"`
	hidden string
	Any    any `json:"any"`
}

// flatInputs are inputs each decoder must agree on.
var flatInputs = []string{
	`{}`, ` { } `, `{"s":"plain"}`, `{"s":"héllo ☃"}`, `{"s":"esc\"aped"}`, `{"s":"\u00e9"}`, `{"s":"bad \xff utf8"}`,
	`{"s":null}`, `{"s":1}`, `{"s":"a","s":"b"}`, `{"S":"case"}`, `{"b":true,"i":-42}`, `{"b":false}`, `{"b":"true"}`,
	`{"i":1.5}`, `{"i":1e3}`, `{"i":-0}`, `{"i8":127}`, `{"i8":128}`, `{"i8":-129}`, `{"i16":-32768}`, `{"i32":2147483648}`,
	`{"i64":9223372036854775807}`, `{"i64":9223372036854775808}`, `{"u":-1}`, `{"u8":255}`, `{"u8":256}`, `{"u16":65536}`,
	`{"u32":4294967295}`, `{"u64":18446744073709551615}`, `{"u64":18446744073709551616}`, `{"f32":3.5e38}`, `{"f32":1e39}`,
	`{"f64":1e308}`, `{"f64":1e309}`, `{"f64":-0.0}`, `{"f64":5e-324}`, `{"Mode":"fast"}`, `{"mode":"fold"}`, `{"num":"12"}`,
	`{"num":"x"}`, `{"num":12}`, `{"list":["a"]}`, `{"text":"t"}`, `{"ptr":"p"}`, `{"Skipped":"x"}`, `{"-":"x"}`,
	`{"Odd":"o"}`, `{"a\\b":"o"}`, `{"hidden":"h"}`, `{"any":{"x":1}}`, `{"unknown":1}`, `{"s":"a",}`, `{"s":"a"} x`,
	`{"s":"a"`, `[]`, `"s"`, `null`, `{"s":"a" "b":true}`, `{"b":tru}`, `{"b":truex}`, `{"i":01}`, `{"i":-}`,
	`{"s":"tab	inside"}`, `{"s":"a","b":true,"i":7,"f64":2.5,"u":3,"Mode":"m"}`,
}

// TestFlatDecodeAsUnmarshal: whatever the flat decoder takes, it decodes as
// json.Unmarshal does, and it takes the plain inputs a tool usually gets.
func TestFlatDecodeAsUnmarshal(t *testing.T) {
	d := newFlatDecoder(reflect.TypeFor[flatAll]())
	if d == nil {
		t.Fatal("flatAll is not flat")
	}
	for _, in := range flatInputs {
		checkFlatDecode(t, d, []byte(in))
	}
	for _, in := range []string{`{}`, `{"s":"plain"}`, `{"s":"héllo ☃"}`, `{"b":true,"i":-42}`, `{"i":-0}`, `{"u64":18446744073709551615}`,
		`{"f64":5e-324}`, `{"Mode":"fast"}`, `{"s":"a","b":true,"i":7,"f64":2.5,"u":3,"Mode":"m"}`} {
		var v flatAll
		if !d.decode([]byte(in), unsafe.Pointer(&v)) {
			t.Errorf("%s: the flat decoder did not take it", in)
		}
	}
	var v flatAll
	if d.decode([]byte(`{"s":"a","b":true,"s":"b"}`), unsafe.Pointer(&v)) {
		t.Error("the flat decoder took a repeated key")
	}
}

func checkFlatDecode(t *testing.T, d *flatDecoder, in []byte) {
	t.Helper()
	var flat flatAll
	if !d.decode(in, unsafe.Pointer(&flat)) {
		return
	}
	var std flatAll
	if err := json.Unmarshal(in, &std); err != nil {
		t.Fatalf("%q: the flat decoder took what json.Unmarshal refuses (%v)", in, err)
	}
	if !reflect.DeepEqual(flat, std) {
		t.Fatalf("%q: flat decoded %+v, json.Unmarshal %+v", in, flat, std)
	}
}

func FuzzFlatDecode(f *testing.F) {
	for _, in := range flatInputs {
		f.Add([]byte(in))
	}
	d := newFlatDecoder(reflect.TypeFor[flatAll]())
	f.Fuzz(func(t *testing.T, in []byte) { checkFlatDecode(t, d, in) })
}

type flatEmbedded struct {
	//lint:ignore U1000 an embedded field is what this type is for
	flatMode
	S string
}

type flatStringOpt struct {
	N int `json:"n,string"`
}

type flatSelf struct{ S string }

func (f *flatSelf) UnmarshalJSON([]byte) error { f.S = "self"; return nil }

// flatDup has two fields of one JSON name (made here: vet refuses the
// struct written out).
var flatDup = reflect.StructOf([]reflect.StructField{
	{Name: "A", Type: reflect.TypeFor[string](), Tag: `json:"x"`},
	{Name: "B", Type: reflect.TypeFor[string](), Tag: `json:"x"`},
})

// TestFlatDecoderTypes: types whose decoding json.Unmarshal's own rules
// shape get no flat decoder.
func TestFlatDecoderTypes(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[flatEmbedded](), reflect.TypeFor[flatStringOpt](),
		reflect.TypeFor[flatSelf](), flatDup, reflect.TypeFor[map[string]any](), reflect.TypeFor[string]()} {
		if newFlatDecoder(typ) != nil {
			t.Errorf("%s has a flat decoder", typ)
		}
	}
	if newFlatDecoder(reflect.TypeFor[struct{}]()) == nil {
		t.Error("an empty struct has no flat decoder")
	}
}

// TestFlatDecodeThroughValidate: a tool's handler gets what json.Unmarshal
// would have given it, whichever decoder decoded, and the fallback leaves
// nothing of a partial flat decode behind.
func TestFlatDecodeThroughValidate(t *testing.T) {
	type input struct {
		S    string   `json:"s,omitempty"`
		B    bool     `json:"b,omitempty"`
		I    int      `json:"i,omitempty"`
		List []string `json:"list,omitempty"`
	}
	tl, err := New("flat", Config{Description: "echoes its input"}, func(_ context.Context, _ *Call, in input) (input, error) { return in, nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{`{"s":"x","b":true}`, `{"s":"x","list":["a","b"]}`, `{"b":true,"s":"esc\n"}`, `{"i":3,"s":"y","list":[]}`} {
		v, err := tl.Validate(json.RawMessage(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		var want input
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if got := *v.value.(*input); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded %+v, want %+v", in, got, want)
		}
		if string(v.JSON()) != in {
			t.Errorf("%s: Input.JSON is %s", in, v.JSON())
		}
	}
	// The flat decoder refuses a repeated key; the check for them explains.
	_, err = tl.Validate(json.RawMessage(`{"s":"a","b":true,"s":"b"}`))
	if ie, ok := err.(*InputError); !ok || len(ie.Violations) != 1 || ie.Violations[0].Path != "input.s" {
		t.Errorf("a repeated key: %v", err)
	}
}

// BenchmarkDecodeInput: a tool's usual input decoded by the flat decoder
// and by json.Unmarshal.
func BenchmarkDecodeInput(b *testing.B) {
	type input struct {
		PRURL  string  `json:"prUrl"`
		Repo   string  `json:"repo"`
		Number int     `json:"number"`
		Draft  bool    `json:"draft"`
		Weight float64 `json:"weight"`
	}
	data := []byte(`{"prUrl":"https://github.com/acme/checkout/pull/42","repo":"acme/checkout","number":42,"draft":false,"weight":0.5}`)
	d := newFlatDecoder(reflect.TypeFor[input]())
	b.Run("flat", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v := new(input)
			if !d.decode(data, unsafe.Pointer(v)) {
				b.Fatal("not taken")
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v := new(input)
			if err := json.Unmarshal(data, v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

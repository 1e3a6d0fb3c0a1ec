package tool

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Types JSON cannot carry. encoding/json refuses channels, functions,
// complex numbers and unsafe pointers (and maps keyed by anything but
// strings, integers or text marshalers) at run time; a tool's input or
// output type holding one anywhere is refused when the tool is defined,
// naming the Go field path (Input.Options.Callback).

var (
	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
	textMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// notJSON describes the first part of t that JSON cannot carry: its Go
// path from root (the type's name, or what for an unnamed type) and
// why. It returns "" when every part can. output chooses the direction:
// encoding (a result), else decoding (an input).
func notJSON(t reflect.Type, what string, output bool) string {
	root := t
	for root.Kind() == reflect.Pointer {
		root = root.Elem()
	}
	name := root.Name()
	if name == "" {
		name = what
	}
	path, bad := walkJSON(t, name, output, map[reflect.Type]bool{})
	if bad == "" {
		return ""
	}
	switch {
	case path == name:
		return fmt.Sprintf("it is %s, which JSON cannot carry; change the type", bad)
	case !strings.Contains(path[len(name):], "."):
		return fmt.Sprintf("its element %s is %s, which JSON cannot carry; change the type", path, bad)
	}
	return fmt.Sprintf("field %s is %s, which JSON cannot carry; change its type, or tag the field json:\"-\" to leave it out of the %s", path, bad, what)
}

// walkJSON walks t as encoding/json would, returning the path of the first
// part it cannot carry and what that part is ("a chan int").
func walkJSON(t reflect.Type, path string, output bool, seen map[reflect.Type]bool) (string, string) {
	if custom(t, output) {
		return "", ""
	}
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return path, "a " + t.String()
	case reflect.Complex64, reflect.Complex128:
		return path, "a " + t.String() + " (a complex number)"
	case reflect.Pointer:
		return walkJSON(t.Elem(), path, output, seen)
	case reflect.Slice, reflect.Array:
		return walkJSON(t.Elem(), path+"[]", output, seen)
	case reflect.Map:
		switch k := t.Key(); {
		case k.Kind() == reflect.String, k.Kind() >= reflect.Int && k.Kind() <= reflect.Uintptr, custom(k, output):
		default:
			return path, "a " + t.String() + " (a map whose keys are not strings, integers or text)"
		}
		return walkJSON(t.Elem(), path+"[key]", output, seen)
	case reflect.Struct:
		if seen[t] {
			return "", ""
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() && !f.Anonymous {
				continue
			}
			if tag := f.Tag.Get("json"); tag == "-" {
				continue
			}
			if p, bad := walkJSON(f.Type, path+"."+f.Name, output, seen); bad != "" {
				return p, bad
			}
		}
	}
	return "", ""
}

// custom reports whether t encodes (output) or decodes itself.
func custom(t reflect.Type, output bool) bool {
	if output {
		return t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
			reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)
	}
	return reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) ||
		(t.Kind() == reflect.Pointer && (t.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler)))
}

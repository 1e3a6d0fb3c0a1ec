package tooltest_test

import (
	"testing"

	"github.com/agentsdk/agentsdk/tooltest"
)

// A call through a kit: validation, the approval predicate, Run, the
// outcome.
func BenchmarkKitCall(b *testing.B) {
	kit := tooltest.New(b, nil)
	for b.Loop() {
		if out := kit.Call("greet", `{"name":"Ada"}`); out.IsError || out.Err != nil {
			b.Fatal(out)
		}
	}
}

// tooltest.Call: a kit of its own per call (the registry read, a state
// directory), as a test that calls it once pays.
func BenchmarkCall(b *testing.B) {
	for b.Loop() {
		if out := tooltest.Call(b, "greet", `{"name":"Ada"}`); out.IsError || out.Err != nil {
			b.Fatal(out)
		}
	}
}

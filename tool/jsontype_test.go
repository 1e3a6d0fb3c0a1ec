package tool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

type callbackOptions struct {
	Name     string `json:"name"`
	Callback func() `json:"callback"`
}

// Input is named as in a user's tool, so that the paths read as theirs.
type Input struct {
	Options callbackOptions `json:"options"`
}

type chanOutput struct {
	ID      string   `json:"id"`
	Updates chan int `json:"updates"`
}

type nestedOutput struct {
	Items []struct {
		Done func() bool
	} `json:"items"`
}

type byLabel struct {
	Labels map[string]complex128 `json:"labels"`
}

type taggedOut struct {
	ID     string    `json:"id"`
	Cancel func()    `json:"-"`
	At     time.Time `json:"at"`
	Raw    json.RawMessage
	hidden chan int
}

var _ = taggedOut{hidden: nil} // an unexported field, which encoding/json leaves out

type embeddedBad struct {
	chanOutput
}

func handleAny[In any](ctx context.Context, call *tool.Call, in In) (any, error) { return nil, nil }

func handleOut[Out any](ctx context.Context, call *tool.Call, in struct{}) (Out, error) {
	var zero Out
	return zero, nil
}

// An input or output type JSON cannot carry is refused when the tool is
// defined, saying which side and the Go path of the field.
func TestTypesJSONCannotCarry(t *testing.T) {
	cfg := tool.Config{Description: "d"}
	tests := []struct {
		name string
		def  func() (*tool.Tool, error)
		want []string // nil: defined
	}{
		{"a func in the input, nested", func() (*tool.Tool, error) { return tool.New("t", cfg, handleAny[Input]) },
			[]string{"tool t: the input type tool_test.Input cannot be decoded from JSON", "field Input.Options.Callback is a func()", `tag the field json:"-" to leave it out of the input`}},
		{"a chan in the output", func() (*tool.Tool, error) { return tool.New("t", cfg, handleOut[chanOutput]) },
			[]string{"tool t: the output type tool_test.chanOutput cannot be encoded as JSON", "field chanOutput.Updates is a chan int", "out of the output"}},
		{"a func in an element of the output", func() (*tool.Tool, error) { return tool.New("t", cfg, handleOut[*nestedOutput]) },
			[]string{"the output type *tool_test.nestedOutput cannot be encoded as JSON", "field nestedOutput.Items[].Done is a func() bool"}},
		{"a complex map value", func() (*tool.Tool, error) { return tool.New("t", cfg, handleOut[byLabel]) },
			[]string{"output type", "field byLabel.Labels[key] is a complex128 (a complex number)"}},
		{"an embedded struct's chan", func() (*tool.Tool, error) { return tool.New("t", cfg, handleOut[embeddedBad]) },
			[]string{"output type", "field embeddedBad.chanOutput.Updates is a chan int"}},
		{"a complex output", func() (*tool.Tool, error) { return tool.New("t", cfg, handleOut[complex128]) },
			[]string{"the output type complex128 cannot be encoded as JSON: it is a complex128"}},
		{"a slice of channels", func() (*tool.Tool, error) { return tool.New("t", cfg, handleOut[[]chan int]) },
			[]string{"the output type []chan int cannot be encoded as JSON: its element output[] is a chan int"}},
		{"a map keyed by structs", func() (*tool.Tool, error) { return tool.New("t", cfg, handleOut[map[struct{ A int }]string]) },
			[]string{"not strings, integers or text"}},
		{"a complex input field", func() (*tool.Tool, error) {
			return tool.New("t", cfg, handleAny[struct {
				Z complex64 `json:"z"`
			}])
		}, []string{"the input type", "field input.Z is a complex64"}},
		{"a script's schema", func() (*tool.Tool, error) {
			return tool.NewScript("s", tool.Config{Description: "d", InputSchema: tool.SchemaOf[Input]()}, "#!/bin/sh\n")
		}, []string{"field Input.Options.Callback is a func()"}},
		// What encoding/json leaves out or encodes itself is fine.
		{"tagged out, unexported, marshalers", func() (*tool.Tool, error) { return tool.New("t", cfg, handleOut[taggedOut]) }, nil},
		{"any output", func() (*tool.Tool, error) { return tool.New("t", cfg, handleOut[any]) }, nil},
		{"a string output", func() (*tool.Tool, error) { return tool.New("t", cfg, handleOut[string]) }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.def()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("defined, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

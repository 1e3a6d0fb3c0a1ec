package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/tool"
)

type fuzzInput struct {
	PRURL  string            `json:"prUrl" jsonschema:"format=uri"`
	When   *time.Time        `json:"when,omitempty"`
	Count  int8              `json:"count,omitempty" jsonschema:"minimum=-5"`
	Mode   string            `json:"mode,omitempty" jsonschema:"enum=words,enum=lines"`
	Tags   []string          `json:"tags,omitempty" jsonschema:"uniqueItems=true"`
	Nested *fuzzInput        `json:"nested,omitempty"`
	Meta   map[string]any    `json:"meta,omitempty"`
	Names  map[string]string `json:"names,omitempty"`
}

// FuzzCallTool feeds arbitrary bytes as input to direct calls: whatever the
// input, no panic escapes, and every call ends in an outcome or a typed
// input error, with its scratch workspace gone.
func FuzzCallTool(f *testing.F) {
	for _, seed := range []string{
		`{"prUrl":"https://github.com/acme/checkout/pull/42"}`,
		`{"prUrl":"https://x.example","when":"2026-11-29T10:00:00Z","count":3,"mode":"words","tags":["a"],"nested":{"prUrl":"https://y.example"}}`,
		`{"prUrl":"https://x.example","count":1000}`,
		`{"prurl":"x"}`, `{"prUrl":"x","extra":[1,2,{}]}`, `null`, `[]`, `{`, ``, `{"prUrl":"\ud800"}`,
		`{"prUrl":"https://x.example","meta":{"a":{"b":[1e400]}}}`,
		`{"prUrl":"https://x.example","count":1e99999999}`, `{"prUrl":"https://x.example","count":-1e-999999}`,
	} {
		f.Add([]byte(seed))
	}
	state := f.TempDir()
	recursive, err := tool.New("recursive", tool.Config{Description: "A recursive input."},
		func(ctx context.Context, call *tool.Call, in fuzzInput) (any, error) {
			if _, err := call.WorkspaceDir(); err != nil {
				return nil, err
			}
			if in.Mode == "lines" {
				panic("lines")
			}
			return in, nil
		})
	if err != nil {
		f.Fatal(err)
	}
	inspect, err := tool.New("inspect_pr", tool.Config{Description: "Inspect."},
		func(ctx context.Context, call *tool.Call, in prInput) (any, error) { return in, nil })
	if err != nil {
		f.Fatal(err)
	}
	raw, err := tool.New("raw", tool.Config{Description: "Raw.", InputSchema: tool.RawSchema(
		`{"type":"object","properties":{"prUrl":{"type":"string","format":"uri"}},"patternProperties":{"^x-":{"type":"number"}}}`)},
		func(ctx context.Context, call *tool.Call, in json.RawMessage) (any, error) { return in, nil })
	if err != nil {
		f.Fatal(err)
	}
	set, _ := tool.NewSet(recursive, inspect, raw)
	h, err := host.New(set, &host.Options{StateRoot: state})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"recursive", "inspect_pr", "raw"} {
			out, err := h.CallTool(context.Background(), name, json.RawMessage(data), nil)
			if err != nil {
				var ie *tool.InputError
				if !errors.As(err, &ie) || len(ie.Violations) == 0 {
					t.Fatalf("%s(%q): error %T %v, want an *InputError with violations", name, data, err, err)
				}
				continue
			}
			if out == nil || out.CallID == "" || !json.Valid(out.Result) {
				t.Fatalf("%s(%q): bad outcome %+v", name, data, out)
			}
			if _, err := os.Stat(filepath.Join(state, "tool-calls", out.CallID)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s(%q): scratch workspace left behind: %v", name, data, err)
			}
		}
	})
}

package tool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// prReport is a typed output: its schema is inferred as an input's is.
type prReport struct {
	URL      string    `json:"url" jsonschema:"format=uri"`
	Ready    bool      `json:"ready"`
	Checks   []string  `json:"checks" jsonschema:"the CI checks that passed"`
	Reviewed time.Time `json:"reviewed"`
	Risk     string    `json:"risk,omitempty" jsonschema:"enum=low,enum=high"`
}

type wideOutput struct {
	Count int               `json:"count" jsonschema:"minimum=0"`
	Tree  treeInput         `json:"tree"`
	Tags  map[string]string `json:"tags,omitempty"`
	Next  *string           `json:"next"`
}

// Output schemas are inferred from a handler's concrete result type with
// the input tag syntax, and shown with the tool; a handler returning any,
// a string, a slice or a tool.Result declares none.
func TestOutputSchemaInference(t *testing.T) {
	report := mustNew(t, "report", tool.Config{}, func(ctx context.Context, call *tool.Call, in prInput) (prReport, error) {
		return prReport{}, nil
	})
	wide := mustNew(t, "wide", tool.Config{}, func(ctx context.Context, call *tool.Call, in prInput) (*wideOutput, error) {
		return &wideOutput{}, nil
	})
	golden(t, "schemas/output-report.json", indent(t, report.OutputSchema()))
	golden(t, "schemas/output-wide.json", indent(t, wide.OutputSchema()))
	if info, _ := json.Marshal(report.Info()); !strings.Contains(string(info), `"outputSchema":{`) {
		t.Errorf("Info has no output schema: %s", info)
	}
	none := []*tool.Tool{
		mustNew(t, "free", tool.Config{}, noop[prInput]),
		mustNew(t, "text", tool.Config{}, func(ctx context.Context, call *tool.Call, in prInput) (string, error) { return "", nil }),
		mustNew(t, "list", tool.Config{}, func(ctx context.Context, call *tool.Call, in prInput) ([]string, error) { return nil, nil }),
		mustNew(t, "mcp", tool.Config{}, func(ctx context.Context, call *tool.Call, in prInput) (*tool.Result, error) { return nil, nil }),
	}
	for _, tl := range none {
		if tl.OutputSchema() != nil {
			t.Errorf("%s declares an output schema: %s", tl.Name(), tl.OutputSchema())
		}
		if info, _ := json.Marshal(tl.Info()); strings.Contains(string(info), "outputSchema") {
			t.Errorf("%s's Info shows an output schema: %s", tl.Name(), info)
		}
	}
}

// A result that does not match its declared schema is the tool's bug: an
// isError result naming the path, never a silent pass; one that matches is
// the result as returned.
func TestOutputChecked(t *testing.T) {
	// encoding/json writes a nil slice, map or pointer as null: a valid
	// result of a Go handler, so the inferred schema allows it.
	nils := mustNew(t, "nils", tool.Config{}, func(ctx context.Context, call *tool.Call, in prInput) (prReport, error) {
		return prReport{URL: "https://example.com/pr/1"}, nil
	})
	type strict struct {
		Count int    `json:"count" jsonschema:"minimum=0"`
		Name  string `json:"name" jsonschema:"minLength=1"`
	}
	var out strict
	typed := mustNew(t, "typed", tool.Config{}, func(ctx context.Context, call *tool.Call, in prInput) (strict, error) {
		return out, nil
	})
	run := func(tl *tool.Tool) tool.Output {
		t.Helper()
		in, err := tl.Validate(json.RawMessage(`{"prUrl":"https://example.com/pr/1"}`))
		if err != nil {
			t.Fatal(err)
		}
		o, err := tl.Run(context.Background(), tool.NewCall(tool.CallInfo{ID: "c1", Tool: tl.Name()}), in)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	if o := run(nils); o.IsError || !strings.Contains(string(o.Result), `"checks":null`) {
		t.Errorf("a result with a nil slice: %+v %s", o, o.Result)
	}
	out = strict{Count: 2, Name: "ok"}
	if o := run(typed); o.IsError || string(o.Result) != `{"count":2,"name":"ok"}` {
		t.Errorf("a valid result: %+v %s", o, o.Result)
	}
	for _, c := range []struct {
		out  strict
		want string
	}{
		{strict{Count: -1, Name: "ok"}, "result.count: "},
		{strict{Count: 1}, "result.name: "},
	} {
		out = c.out
		o := run(typed)
		if !o.IsError || !strings.Contains(string(o.Result), c.want) || !strings.Contains(string(o.Result), "does not match its output schema") {
			t.Errorf("result %+v: %+v %s; want an isError naming %q", c.out, o, o.Result, c.want)
		}
	}
}

// BenchmarkRunOutput measures Tool.Run for the same handler and value
// returned as any and as its type (its result checked against the output
// schema).
//
//	go test ./tool -run '^$' -bench RunOutput -count 5
func BenchmarkRunOutput(b *testing.B) {
	value := prReport{URL: "https://github.com/acme/checkout/pull/42", Ready: true, Checks: []string{"unit", "lint"}, Reviewed: time.Unix(1_700_000_000, 0).UTC()}
	free := mustNew(b, "free", tool.Config{}, func(ctx context.Context, call *tool.Call, in prInput) (any, error) { return value, nil })
	typed := mustNew(b, "typed", tool.Config{}, func(ctx context.Context, call *tool.Call, in prInput) (prReport, error) { return value, nil })
	for _, tl := range []*tool.Tool{free, typed} {
		b.Run(tl.Name(), func(b *testing.B) {
			in, err := tl.Validate(json.RawMessage(`{"prUrl":"https://example.com/pr/1"}`))
			if err != nil {
				b.Fatal(err)
			}
			call := tool.NewCall(tool.CallInfo{ID: "c1", Tool: tl.Name()})
			b.ReportAllocs()
			for b.Loop() {
				if out, err := tl.Run(context.Background(), call, in); err != nil || out.IsError {
					b.Fatal(err, string(out.Result))
				}
			}
		})
	}
}

package tools

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/tool"
)

var benchInput = json.RawMessage(`{"prUrl":"https://github.com/acme/checkout/pull/42"}`)

// BenchmarkCallTool measures a direct call of inspect_pr end to end through
// host.CallTool: validation, decoding, the handler, normalising the result,
// call id, timeout and panic guard. Compare with BenchmarkCallToolBaseline.
func BenchmarkCallTool(b *testing.B) {
	h := benchHost(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := h.CallTool(ctx, "inspect_pr", benchInput, nil)
		if err != nil || out.IsError {
			b.Fatal(err, out)
		}
	}
}

// BenchmarkCallToolInline is BenchmarkCallTool with CallOptions.Overrun
// set, as serve sets it for a direct HTTP call: the handler runs on the
// calling goroutine.
func BenchmarkCallToolInline(b *testing.B) {
	h := benchHost(b)
	ctx := context.Background()
	opts := &host.CallOptions{Overrun: func(out *api.Outcome) { b.Errorf("overrun: %+v", out) }}
	b.ReportAllocs()
	for b.Loop() {
		out, err := h.CallTool(ctx, "inspect_pr", benchInput, opts)
		if err != nil || out.IsError {
			b.Fatal(err, out)
		}
	}
}

// benchHost is a host of the quickstart's tools.
func benchHost(b *testing.B) *host.Host {
	set, err := tool.Registered()
	if err != nil {
		b.Fatal(err)
	}
	h, err := host.New(set, &host.Options{StateRoot: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	return h
}

// BenchmarkCallToolBaseline does by hand what a bare Go program would: decode
// the same input, run the same handler, encode its result.
func BenchmarkCallToolBaseline(b *testing.B) {
	ctx := context.Background()
	call := tool.NewCall(tool.CallInfo{ID: "tool_inspect_pr_baseline", Tool: "inspect_pr"})
	b.ReportAllocs()
	for b.Loop() {
		var in InspectPRInput
		if err := json.Unmarshal(benchInput, &in); err != nil {
			b.Fatal(err)
		}
		v, err := inspectPR(ctx, call, in)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(v); err != nil {
			b.Fatal(err)
		}
	}
}

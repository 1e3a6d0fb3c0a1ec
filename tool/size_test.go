package tool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/tool"
)

// A result over the tool's cap (or the host's, from CallInfo) is an
// isError saying the limit and the size; one within it is untouched.
func TestResultCap(t *testing.T) {
	var give any
	capped := mustNew(t, "capped", tool.Config{MaxResultBytes: 100}, func(ctx context.Context, call *tool.Call, in prInput) (any, error) { return give, nil })
	free := mustNew(t, "free", tool.Config{}, func(ctx context.Context, call *tool.Call, in prInput) (any, error) { return give, nil })
	run := func(tl *tool.Tool, hostCap int64) tool.Output {
		in, _ := tl.Validate(json.RawMessage(`{"prUrl":"https://example.com/pr/1"}`))
		o, err := tl.Run(context.Background(), tool.NewCall(tool.CallInfo{ID: "c1", Tool: tl.Name(), MaxResultBytes: hostCap}), in)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	for _, c := range []struct {
		name    string
		v       any
		tl      *tool.Tool
		hostCap int64
		want    string // "" for a plain result
	}{
		{"small", "ok", capped, 0, ""},
		{"long string", strings.Repeat("x", 200), capped, 0, "202 bytes, over the limit of 100"},
		{"the host's cap", strings.Repeat("x", 200), free, 50, "202 bytes, over the limit of 50"},
		{"the tool's cap wins", strings.Repeat("x", 90), capped, 50, ""},
		{"no cap", strings.Repeat("x", 1000), free, 0, ""},
		{"bytes", make([]byte, 300), capped, 0, "at least 402 bytes"},
		{"nested", map[string][]string{"a": {strings.Repeat("y", 120)}}, capped, 0, "at least"},
		{"a cycle stops", func() any { type n struct{ Next *n }; x := &n{}; x.Next = x; return x }(), capped, 0, "at least"},
	} {
		give = c.v
		o := run(c.tl, c.hostCap)
		switch {
		case c.want == "" && o.IsError:
			t.Errorf("%s: %s", c.name, o.Result)
		case c.want != "" && (!o.IsError || !strings.Contains(string(o.Result), c.want)):
			t.Errorf("%s: %+v %s; want an error saying %q", c.name, o, o.Result, c.want)
		}
	}
}

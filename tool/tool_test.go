package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

func TestDefinitionErrors(t *testing.T) {
	ok := func(ctx context.Context, call *tool.Call, in prInput) (any, error) { return nil, nil }
	raw := func(ctx context.Context, call *tool.Call, in json.RawMessage) (any, error) { return nil, nil }
	tests := []struct {
		name string
		make func() (*tool.Tool, error)
		want string
	}{
		{"empty name", func() (*tool.Tool, error) { return tool.New("", tool.Config{Description: "d"}, ok) }, "cannot be empty"},
		{"space in name", func() (*tool.Tool, error) { return tool.New("inspect pr", tool.Config{Description: "d"}, ok) }, `invalid tool name "inspect pr"`},
		{"dot in name", func() (*tool.Tool, error) { return tool.New("a.b", tool.Config{Description: "d"}, ok) }, "invalid tool name"},
		{"unicode name", func() (*tool.Tool, error) { return tool.New("héllo", tool.Config{Description: "d"}, ok) }, "invalid tool name"},
		{"65 characters", func() (*tool.Tool, error) {
			return tool.New(strings.Repeat("a", 65), tool.Config{Description: "d"}, ok)
		}, "1 to 64"},
		{"no description", func() (*tool.Tool, error) { return tool.New("t", tool.Config{}, ok) }, "Description is required"},
		{"blank description", func() (*tool.Tool, error) { return tool.New("t", tool.Config{Description: " \n"}, ok) }, "Description is required"},
		{"negative timeout", func() (*tool.Tool, error) {
			return tool.New("t", tool.Config{Description: "d", Timeout: -time.Second}, ok)
		}, "cannot be negative"},
		{"nil handler", func() (*tool.Tool, error) { return tool.New[prInput, any]("t", tool.Config{Description: "d"}, nil) }, "handler is nil"},
		{"schema with typed input", func() (*tool.Tool, error) {
			return tool.New("t", tool.Config{Description: "d", InputSchema: tool.RawSchema(`{"type":"object"}`)}, ok)
		}, "only for json.RawMessage input"},
		{"non-object input", func() (*tool.Tool, error) {
			return tool.New("t", tool.Config{Description: "d"}, func(ctx context.Context, call *tool.Call, in string) (any, error) { return nil, nil })
		}, "must be a struct"},
		{"bad raw schema", func() (*tool.Tool, error) {
			return tool.New("t", tool.Config{Description: "d", InputSchema: tool.RawSchema(`{"type":"object","minProperties":"x"}`)}, raw)
		}, "compiling input schema"},
		{"predicate type mismatch", func() (*tool.Tool, error) {
			return tool.New("t", tool.Config{Description: "d", NeedsApproval: tool.When(func(in validationInput) bool { return true })}, ok)
		}, "the predicate takes tool_test.validationInput but the handler's input is tool_test.prInput"},
		{"nil predicate", func() (*tool.Tool, error) {
			return tool.New("t", tool.Config{Description: "d", NeedsApproval: tool.When[prInput](nil)}, ok)
		}, "nil predicate"},
		{"script without shebang", func() (*tool.Tool, error) {
			return tool.NewScript("t", tool.Config{Description: "d"}, "echo hi")
		}, "must start with a #! line"},
		{"script predicate over a struct", func() (*tool.Tool, error) {
			return tool.NewScript("t", tool.Config{Description: "d", NeedsApproval: tool.When(func(in prInput) bool { return true })}, "#!/bin/sh\n")
		}, "agent tool's input is json.RawMessage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl, err := tt.make()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got tool %v, error %v; want an error containing %q", tl, err, tt.want)
			}
		})
	}
}

func TestToolInfo(t *testing.T) {
	tl := mustNew(t, "inspect_pr", tool.Config{Description: "Inspect a PR.", Timeout: 5 * time.Second}, noop[prInput])
	if tl.Timeout() != 5*time.Second || tl.Execution() != tool.Server || tl.Approval() != "never" {
		t.Errorf("timeout %s, execution %s, approval %s", tl.Timeout(), tl.Execution(), tl.Approval())
	}
	if !strings.HasSuffix(strings.Split(tl.Position(), ":")[0], "validate_test.go") {
		t.Errorf("Position() = %q, want the file that called tool.New (via mustNew)", tl.Position())
	}
	def := mustNew(t, "d", tool.Config{}, noop[prInput])
	if def.Timeout() != tool.TimeoutDefault || tool.TimeoutDefault != 60*time.Second {
		t.Errorf("default timeout = %s", def.Timeout())
	}
	info, _ := json.Marshal(tl.Info())
	want := `{"name":"inspect_pr","description":"Inspect a PR.","inputSchema":{"properties":{"prUrl":{"type":"string","format":"uri","description":"the pull request URL"}},"additionalProperties":false,"type":"object","required":["prUrl"]},"execution":"server","approval":"never"}`
	if string(info) != want {
		t.Errorf("Info JSON =\n%s\nwant\n%s", info, want)
	}
	script, err := tool.NewScript("echo", tool.Config{Description: "Echo.", NeedsApproval: tool.Always}, "#!/bin/sh\ncat\n")
	if err != nil {
		t.Fatal(err)
	}
	if script.Execution() != tool.Agent || script.Approval() != "always" || script.Script() != "#!/bin/sh\ncat\n" {
		t.Errorf("script tool: %+v", script.Info())
	}
	if string(script.InputSchema()) != `{"type":"object"}` {
		t.Errorf("a script without a schema accepts any object; got %s", script.InputSchema())
	}
}

func TestSet(t *testing.T) {
	b := mustNew(t, "b", tool.Config{}, noop[prInput])
	a := mustNew(t, "a", tool.Config{}, noop[prInput])
	c := mustNew(t, "c", tool.Config{}, noop[prInput])
	set, err := tool.NewSet(c, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Names(), ","); got != "a,b,c" {
		t.Errorf("Names() = %s, want a,b,c", got)
	}
	if got, ok := set.Lookup("b"); !ok || got != b {
		t.Errorf("Lookup(b) = %v, %v", got, ok)
	}
	if _, ok := set.Lookup("B"); ok {
		t.Error("Lookup is case-sensitive; B should not be found")
	}
	if infos := set.Infos(); len(infos) != 3 || infos[0].Name != "a" || infos[2].Name != "c" {
		t.Errorf("Infos() = %+v", infos)
	}
	a2 := mustNew(t, "a", tool.Config{}, noop[prInput])
	if _, err := tool.NewSet(a, b, a2); err == nil || !strings.Contains(err.Error(), "two tools are named a") {
		t.Errorf("duplicate names: error = %v", err)
	}
	if _, err := tool.NewSet(a, nil); err == nil {
		t.Error("a nil tool should be an error")
	}
}

func TestApproval(t *testing.T) {
	type promote struct {
		Environment string `json:"environment"`
	}
	handler := noop[promote]
	tests := []struct {
		name     string
		approval tool.Approval
		input    string
		mode     string
		want     bool
		wantErr  bool
	}{
		{"never", tool.Approval{}, `{"environment":"production"}`, "never", false, false},
		{"always", tool.Always, `{"environment":"staging"}`, "always", true, false},
		{"predicate true", tool.When(func(in promote) bool { return in.Environment == "production" }), `{"environment":"production"}`, "conditional", true, false},
		{"predicate false", tool.When(func(in promote) bool { return in.Environment == "production" }), `{"environment":"staging"}`, "conditional", false, false},
		{"predicate panics fails closed", tool.When(func(in promote) bool { panic("boom") }), `{"environment":"staging"}`, "conditional", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := mustNew(t, "promote_build", tool.Config{NeedsApproval: tt.approval}, handler)
			if tl.Approval() != tt.mode {
				t.Errorf("Approval() = %s, want %s", tl.Approval(), tt.mode)
			}
			in, err := tl.Validate(json.RawMessage(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			got, err := in.NeedsApproval()
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("NeedsApproval() = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
	raw := mustNew(t, "raw", tool.Config{NeedsApproval: tool.When(func(in json.RawMessage) bool {
		return strings.Contains(string(in), "prod")
	})}, noop[json.RawMessage])
	in, _ := raw.Validate(json.RawMessage(`{"env":"prod"}`))
	if got, _ := in.NeedsApproval(); !got {
		t.Error("a json.RawMessage predicate should see the raw input")
	}
}

// The errors callers branch on, each with errors.As.
func TestTypedErrors(t *testing.T) {
	var err error = &tool.UnknownToolError{Name: "x", Available: []string{"a", "b"}}
	var ue *tool.UnknownToolError
	if !errors.As(err, &ue) || err.Error() != `unknown tool "x" (available: a, b)` {
		t.Errorf("UnknownToolError: %v", err)
	}
	err = &tool.InputError{Tool: "t", Violations: []tool.Violation{{"input.a", "is required"}, {"input.b", "must be a uri"}}}
	if err.Error() != "invalid input for tool t: input.a: is required; input.b: must be a uri" {
		t.Errorf("InputError: %v", err)
	}
}

func TestCheckKey(t *testing.T) {
	for key, ok := range map[string]bool{"user/1": true, "": false, "a\x00b": false, "\xff": false, strings.Repeat("k", 512): true, strings.Repeat("k", 513): false} {
		if err := tool.CheckKey(key); (err == nil) != ok {
			t.Errorf("CheckKey(%.20q) = %v", key, err)
		}
	}
}

package evals

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// setTools are agentTools of a set: the model may call each of its tools
// and read_result.
type setTools struct{ set *tool.Set }

func (s setTools) ModelTool(name string) (*tool.Tool, bool) {
	if name == "read_result" {
		return nil, true
	}
	return s.set.Lookup(name)
}

func (s setTools) Tools() *tool.Set { return s.set }

func testTools(t *testing.T) setTools {
	t.Helper()
	lookup, err := tool.New("lookup", tool.Config{Description: "Looks up."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	script, err := tool.NewScript("script", tool.Config{Description: "A script."}, "#!/bin/sh\ntrue\n")
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(lookup, script)
	if err != nil {
		t.Fatal(err)
	}
	return setTools{set}
}

// checkEval's one problem per case, as "path: message"; "" for none.
func TestCheckEval(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	one := func(c api.EvalCase) api.EvalRunRequest { return api.EvalRunRequest{Cases: []api.EvalCase{c}} }
	for _, tc := range []struct {
		name string
		req  api.EvalRunRequest
		want string
	}{
		{"a message", one(api.EvalCase{Message: "hi"}), ""},
		{"a conversation", one(api.EvalCase{Conversation: []string{"hi", "more"}}), ""},
		{"a long batch name", api.EvalRunRequest{Name: strings.Repeat("n", maxEvalName+1), Cases: []api.EvalCase{{Message: "hi"}}}, "name: must be valid UTF-8 of at most 200 bytes"},
		{"a batch name not UTF-8", api.EvalRunRequest{Name: "\xff", Cases: []api.EvalCase{{Message: "hi"}}}, "name: must be valid UTF-8 of at most 200 bytes"},
		{"a long case name", one(api.EvalCase{Name: strings.Repeat("n", maxEvalName+1), Message: "hi"}), "cases[0].name: must be valid UTF-8 of at most 200 bytes"},
		{"a blank message", one(api.EvalCase{Message: " \n"}), "cases[0].message: is empty"},
		{"a message too long", one(api.EvalCase{Message: strings.Repeat("m", maxEvalMessage+1)}), "cases[0].message: is 65537 bytes; at most 65536"},
		{"a message not UTF-8", one(api.EvalCase{Message: "\xff"}), "cases[0].message: is not valid UTF-8"},
		{"a conversation too long", one(api.EvalCase{Conversation: make([]string, maxEvalConversation+1)}), "cases[0].conversation: 51 messages; at most 50"},
		{"a scorer", one(api.EvalCase{Message: "hi", Scorer: "lookup"}), ""},
		{"a script as scorer", one(api.EvalCase{Message: "hi", Scorer: "script"}), `cases[0].scorer: "script" is an agent tool (a script); a scorer is a server tool`},
		{"called read_result", one(api.EvalCase{Message: "hi", Checks: []api.EvalCheck{{Called: "read_result"}}}), ""},
		{"called a script", one(api.EvalCase{Message: "hi", Checks: []api.EvalCheck{{Called: "script"}}}), ""},
		{"args not JSON", one(api.EvalCase{Message: "hi", Checks: []api.EvalCheck{{Called: "lookup", Args: map[string]any{"f": func() {}}}}}), "cases[0].checks[0].args: cannot be encoded as JSON: json: unsupported type: func()"},
		{"a long contains", one(api.EvalCase{Message: "hi", Checks: []api.EvalCheck{{Contains: strings.Repeat("c", maxEvalPattern+1)}}}), "cases[0].checks[0]: the text is longer than 4096 bytes"},
		{"a long matches", one(api.EvalCase{Message: "hi", Checks: []api.EvalCheck{{Matches: strings.Repeat("c", maxEvalPattern+1)}}}), "cases[0].checks[0]: the text is longer than 4096 bytes"},
		{"a matches that compiles large", one(api.EvalCase{Message: "hi", Checks: []api.EvalCheck{{Matches: `(a|aa){0,1000}b`}}}), "cases[0].checks[0].matches: compiles to 7003 instructions; at most 500 (a counted repeat such as {0,1000} copies what it repeats)"},
		{"a matches at the limit", one(api.EvalCase{Message: "hi", Checks: []api.EvalCheck{{Matches: `(?:[ab]?){240}c`}}}), ""},
		{"a matches too long", one(api.EvalCase{Message: "hi", Checks: []api.EvalCheck{{Matches: strings.Repeat("c", maxEvalRegexp+1)}}}), "cases[0].checks[0].matches: is 1025 bytes; a pattern has at most 1024"},
		{"three kinds", one(api.EvalCase{Message: "hi", Checks: []api.EvalCheck{{NotCalled: "x", MaxSteps: 2, NoError: true}}}), "cases[0].checks[0]: has notCalled and maxSteps and noError; a check is exactly one kind (make one check of each)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			cases, err := checkEval(&req, tools)
			var got string
			var e *api.Error
			switch {
			case errors.As(err, &e):
				if len(e.Violations) != 1 {
					t.Fatalf("%d violations: %+v", len(e.Violations), e.Violations)
				}
				got = e.Violations[0].Path + ": " + e.Violations[0].Message
			case err != nil:
				t.Fatalf("%v (%T), want an *api.Error", err, err)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if err == nil && (len(cases) != len(req.Cases) || cases[0].Name != "case-1" || req.Name != "eval") {
				t.Errorf("defaults: %q %+v", req.Name, cases)
			}
		})
	}
}

// A valid eval keeps the names it has and defaults the others.
func TestCheckEvalNames(t *testing.T) {
	t.Parallel()
	req := api.EvalRunRequest{Name: "smoke", Cases: []api.EvalCase{{Name: "first", Message: "a"}, {Message: "b"}, {Name: "case-1", Message: "c"}}}
	cases, err := checkEval(&req, testTools(t))
	if err != nil {
		t.Fatal(err)
	}
	if req.Name != "smoke" || cases[0].Name != "first" || cases[1].Name != "case-2" || cases[2].Name != "case-1" {
		t.Errorf("names: %q %+v", req.Name, cases)
	}
}

func TestParseCaseKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key   string
		batch string
		index int
		err   bool
	}{
		{caseKey("eval_abc", 7), "eval_abc", 7, false},
		{"a/b/12", "a/b", 12, false},
		{"eval_abc", "", 0, true},
		{"/3", "", 0, true},
		{"eval_abc/", "", 0, true},
		{"eval_abc/-1", "", 0, true},
		{"eval_abc/x", "", 0, true},
	} {
		t.Run(tc.key, func(t *testing.T) {
			batch, index, err := parseCaseKey(tc.key)
			if (err != nil) != tc.err || batch != tc.batch || index != tc.index {
				t.Errorf("parseCaseKey(%q) = %q, %d, %v", tc.key, batch, index, err)
			}
		})
	}
}

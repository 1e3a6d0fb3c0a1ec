package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const slug = "myagent"

// Inputs of the representative tools.
type (
	searchInput struct {
		Query  string       `json:"query" jsonschema:"what to look for"`
		Site   string       `json:"site,omitempty" jsonschema:"format=uri"`
		Mode   string       `json:"mode,omitempty" jsonschema:"enum=words,enum=phrase"`
		Filter searchFilter `json:"filter"`
	}
	searchFilter struct {
		Since *time.Time `json:"since"`
		Tags  []string   `json:"tags,omitempty"`
	}
	treeInput struct {
		Value    string      `json:"value"`
		Children []treeInput `json:"children,omitempty"`
	}
	deployInput struct {
		Environment string `json:"environment" jsonschema:"enum=staging,enum=production"`
	}
)

// rawSchema is a hand-written input schema: a $defs name that is not a
// component name, and a reference to the root.
const rawSchema = `{"type":"object","properties":{"rule":{"$ref":"#/$defs/a%20rule"}},
	"$defs":{"a rule":{"type":"object","properties":{"not":{"$ref":"#"},"default":{"type":"string"}}}}}`

func noop[In any](ctx context.Context, call *tool.Call, in In) (any, error) { return nil, nil }

// testSet holds server tools with a nested struct, a uri and an enum
// (search), a recursive type (tree), a gate (deploy) and a raw schema
// (lint), and an agent tool (grep).
func testSet(t *testing.T) *tool.Set {
	t.Helper()
	var tools []*tool.Tool
	add := func(tl *tool.Tool, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tl)
	}
	add(tool.New("search", tool.Config{Description: "Search the docs."}, noop[searchInput]))
	add(tool.New("tree", tool.Config{Description: "Walk a tree."}, noop[treeInput]))
	add(tool.New("deploy", tool.Config{Description: "Deploy.", NeedsApproval: tool.Always}, noop[deployInput]))
	add(tool.New("lint", tool.Config{Description: "Lint.", InputSchema: tool.RawSchema(rawSchema)}, noop[json.RawMessage]))
	add(tool.NewScript("grep", tool.Config{Description: "Grep the workspace."}, "#!/bin/sh\ngrep \"$@\"\n"))
	add(tool.New("outline", tool.Config{Description: "A typed output (recursive)."},
		func(ctx context.Context, call *tool.Call, in searchInput) (treeInput, error) { return treeInput{}, nil }))
	set, err := tool.NewSet(tools...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func testTools(t *testing.T) []tool.Info { return testSet(t).Infos() }

// generate returns the document of testTools.
func generate(t *testing.T) []byte {
	t.Helper()
	b, err := api.OpenAPI(slug, testTools(t))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// parse returns the document as generic JSON.
func parse(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// lookup follows keys through nested objects, or returns nil.
func lookup(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// load builds the validator of a document, with
// github.com/pb33f/libopenapi-validator v0.16.3 (on libopenapi v0.41.8):
// its ValidateDocument checks the document against the official OpenAPI
// 3.1 JSON Schema (spec.openapis.org/oas/3.1/schema), building its model
// resolves every $ref, and its request and schema validators check real
// bodies against the document with JSON Schema 2020-12.
// github.com/getkin/kin-openapi v0.153.0 reads 3.1 documents too, but its
// Validate is a hand-written rule set, not the specification's schema: it
// accepted an "openapi": "3.1" version and a "20x" response key that the
// schema refuses. What that schema leaves out (the schemas' keywords,
// unique operation ids, declared path parameters) [checkSchemas] and
// [checkOperations] check.
func load(t *testing.T, b []byte) validator.Validator {
	t.Helper()
	doc, err := libopenapi.NewDocument(b)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
	if errs != nil {
		t.Fatalf("building the model (resolving every $ref): %v", errs)
	}
	return v
}

func TestOpenAPIValidates(t *testing.T) {
	t.Parallel()
	for name, tools := range map[string][]tool.Info{"tools": testTools(t), "no tools": nil} {
		t.Run(name, func(t *testing.T) {
			b, err := api.OpenAPI(slug, tools)
			if err != nil {
				t.Fatal(err)
			}
			if ok, errs := load(t, b).ValidateDocument(); !ok {
				for _, e := range errs {
					t.Errorf("%s: %s", e.Message, e.Reason)
					for _, f := range e.SchemaValidationErrors {
						t.Errorf("  %s at %s", f.Reason, f.FieldPath)
					}
				}
			}
			checkSchemas(t, b)
			checkOperations(t, b)
		})
	}
}

// checkSchemas compiles every component: each is a valid JSON Schema
// 2020-12 whose refs resolve.
func checkSchemas(t *testing.T, b []byte) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("openapi.json", doc); err != nil {
		t.Fatal(err)
	}
	for name := range lookup(doc, "components", "schemas").(map[string]any) {
		if _, err := c.Compile("openapi.json#/components/schemas/" + name); err != nil {
			t.Errorf("component %s: %v", name, err)
		}
	}
}

// checkOperations checks that operation ids are unique, and that each
// path declares its parameters.
func checkOperations(t *testing.T, b []byte) {
	t.Helper()
	ids := map[string]string{}
	for path, item := range lookup(parse(t, b), "paths").(map[string]any) {
		for method, op := range item.(map[string]any) {
			id := lookup(op, "operationId").(string)
			if prev, ok := ids[id]; ok {
				t.Errorf("operationId %s is both %s and %s %s", id, prev, method, path)
			}
			ids[id] = method + " " + path
			var declared []string
			params, _ := lookup(op, "parameters").([]any)
			for _, p := range params {
				if lookup(p, "in") == "path" {
					declared = append(declared, lookup(p, "name").(string))
				}
			}
			var inPath []string
			for _, m := range regexp.MustCompile(`\{([^}]+)\}`).FindAllStringSubmatch(path, -1) {
				inPath = append(inPath, m[1])
			}
			if !slices.Equal(declared, inPath) {
				t.Errorf("%s %s declares path parameters %v, want %v", method, path, declared, inPath)
			}
		}
	}
}

// openAPIPath is the OpenAPI path of a route: {name...} is {name}.
func openAPIPath(r api.Route) string {
	_, path, _ := strings.Cut(r.Pattern(slug), " ")
	return strings.ReplaceAll(path, "...}", "}")
}

func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	doc := parse(t, generate(t))
	for _, r := range api.Routes {
		t.Run(r.Name, func(t *testing.T) {
			op := lookup(doc, "paths", openAPIPath(r), strings.ToLower(r.Method))
			if op == nil {
				t.Fatalf("no %s %s", r.Method, openAPIPath(r))
			}
			if id := lookup(op, "operationId"); id != r.Name {
				t.Errorf("operationId = %v", id)
			}
			if security := lookup(op, "security"); (security == nil) != r.Root {
				t.Errorf("security = %v; only the root route needs no token", security)
			}
			if body := lookup(op, "requestBody"); (body == nil) != (r.Request == nil) {
				t.Errorf("requestBody = %v, Request = %T", body, r.Request)
			}
			for _, resp := range r.Responses {
				ct := resp.ContentType
				if ct == "" {
					ct = "application/json"
				}
				if lookup(op, "responses", itoa(resp.Status), "content", ct) == nil {
					t.Errorf("no %d %s response", resp.Status, ct)
				}
			}
			codes := append(slices.Clone(r.Errors), api.CodeInternal)
			if !r.Root {
				codes = append(codes, api.CodeUnauthorized)
			}
			if r.Request != nil {
				codes = append(codes, api.CodeMalformedJSON)
			}
			for _, code := range codes {
				desc, _ := lookup(op, "responses", itoa(code.Status()), "description").(string)
				if !strings.Contains(desc, "`"+string(code)+"`") {
					t.Errorf("the %d response does not list %s: %q", code.Status(), code, desc)
				}
			}
		})
	}
	// Two bodies at one status are oneOf.
	if oneOf := lookup(doc, "paths", "/myagent/v1/calls/{callId}", "get", "responses", "200", "content", "application/json", "schema", "oneOf"); len(oneOf.([]any)) != 2 {
		t.Errorf("callStatus 200: oneOf = %v", oneOf)
	}
	codes := lookup(doc, "components", "schemas", "Code", "enum").([]any)
	if len(codes) != len(api.Codes()) {
		t.Errorf("Code enum = %v, want %v", codes, api.Codes())
	}
}

func itoa(n int) string { return strings.TrimSpace(string(must(json.Marshal(n)))) }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestOpenAPITools(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	b := generate(t)
	doc := parse(t, b)
	schemas := lookup(doc, "components", "schemas").(map[string]any)
	if lookup(doc, "paths", "/myagent/v1/tools/{name}", "post") == nil {
		t.Error("the generic call route is gone")
	}
	for _, info := range tools {
		t.Run(info.Name, func(t *testing.T) {
			op := lookup(doc, "paths", "/myagent/v1/tools/"+info.Name, "post")
			if info.Execution == tool.Agent {
				if op != nil || schemas["tool."+info.Name] != nil {
					t.Errorf("agent tool %s has a call path or schema", info.Name)
				}
				return
			}
			if id := lookup(op, "operationId"); id != "callTool_"+info.Name {
				t.Fatalf("operationId = %v", id)
			}
			body := lookup(op, "requestBody", "content", "application/json", "schema")
			if ref := lookup(body, "properties", "input", "$ref"); ref != "#/components/schemas/tool."+info.Name {
				t.Errorf("input $ref = %v", ref)
			}
			if lookup(body, "properties", "sessionId", "type") != "string" || lookup(body, "additionalProperties") != false {
				t.Errorf("request body = %v", body)
			}
			// The component is the tool's schema, its $defs lifted beside it.
			var want map[string]any
			if err := json.Unmarshal(info.InputSchema, &want); err != nil {
				t.Fatal(err)
			}
			defs, _ := want["$defs"].(map[string]any)
			delete(want, "$defs")
			got := schemas["tool."+info.Name]
			if len(defs) == 0 && !jsonEqual(got, want) {
				t.Errorf("component = %v\nwant the input schema %v", got, want)
			}
			for name := range defs {
				if !strings.Contains(string(b), `"$ref": "#/components/schemas/tool.`+info.Name+"."+strings.ReplaceAll(name, " ", "_")+`"`) {
					t.Errorf("nothing refers to the lifted definition %s", name)
				}
			}
		})
	}
	if ref := lookup(schemas, "tool.lint.a_rule", "properties", "not", "$ref"); ref != "#/components/schemas/tool.lint" {
		t.Errorf(`"#" became %v`, ref)
	}
	if lookup(schemas, "tool.lint.a_rule", "properties", "default", "type") != "string" {
		t.Errorf("a property named default was lost: %v", schemas["tool.lint.a_rule"])
	}
}

// jsonEqual compares two values by their JSON.
func jsonEqual(a, b any) bool {
	return bytes.Equal(must(json.Marshal(a)), must(json.Marshal(b)))
}

// The document validates real calls of each tool, recursive input
// included, and refuses bad input, as the tool's own validation does.
func TestOpenAPIToolRequests(t *testing.T) {
	t.Parallel()
	set := testSet(t)
	v := load(t, generate(t))
	tests := []struct {
		name, tool, body string
		valid            bool
	}{
		{"search", "search", `{"input":{"query":"q","site":"https://example.com","mode":"words","filter":{"since":"2026-01-02T03:04:05Z"}},"sessionId":"s1"}`, true},
		{"search bad enum", "search", `{"input":{"query":"q","mode":"lines","filter":{}}}`, false},
		{"search bad uri", "search", `{"input":{"query":"q","site":"not a uri","filter":{}}}`, false},
		{"search missing field", "search", `{"input":{"filter":{}}}`, false},
		{"tree", "tree", `{"input":{"value":"a","children":[{"value":"b","children":[{"value":"c"}]}]}}`, true},
		{"tree deep error", "tree", `{"input":{"value":"a","children":[{"value":"b","children":[{"value":1}]}]}}`, false},
		{"lint", "lint", `{"input":{"rule":{"default":"x","not":{"rule":{}}}}}`, true},
		{"lint root ref", "lint", `{"input":{"rule":{"not":{"rule":1}}}}`, false},
		{"unknown field", "deploy", `{"input":{"environment":"staging"},"extra":1}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/myagent/v1/tools/"+tt.tool, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer t")
			ok, errs := v.ValidateHttpRequestSync(req)
			if ok != tt.valid {
				t.Errorf("valid = %v, want %v; errors:", ok, tt.valid)
				for _, e := range errs {
					t.Errorf("  %s: %s", e.Message, e.Reason)
				}
			}
			var body api.CallRequest
			if err := json.Unmarshal([]byte(tt.body), &body); err != nil {
				t.Fatal(err)
			}
			tl, _ := set.Lookup(tt.tool)
			if _, err := tl.Validate(body.Input); (err == nil) != ok && !strings.Contains(tt.name, "unknown field") {
				t.Errorf("the tool's own validation says %v, the document %v", err, ok)
			}
		})
	}
}

// Real bodies, encoded as the server encodes them, match their schemas.
func TestOpenAPISamples(t *testing.T) {
	t.Parallel()
	doc, err := libopenapi.NewDocument(generate(t))
	if err != nil {
		t.Fatal(err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	session := api.Session{ID: "s1", Channel: "web", Mode: api.ModeLocal, Principal: "bearer-token", CreatedAt: now, UpdatedAt: now, LastSeq: 4}
	outcome := api.Outcome{ToolName: "search", CallID: "tool_search_1", Result: json.RawMessage(`{"hits":[]}`), DurationMs: 12}
	approval := api.Approval{CallID: "c1", Tool: "deploy", Input: json.RawMessage(`{"environment":"production"}`), RequestedBy: "bearer-token",
		RequestedAt: now, ExpiresAt: now.Add(time.Hour), Status: api.ApprovalApproved, DecidedAt: &now, Outcome: &outcome}
	tests := []struct {
		name, schema string
		value        any
		valid        bool
	}{
		{"call response", "CallResponse", api.CallResponse{OK: true, Outcome: outcome}, true},
		{"call response missing outcome", "CallResponse", map[string]any{"ok": true}, false},
		{"invalid input", "ErrorResponse", api.ErrorResponse{Error: api.AsError(&tool.InputError{Tool: "search",
			Violations: []tool.Violation{{Path: "input.query", Message: "is required"}}})}, true},
		{"already resolved", "ErrorResponse", api.ErrorResponse{Error: &api.Error{Code: api.CodeAlreadyResolved, Message: "m", Approval: &approval}}, true},
		{"unknown code", "ErrorResponse", api.ErrorResponse{Error: &api.Error{Code: "nope", Message: "m"}}, false},
		{"sessions", "SessionList", api.SessionList{OK: true, Sessions: []api.Session{session, {ID: "s2", RunningTurn: "t1", CreatedAt: now, UpdatedAt: now}}}, true},
		{"session with a bad time", "SessionList", map[string]any{"ok": true, "next": "", "sessions": []any{map[string]any{"createdAt": "yesterday"}}}, false},
		{"approvals", "ApprovalList", api.ApprovalList{OK: true, Approvals: []api.Approval{approval}}, true},
		{"events", "EventList", api.EventList{OK: true, Events: []api.Event{
			event(api.Message{Role: api.RoleUser, Text: "hi"}), event(api.TurnCompleted{}), event(api.ApprovalResolved{At: now, Status: api.ApprovalDenied})}}, true},
		{"event data of another kind", "Event", api.Event{SessionID: "s1", Seq: 1, Kind: api.KindMessage, Data: json.RawMessage(`{"text":1}`), Time: now}, false},
		{"tools", "ToolList", api.ToolList{OK: true, Tools: testTools(t)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy := model.Model.Components.Schemas.GetOrZero(tt.schema)
			if proxy == nil {
				t.Fatalf("no component %s", tt.schema)
			}
			payload := must(json.Marshal(tt.value))
			ok, errs := schema_validation.NewSchemaValidator(config.WithFormatAssertions()).ValidateSchemaBytes(proxy.Schema(), payload)
			if ok != tt.valid {
				t.Errorf("%s: valid = %v, want %v", payload, ok, tt.valid)
				for _, e := range errs {
					t.Errorf("  %s: %s", e.Message, e.Reason)
				}
			}
		})
	}
}

func event(p api.Payload) api.Event {
	e := api.NewEvent(p)
	e.SessionID, e.Seq, e.Time = "s1", 1, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return e
}

func TestOpenAPIDeterministic(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	first := generate(t)
	reversed := slices.Clone(tools)
	slices.Reverse(reversed)
	for i, in := range [][]tool.Info{tools, reversed} {
		b, err := api.OpenAPI(slug, in)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, first) {
			t.Errorf("call %d gave other bytes", i+2)
		}
	}
}

func TestOpenAPIGolden(t *testing.T) {
	t.Parallel()
	got := generate(t)
	path := filepath.Join("testdata", "openapi.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the document differs from %s (run go test ./api -run Golden -update if the change is intended)", path)
	}
}

func TestOpenAPIErrors(t *testing.T) {
	t.Parallel()
	search := testTools(t)[slices.IndexFunc(testTools(t), func(i tool.Info) bool { return i.Name == "search" })]
	badSchema := search
	badSchema.InputSchema = json.RawMessage(`{"type":`)
	badName := search
	badName.Name = "a/b"
	tests := []struct {
		name  string
		slug  string
		tools []tool.Info
		want  string
	}{
		{"empty slug", "", nil, "invalid slug"},
		{"slug with a slash", "a/b", nil, "invalid slug"},
		{"two tools of one name", slug, []tool.Info{search, search}, "two tools are named search"},
		{"bad input schema", slug, []tool.Info{badSchema}, "reading the input schema of tool search"},
		{"bad tool name", slug, []tool.Info{badName}, "invalid tool name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := api.OpenAPI(tt.slug, tt.tools)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func ExampleOpenAPI() {
	type searchInput struct {
		Query string `json:"query"`
	}
	search, err := tool.New("search", tool.Config{Description: "Search the docs."}, noop[searchInput])
	if err != nil {
		panic(err)
	}
	doc, err := api.OpenAPI("docs", []tool.Info{search.Info()})
	if err != nil {
		panic(err)
	}
	var d struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		panic(err)
	}
	fmt.Println(d.Paths["/docs/v1/tools/search"]["post"].OperationID)
	fmt.Println(string(must(json.Marshal(d.Components.Schemas["tool.search"]))))
	// Output:
	// callTool_search
	// {"additionalProperties":false,"properties":{"query":{"type":"string"}},"required":["query"],"type":"object"}
}

// A tool's output schema is in its call route's answer: a result that is
// not an error must match it; an error result is free-form.
func TestOpenAPIToolOutput(t *testing.T) {
	v := load(t, generate(t))
	tests := []struct {
		name, body string
		valid      bool
	}{
		{"typed result", `{"ok":true,"toolName":"outline","callId":"tool_outline_1","isError":false,"result":{"value":"a","children":[{"value":"b"}]},"durationMs":1}`, true},
		{"result off its schema", `{"ok":true,"toolName":"outline","callId":"tool_outline_1","isError":false,"result":{"value":5},"durationMs":1}`, false},
		{"error result", `{"ok":true,"toolName":"outline","callId":"tool_outline_1","isError":true,"result":"it broke","durationMs":1}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/myagent/v1/tools/outline", strings.NewReader(`{"input":{"query":"q","filter":{}}}`))
			req.Header.Set("Content-Type", "application/json")
			resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(tt.body)), Request: req}
			ok, errs := v.ValidateHttpResponse(req, resp)
			if ok != tt.valid {
				t.Errorf("valid = %v, want %v", ok, tt.valid)
				for _, e := range errs {
					t.Errorf("  %s: %s", e.Message, e.Reason)
				}
			}
		})
	}
}

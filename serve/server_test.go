package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/tool"
)

const testToken = "test-token-123"

type prInput struct {
	PRURL string `json:"prUrl" jsonschema:"format=uri"`
}

type testBundle struct {
	url  string // http://127.0.0.1:port/agent/v1
	logs *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	inspect, err := tool.New("inspect_pr", tool.Config{Description: "Inspect a PR."},
		func(ctx context.Context, call *tool.Call, in prInput) (any, error) {
			return map[string]any{"prUrl": in.PRURL, "ready": true}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	fail, _ := tool.New("fail", tool.Config{Description: "Fail."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			return nil, errors.New("no such PR")
		})
	gated, _ := tool.New("promote", tool.Config{Description: "Promote.", NeedsApproval: tool.Always},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "promoted", nil })
	echo, _ := tool.NewScript("echo", tool.Config{Description: "Echo."}, "#!/bin/sh\ncat\n")
	set, err := tool.NewSet(inspect, fail, gated, echo)
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(set, &host.Options{StateRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	b := &testBundle{logs: &syncBuffer{}}
	srv, err := serve.New(h, &serve.Options{Slug: "agent", Token: testToken, MaxBodyBytes: 1 << 10, ApprovalWait: -1,
		Logger: slog.New(slog.NewTextHandler(b.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	b.url = ts.URL
	return b
}

// do sends a request and decodes the JSON answer.
func (b *testBundle) do(t *testing.T, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, b.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: content type %q", method, path, ct)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s %s: answer is not a JSON object: %s", method, path, data)
	}
	return resp.StatusCode, v
}

func TestCallShape(t *testing.T) {
	b := setup(t)
	status, v := b.do(t, "POST", "/agent/v1/tools/inspect_pr", testToken, `{"input":{"prUrl":"https://github.com/acme/checkout/pull/42"}}`)
	if status != 200 {
		t.Fatalf("status %d: %v", status, v)
	}
	keys := []string{}
	for k := range v {
		keys = append(keys, k)
	}
	if len(v) != 6 || v["ok"] != true || v["toolName"] != "inspect_pr" || v["isError"] != false ||
		!strings.HasPrefix(v["callId"].(string), "tool_inspect_pr_") {
		t.Errorf("answer %v (keys %v)", v, keys)
	}
	if _, ok := v["durationMs"].(float64); !ok {
		t.Errorf("durationMs is not a number: %v", v["durationMs"])
	}
	if r, _ := json.Marshal(v["result"]); string(r) != `{"prUrl":"https://github.com/acme/checkout/pull/42","ready":true}` {
		t.Errorf("result %s", r)
	}
	if logs := b.logs.String(); !strings.Contains(logs, "call_id="+v["callId"].(string)) || !strings.Contains(logs, "status=200") ||
		!strings.Contains(logs, "method=POST") || strings.Contains(logs, "acme/checkout") {
		t.Errorf("request log should have method, status and call id, and never the input:\n%s", logs)
	}
}

func TestErrors(t *testing.T) {
	b := setup(t)
	tests := []struct {
		name, method, path, token, body string
		status                          int
		code                            string
		check                           func(t *testing.T, e map[string]any)
	}{
		{"no token", "POST", "/agent/v1/tools/inspect_pr", "", `{}`, 401, "unauthorized", nil},
		{"wrong token", "GET", "/agent/v1/tools", "test-token-124", ``, 401, "unauthorized", nil},
		{"token prefix", "GET", "/agent/v1/tools", "test-token-12", ``, 401, "unauthorized", nil},
		{"unknown tool", "POST", "/agent/v1/tools/inspect", testToken, `{"input":{}}`, 404, "unknown_tool", func(t *testing.T, e map[string]any) {
			if a, _ := json.Marshal(e["available"]); string(a) != `["echo","fail","inspect_pr","promote"]` {
				t.Errorf("available = %s", a)
			}
		}},
		{"agent tool", "POST", "/agent/v1/tools/echo", testToken, `{"input":{}}`, 400, "agent_tool", nil},
		{"invalid input", "POST", "/agent/v1/tools/inspect_pr", testToken, `{"input":{"prUrl":"nope","extra":1}}`, 400, "invalid_input", func(t *testing.T, e map[string]any) {
			if v, _ := json.Marshal(e["violations"]); string(v) != `[{"message":"unknown property (known: prUrl)","path":"input.extra"},{"message":"must be a uri","path":"input.prUrl"}]` {
				t.Errorf("violations = %s", v)
			}
		}},
		{"malformed JSON", "POST", "/agent/v1/tools/inspect_pr", testToken, `{"input":`, 400, "malformed_json", nil},
		{"not an object", "POST", "/agent/v1/tools/inspect_pr", testToken, `[1]`, 400, "malformed_json", nil},
		{"empty body", "POST", "/agent/v1/tools/inspect_pr", testToken, ``, 400, "malformed_json", nil},
		{"unknown body field", "POST", "/agent/v1/tools/inspect_pr", testToken, `{"inptu":{}}`, 400, "malformed_json", nil},
		{"trailing data", "POST", "/agent/v1/tools/inspect_pr", testToken, `{"input":{}}}`, 400, "malformed_json", nil},
		{"body too large", "POST", "/agent/v1/tools/inspect_pr", testToken, `{"input":{"prUrl":"https://x.example/` + strings.Repeat("a", 2000) + `"}}`, 413, "body_too_large", nil},
		{"no such session", "POST", "/agent/v1/tools/inspect_pr", testToken, `{"input":{"prUrl":"https://x.example"},"sessionId":"s1"}`, 404, "session_not_found", nil},
		{"wrong slug", "GET", "/other/v1/tools", testToken, ``, 404, "not_found", nil},
		{"wrong method", "GET", "/agent/v1/tools/inspect_pr", testToken, ``, 405, "method_not_allowed", nil},
		{"unknown path without token", "GET", "/agent/v1/nothing", "", ``, 401, "unauthorized", nil},
		{"openapi without token", "GET", "/agent/v1/openapi.json", "", ``, 401, "unauthorized", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, v := b.do(t, tt.method, tt.path, tt.token, tt.body)
			e, _ := v["error"].(map[string]any)
			if status != tt.status || v["ok"] != false || e == nil || e["code"] != tt.code || e["message"] == "" {
				t.Fatalf("status %d, body %v; want %d with code %s", status, v, tt.status, tt.code)
			}
			if tt.check != nil {
				tt.check(t, e)
			}
		})
	}
}

// A host always has a store (in memory by default), so a gated call parks
// for approval: 202 with how to decide it and where its outcome will be.
func TestGatedCallParks(t *testing.T) {
	b := setup(t)
	status, v := b.do(t, "POST", "/agent/v1/tools/promote", testToken, `{"input":{}}`)
	id, _ := v["callId"].(string)
	if status != 202 || v["ok"] != true || v["status"] != "approval_pending" || !strings.HasPrefix(id, "tool_promote_") ||
		v["outcome"] != "GET /agent/v1/calls/"+id {
		t.Fatalf("status %d, body %v", status, v)
	}
	status, v = b.do(t, "GET", "/agent/v1/calls/"+id, testToken, "")
	if status != 200 || v["status"] != "approval_pending" {
		t.Errorf("call status: %d %v", status, v)
	}
}

func TestToolErrorIs200(t *testing.T) {
	b := setup(t)
	status, v := b.do(t, "POST", "/agent/v1/tools/fail", testToken, `{}`)
	if status != 200 || v["ok"] != true || v["isError"] != true || v["result"] != "no such PR" {
		t.Errorf("status %d, body %v", status, v)
	}
}

func TestListAndHealth(t *testing.T) {
	b := setup(t)
	status, v := b.do(t, "GET", "/healthz", "", "")
	if status != 200 || v["ok"] != true {
		t.Errorf("healthz: %d %v", status, v)
	}
	status, v = b.do(t, "GET", "/agent/v1/tools", testToken, "")
	tools, _ := v["tools"].([]any)
	if status != 200 || len(tools) != 4 {
		t.Fatalf("tools: %d %v", status, v)
	}
	first := tools[0].(map[string]any)
	if first["name"] != "echo" || first["execution"] != "agent" || first["approval"] != "never" || first["inputSchema"] == nil || first["description"] != "Echo." {
		t.Errorf("first tool: %v", first)
	}
	if p := tools[3].(map[string]any); p["name"] != "promote" || p["approval"] != "always" {
		t.Errorf("promote: %v", p)
	}
}

func TestNewErrors(t *testing.T) {
	set, _ := tool.NewSet()
	h, _ := host.New(set, &host.Options{StateRoot: t.TempDir()})
	for _, o := range []*serve.Options{nil, {Slug: "a"}, {Slug: "bad slug", Token: "t"}, {Slug: "../x", Token: "t"}, {Slug: "a", Token: "t", MaxBodyBytes: -1}} {
		if _, err := serve.New(h, o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}

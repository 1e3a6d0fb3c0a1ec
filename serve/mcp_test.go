package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// mcpBundle is a served agent whose MCP endpoint the tests reach.
type mcpBundle struct {
	host *host.Host
	srv  *serve.Server
	base string // http://127.0.0.1:port
	url  string // …/agent/mcp
}

// statsOutput is a typed output: the tool lists an outputSchema and its
// results carry structuredContent.
type statsOutput struct {
	Count int      `json:"count" jsonschema:"minimum=0"`
	Names []string `json:"names"`
}

type greetInput struct {
	Name  string `json:"name" jsonschema:"minLength=1"`
	Times int    `json:"times,omitempty" jsonschema:"minimum=1,maximum=3"`
}

func setupMCP(t testing.TB, opts serve.Options) *mcpBundle {
	t.Helper()
	greet, err := tool.New("greet", tool.Config{Description: "Greet someone by name."},
		func(ctx context.Context, call *tool.Call, in greetInput) (any, error) {
			return map[string]any{"greeting": strings.Repeat("hello "+in.Name+"! ", max(in.Times, 1))}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	text, _ := tool.New("motto", tool.Config{Description: "A motto, as a plain string."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "ship it", nil })
	fail, _ := tool.New("fail", tool.Config{Description: "Fail."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			return nil, errors.New("no such PR")
		})
	boom, _ := tool.New("boom", tool.Config{Description: "Panic."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { panic("kaboom") })
	gated, _ := tool.New("promote", tool.Config{Description: "Promote a build.", NeedsApproval: tool.Always},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "promoted", nil })
	script, _ := tool.NewScript("echo", tool.Config{Description: "Echo (an agent tool)."}, "#!/bin/sh\ncat\n")
	stats, _ := tool.New("stats", tool.Config{Description: "Typed output."},
		func(ctx context.Context, call *tool.Call, in struct{}) (statsOutput, error) {
			return statsOutput{Count: 3, Names: []string{"a", "b"}}, nil
		})
	set, err := tool.NewSet(greet, text, fail, boom, gated, script, stats)
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(set, &host.Options{StateRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	opts.Slug, opts.Token = "agent", testToken
	if opts.ApprovalWait == 0 {
		opts.ApprovalWait = -1
	}
	srv, err := serve.New(h, &opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); h.Close() })
	return &mcpBundle{host: h, srv: srv, base: ts.URL, url: ts.URL + "/agent/mcp"}
}

// bearer adds a token (and other headers) to every request.
type bearer struct {
	token  string
	header http.Header
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	for k, v := range b.header {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens an official Go SDK client session, speaking version
// ("" for the SDK's latest).
func (b *mcpBundle) connect(t *testing.T, token, version string) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "agent-sdk-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: b.url, HTTPClient: &http.Client{Transport: bearer{token: token}}, DisableStandaloneSSE: true, MaxRetries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, err
}

// mcpVersions are the protocol versions the tests speak: the SDK's latest
// (what its clients send a stateless server) and the one before.
var mcpVersions = []string{"2026-07-28", "2025-11-25"}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content: %+v", res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T", res.Content[0])
	}
	return tc.Text
}

// The official Go SDK client lists the server tools exactly as GET
// /v1/tools shows them (not the agent tools), and calls them: results,
// isError results for a tool's error, a panic and invalid input, and
// JSON-RPC errors with proper codes for an unknown tool and an agent tool.
func TestMCPListAndCall(t *testing.T) {
	b := setupMCP(t, serve.Options{})
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			s, err := b.connect(t, testToken, version)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			list, err := s.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]tool.Info{}
			for _, info := range b.host.Tools().Infos() {
				if info.Execution == tool.Server {
					want[info.Name] = info
				}
			}
			if len(list.Tools) != len(want) {
				t.Errorf("listed %d tools, want the %d server tools", len(list.Tools), len(want))
			}
			for _, lt := range list.Tools {
				info, ok := want[lt.Name]
				if !ok {
					t.Errorf("listed %s, which is not a server tool", lt.Name)
					continue
				}
				got, _ := json.Marshal(lt.InputSchema)
				if lt.Description != info.Description || !jsonEqual(got, info.InputSchema) {
					t.Errorf("%s listed as %q %s; GET /v1/tools has %q %s", lt.Name, lt.Description, got, info.Description, info.InputSchema)
				}
				gotOut, _ := json.Marshal(lt.OutputSchema)
				if (info.OutputSchema == nil) != (lt.OutputSchema == nil) || (info.OutputSchema != nil && !jsonEqual(gotOut, info.OutputSchema)) {
					t.Errorf("%s listed with output schema %s; GET /v1/tools has %s", lt.Name, gotOut, info.OutputSchema)
				}
			}

			res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada", "times": 2}})
			if err != nil || res.IsError || text(t, res) != `{"greeting":"hello Ada! hello Ada! "}` {
				t.Errorf("greet: %+v %v", res, err)
			}
			if res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "motto"}); err != nil || res.IsError || text(t, res) != "ship it" || res.StructuredContent != nil {
				t.Errorf("motto: %+v %v", res, err)
			}
			res, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "stats"})
			sc, _ := json.Marshal(res.StructuredContent)
			if err != nil || res.IsError || string(sc) != `{"count":3,"names":["a","b"]}` || text(t, res) != string(sc) {
				t.Errorf("a typed tool's result: %+v %s %v; want structuredContent beside the same text", res, sc, err)
			}
			for name, wantText := range map[string]string{"fail": "no such PR", "boom": "kaboom"} {
				res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name})
				if err != nil || !res.IsError || !strings.Contains(text(t, res), wantText) {
					t.Errorf("%s: %+v %v; want an isError result saying %q", name, res, err, wantText)
				}
			}
			// Invalid input is the tool's result, so that a model can correct it.
			for _, args := range []any{map[string]any{"name": ""}, map[string]any{"name": "Ada", "times": 9}, map[string]any{"nam": "Ada"}} {
				res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: args})
				if err != nil || !res.IsError || !strings.Contains(text(t, res), "invalid input") {
					t.Errorf("greet %v: %+v %v; want an isError result naming the invalid input", args, res, err)
				}
			}
			for _, name := range []string{"nope", "echo"} {
				_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name})
				var rpc *jsonrpc.Error
				if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpc.Message, name) {
					t.Errorf("calling %s: %v; want JSON-RPC error %d naming it", name, err, jsonrpc.CodeInvalidParams)
				}
			}
		})
	}
}

// A gated call parks as a direct call does: the answer says it awaits
// approval and where its outcome will be; approved, it runs once, and the
// outcome is where the answer said. With an approval wait, an approval in
// time is answered with the result.
func TestMCPGatedCall(t *testing.T) {
	b := setupMCP(t, serve.Options{})
	s, err := b.connect(t, testToken, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "promote"})
	if err != nil || !res.IsError || !strings.Contains(text(t, res), "awaits a person's approval") {
		t.Fatalf("gated call: %+v %v", res, err)
	}
	var pending api.CallPending
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &pending); err != nil || pending.Status != api.CallAwaitingApproval || pending.CallID == "" ||
		pending.Outcome != "GET /agent/v1/calls/"+pending.CallID {
		t.Fatalf("structured content %s", raw)
	}
	if _, err := b.host.Approvals().Resolve(ctx, pending.CallID, host.Decision{Approved: true, By: "boss"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		a, err := b.host.Approvals().Get(ctx, pending.CallID)
		if err == nil && a.Outcome != nil {
			if a.Outcome.IsError || string(a.Outcome.Result) != `"promoted"` {
				t.Errorf("outcome %+v", a.Outcome)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no outcome for the approved call: %+v %v", a, err)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Waiting: a decision within --approval-wait answers the call itself.
	w := setupMCP(t, serve.Options{ApprovalWait: 10 * time.Second})
	ws, err := w.connect(t, testToken, "")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range 500 {
			list, _, _ := w.host.Approvals().List(ctx, api.ApprovalPending, store.Page{})
			if len(list) == 1 {
				w.host.Approvals().Resolve(ctx, list[0].CallID, host.Decision{Approved: true, By: "boss"})
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	if res, err := ws.CallTool(ctx, &mcp.CallToolParams{Name: "promote"}); err != nil || res.IsError || text(t, res) != "promoted" {
		t.Errorf("gated call approved while it waited: %+v %v", res, err)
	}
}

// Without the token, or with a wrong one, the endpoint answers 401 with
// WWW-Authenticate, and the SDK client cannot connect; a browser Origin
// that is not allowed is 403, an allowed one and a loopback one pass; a
// non-loopback Host on a loopback connection (DNS rebinding) is 403.
func TestMCPAuthAndOrigin(t *testing.T) {
	b := setupMCP(t, serve.Options{MCPOrigins: []string{"https://tools.example.com"}})
	for _, token := range []string{"", "wrong"} {
		if _, err := b.connect(t, token, ""); err == nil {
			t.Errorf("connected with token %q", token)
		}
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	post := func(token string, header map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", b.url, strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range header {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post("", nil); resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("no token: %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	for origin, want := range map[string]int{
		"http://evil.example":        403,
		"http://evil.example:3000":   403,
		"https://tools.example.com":  200,
		"https://tools.example.com/": 200,
		"http://tools.example.com":   403, // another scheme is another origin
		"http://localhost:5173":      200,
		"http://127.0.0.1:8080":      200,
		"null":                       403,
	} {
		if resp := post(testToken, map[string]string{"Origin": origin}); resp.StatusCode != want {
			t.Errorf("Origin %s: %d, want %d", origin, resp.StatusCode, want)
		}
	}
	// DNS rebinding: the page's origin and Host are both the attacker's name.
	if resp := post(testToken, map[string]string{"Origin": "http://rebound.example:8080", "Host": "rebound.example:8080"}); resp.StatusCode != 403 {
		t.Errorf("a DNS-rebinding request: %d", resp.StatusCode)
	}
	if resp := post(testToken, map[string]string{"Host": "rebound.example"}); resp.StatusCode != 403 {
		t.Errorf("a non-loopback Host on a loopback connection: %d", resp.StatusCode)
	}
	if resp := post(testToken, nil); resp.StatusCode != 200 {
		t.Errorf("a plain initialize: %d", resp.StatusCode)
	}
}

// A body over the limit is refused before the endpoint sees it.
func TestMCPBodyLimit(t *testing.T) {
	b := setupMCP(t, serve.Options{MaxBodyBytes: 1 << 10})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"` + strings.Repeat("a", 2<<10) + `"}}}`
	req, _ := http.NewRequest("POST", b.url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("a body over the limit: %d", resp.StatusCode)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

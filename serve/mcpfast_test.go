package serve_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/serve"
)

// mcpExchange is one request to the MCP endpoint, in process, and its
// answer.
type mcpExchange struct {
	status int
	ctype  string
	body   []byte
}

// mcpPost sends body to srv's MCP endpoint with the headers a client of
// version sends (none for ""), plus extra.
func mcpPost(srv *serve.Server, version, body string, extra map[string]string) mcpExchange {
	req := httptest.NewRequest("POST", "/agent/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	for k, v := range extra {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	return mcpExchange{rec.Code, rec.Header().Get("Content-Type"), rec.Body.Bytes()}
}

// sameAnswer reports whether two answers are the same to a client: status,
// content type, and the body as JSON (or as text when it is not JSON).
func sameAnswer(a, b mcpExchange) bool {
	if a.status != b.status || a.ctype != b.ctype {
		return false
	}
	var x, y any
	if json.Unmarshal(a.body, &x) != nil || json.Unmarshal(b.body, &y) != nil {
		return bytes.Equal(bytes.TrimSpace(a.body), bytes.TrimSpace(b.body))
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// compareFast sends one request with the fast path on and off; it returns
// whether the fast path answered it, and fails the test if the answers
// differ.
func compareFast(t testing.TB, srv *serve.Server, version, body string, extra map[string]string) bool {
	t.Helper()
	serve.SetMCPFastPath(srv, true)
	before := serve.MCPFastHits(srv)
	fast := mcpPost(srv, version, body, extra)
	took := serve.MCPFastHits(srv) > before
	serve.SetMCPFastPath(srv, false)
	sdk := mcpPost(srv, version, body, extra)
	serve.SetMCPFastPath(srv, true)
	if !sameAnswer(fast, sdk) {
		t.Errorf("version %q, headers %v, body %s:\nfast path (taken: %v): %d %s %s\nSDK:                     %d %s %s",
			version, extra, body, took, fast.status, fast.ctype, fast.body, sdk.status, sdk.ctype, sdk.body)
	}
	return took
}

// meta is the _meta a 2026-07-28 client sends.
func meta(version string) string {
	return `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/protocolVersion":"` + version + `"}`
}

// The fast path answers what the SDK answers, for the requests it takes
// and for every near miss it leaves to the SDK; and it does take the plain
// tools/call requests of every protocol version clients send.
func TestMCPFastPathAgrees(t *testing.T) {
	b := setupMCP(t, serve.Options{})
	type tc struct {
		body  string
		extra map[string]string
		fast  bool
	}
	call := func(id, name, args string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, args)
	}
	call26 := func(id, name, args, meta string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{%s,"name":%q,"arguments":%s}}`, id, meta, name, args)
	}
	h26 := func(name string) map[string]string {
		return map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": name}
	}
	cases := map[string][]tc{}
	for _, v := range []string{"2025-11-25", "2025-06-18"} {
		cases[v] = []tc{
			{call("1", "greet", `{"name":"Ada","times":2}`), nil, true},
			{call(`"req-7"`, "greet", `{"name":"Ada"}`), nil, true},
			{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"motto"}}`, nil, true},
			{call("4", "fail", `{}`), nil, true},
			{call("41", "stats", `{}`), nil, true},
			{call("5", "boom", `{}`), nil, true},
			{call("6", "greet", `{"name":""}`), nil, true},
			{call("7", "greet", `{"name":"Ada","name":"Bob"}`), nil, true},
			{call("8", "greet", `{"name":"Ada","extra":1}`), nil, true},
			{call("9", "greet", `{"name":"Ada","times":"two"}`), nil, true},
			{call("10", "nope", `{}`), nil, false},
			{call("11", "echo", `{"text":"hi"}`), nil, false},
			{call("-1", "greet", `{"name":"Ada"}`), nil, false},
			{call("1.5", "greet", `{"name":"Ada"}`), nil, false},
			{call("null", "greet", `{"name":"Ada"}`), nil, false},
			{call(`"a\"b"`, "greet", `{"name":"Ada"}`), nil, false},
			{call("12", "greet", `[1]`), nil, false},
			{call("13", "greet", `null`), nil, false},
			{`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},"_meta":{"progressToken":1}}}`, nil, false},
			{`{"jsonrpc":"2.0","id":15,"method":"tools/call","method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`, nil, false},
			{`{"jsonrpc":"2.0","id":16,"Method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`, nil, false},
			{`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}},"extra":1}`, nil, false},
			{`{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"n\u0061me":"greet","arguments":{"name":"Ada"}}}`, nil, false},
			{`[{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}]`, nil, false},
			{`{"jsonrpc":"2.0","id":20,"method":"tools/list"}`, nil, false},
			{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil, false},
			{`{"jsonrpc":"1.0","id":21,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`, nil, false},
			{call("22", "greet", `{"name":"Ada"}`) + ` trailing`, nil, false},
			{call("23", "greet", `{"name":"Ada"}`), map[string]string{"Accept": "application/json"}, false},
			{call("24", "greet", `{"name":"Ada"}`), map[string]string{"Accept": "*/*"}, true},
			{call("25", "greet", `{"name":"Ada"}`), map[string]string{"Content-Type": "text/plain"}, false},
			{call("26", "greet", `{"name":"Ada"}`), map[string]string{"Mcp-Method": "tools/call"}, false},
			{call("27", "greet", `{"name":"Ada"}`), map[string]string{"Last-Event-ID": "1"}, false},
			{`not json`, nil, false},
			{``, nil, false},
		}
	}
	cases["2026-07-28"] = []tc{
		{call26("1", "greet", `{"name":"Ada"}`, meta("2026-07-28")), h26("greet"), true},
		{call26(`"x"`, "fail", `{}`, meta("2026-07-28")), h26("fail"), true},
		{call26(`"y"`, "stats", `{}`, meta("2026-07-28")), h26("stats"), true},
		{call26("2", "greet", `{"name":""}`, meta("2026-07-28")), h26("greet"), true},
		{call26("3", "greet", `{"name":"Ada"}`, meta("2025-11-25")), h26("greet"), false},
		{call("4", "greet", `{"name":"Ada"}`), h26("greet"), false},
		{call26("5", "greet", `{"name":"Ada"}`, meta("2026-07-28")), h26("motto"), false},
		{call26("6", "greet", `{"name":"Ada"}`, meta("2026-07-28")), map[string]string{"Mcp-Method": "tools/call"}, false},
		{call26("7", "greet", `{"name":"Ada"}`, meta("2026-07-28")), map[string]string{"Mcp-Name": "greet"}, false},
		{call26("8", "nope", `{}`, meta("2026-07-28")), h26("nope"), false},
		{call26("9", "greet", `{"name":"Ada"}`, `"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"p"}`), h26("greet"), false},
		{call26("11", "greet", `{"name":"Ada"}`, `"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`), h26("greet"), true},
		{call26("12", "greet", `{"name":"Ada"}`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`), h26("greet"), false},
		{call26("13", "greet", `{"name":"Ada"}`, `"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":null,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`), h26("greet"), false},
		{call26("14", "greet", `{"name":"Ada"}`, `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":5},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`), h26("greet"), false},
		{call26("10", "greet", `{"name":"Ada"}`, meta("2026-07-28")), map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "greet", "Mcp-Param-Name": "x"}, false},
	}
	cases["2025-03-26"] = []tc{{call("1", "greet", `{"name":"Ada"}`), nil, false}}
	cases[""] = []tc{{call("1", "greet", `{"name":"Ada"}`), nil, false}}
	cases["1999-01-01"] = []tc{{call("1", "greet", `{"name":"Ada"}`), nil, false}}
	taken := 0
	for version, list := range cases {
		for _, c := range list {
			took := compareFast(t, b.srv, version, c.body, c.extra)
			if took != c.fast {
				t.Errorf("version %q, headers %v, body %s: fast path taken %v, want %v", version, c.extra, c.body, took, c.fast)
			}
			if took {
				taken++
			}
		}
	}
	n := 0
	for _, list := range cases {
		n += len(list)
	}
	t.Logf("%d requests answered the same both ways; the fast path took %d", n, taken)
}

// FuzzMCPFastPath sends arbitrary bodies and headers both ways: the
// answers must agree.
//
//	go test ./serve -run '^$' -fuzz FuzzMCPFastPath -fuzztime 120s
func FuzzMCPFastPath(f *testing.F) {
	f.Add("2025-11-25", "", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`)
	f.Add("2026-07-28", "tools/call", "greet", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+meta("2026-07-28")+`,"name":"greet","arguments":{"name":"Ada"}}}`)
	f.Add("2025-06-18", "", "", `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"fail"}}`)
	b := setupMCP(f, serve.Options{})
	f.Fuzz(func(t *testing.T, version, method, name, body string) {
		extra := map[string]string{}
		if method != "" {
			extra["Mcp-Method"] = method
		}
		if name != "" {
			extra["Mcp-Name"] = name
		}
		if !validHeader(version) || !validHeader(method) || !validHeader(name) {
			return
		}
		compareFast(t, b.srv, version, body, extra)
	})
}

// validHeader reports whether v can be sent as a header value.
func validHeader(v string) bool {
	for _, c := range v {
		if c < ' ' || c == 0x7f || c > '~' {
			return false
		}
	}
	return strings.TrimSpace(v) == v
}

// An MCP message that names a member of its envelope twice — its own,
// its params', its _meta's, in any case or escaped — is refused with the
// JSON-RPC error Invalid Request, to its id (or, with none to read, id
// null and 400), both ways, and nothing runs; a tool's arguments are the
// tool's, which refuses their duplicate keys as an isError result.
func TestMCPEnvelopeDuplicates(t *testing.T) {
	b := setupMCP(t, serve.Options{})
	for _, tc := range []struct {
		name, body string
		status     int
		id         string
		twice      string
	}{
		{"method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`, 200, "1", `field "method" appears twice`},
		{"method in another case", `{"jsonrpc":"2.0","id":"a","method":"tools/list","Method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`, 200, `"a"`, `field "Method" appears twice`},
		{"params", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"motto"},"params":{"name":"greet","arguments":{"name":"Ada"}}}`, 200, "2", `field "params" appears twice`},
		{"a tool's name", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"motto","name":"greet","arguments":{"name":"Ada"}}}`, 200, "3", `field "name" of params appears twice`},
		{"an escaped name", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"motto","n\u0061me":"greet"}}`, 200, "4", `field "name" of params appears twice`},
		{"arguments", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},"arguments":{"name":"Bob"}}}`, 200, "5", `field "arguments" of params appears twice`},
		{"_meta", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},"_meta":{"progressToken":1,"progressToken":2}}}`, 200, "6", `field "progressToken" of params._meta appears twice`},
		{"id", `{"jsonrpc":"2.0","id":7,"id":8,"method":"tools/list"}`, 400, "null", `field "id" appears twice`},
		{"in a batch", `[{"jsonrpc":"2.0","id":9,"method":"tools/list","method":"tools/call"}]`, 400, "null", `field "method" of a message of the batch appears twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, fast := range []bool{true, false} {
				serve.SetMCPFastPath(b.srv, fast)
				got := mcpPost(b.srv, "2025-11-25", tc.body, nil)
				var v struct {
					ID    json.RawMessage `json:"id"`
					Error struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.Unmarshal(got.body, &v); err != nil || got.status != tc.status || got.ctype != "application/json" ||
					string(v.ID) != tc.id || v.Error.Code != -32600 || !strings.Contains(v.Error.Message, tc.twice) {
					t.Errorf("fast path %v: %d %s %s; want %d, id %s, -32600 with %q", fast, got.status, got.ctype, got.body, tc.status, tc.id, tc.twice)
				}
			}
			serve.SetMCPFastPath(b.srv, true)
		})
	}
	// Duplicate keys in a tool's arguments are the tool's to refuse.
	got := mcpPost(b.srv, "2025-11-25", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada","name":"Bob"}}}`, nil)
	if got.status != 200 || !strings.Contains(string(got.body), `"isError":true`) {
		t.Errorf("duplicate arguments: %d %s", got.status, got.body)
	}
}

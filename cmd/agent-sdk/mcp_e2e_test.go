package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

var mcpTool = `package tools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

type MCPInput struct {
	Tool string ` + "`" + `json:"tool"` + "`" + `
}

var _ = tool.Define(tool.Config{Description: "Call a tool of the test MCP server."},
	func(ctx context.Context, call *tool.Call, in MCPInput) (any, error) {
		return call.Host.MCP.CallTool(ctx, "test", in.Tool, nil)
	})
`

// A real tool on the real host reaches an MCP server authored in
// agent.yaml: the connection is reused, and a crash mid-call gives an
// isError result and a fresh connection on the next call.
func TestMCPConnection(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mcpagent")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "mcpserver")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(repoRoot, "internal", "mcptest", "server")).CombinedOutput(); err != nil {
		t.Fatalf("building the MCP server: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(dir, "agent", "tools", "viamcp.go"), []byte(mcpTool), 0o644)
	os.WriteFile(filepath.Join(dir, "agent", "agent.yaml"), []byte("mcp:\n  test:\n    command: "+bin+"\n"), 0o644)
	s := startServer(t, dir)
	call := func(name string) map[string]any {
		status, v, _ := s.request(t, "POST", "/tools/viamcp", s.token, `{"input":{"tool":"`+name+`"}}`)
		if status != 200 {
			t.Fatalf("%s: %d %v", name, status, v)
		}
		return v
	}
	text := func(v map[string]any) string {
		r, _ := v["result"].(map[string]any)
		c, _ := r["content"].([]any)
		if len(c) != 1 {
			return ""
		}
		s, _ := c[0].(map[string]any)["text"].(string)
		return s
	}
	if v := call("count"); text(v) != "1" {
		t.Fatalf("first call: %v", v)
	}
	if v := call("count"); text(v) != "2" {
		t.Errorf("the connection was not reused: %v", v)
	}
	if v := call("crash"); v["isError"] != true {
		t.Errorf("a crash mid-call: %v", v)
	}
	if v := call("count"); text(v) != "1" || v["isError"] != false {
		t.Errorf("after the crash: %v (want a new connection counting from 1)", v)
	}
}

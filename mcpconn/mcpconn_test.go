package mcpconn_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/agentconfig"
	"github.com/agentsdk/agentsdk/mcpconn"
	"github.com/agentsdk/agentsdk/tool"
)

// serverBin is the test MCP server, a real process built from the MCP Go SDK.
var serverBin string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "mcpserver")
		if err != nil {
			return 1
		}
		defer os.RemoveAll(dir)
		serverBin = filepath.Join(dir, "server")
		if out, err := exec.Command("go", "build", "-o", serverBin, "../internal/mcptest/server").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building the test MCP server: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}())
}

func text(t *testing.T, r tool.Result) string {
	t.Helper()
	if len(r.Content) != 1 || r.Content[0].Type != "text" {
		t.Fatalf("result %+v", r)
	}
	return r.Content[0].Text
}

func TestStdioServer(t *testing.T) {
	ctx := context.Background()
	c, err := mcpconn.New(map[string]agentconfig.MCPServer{"test": {Command: serverBin}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.Names(); len(got) != 1 || got[0] != "test" {
		t.Errorf("Names = %v", got)
	}
	tools, err := c.ListTools(ctx, "test")
	if err != nil || len(tools) != 5 {
		t.Fatalf("ListTools = %+v, %v", tools, err)
	}
	r, err := c.CallTool(ctx, "test", "echo", map[string]string{"text": "hi"})
	if err != nil || text(t, r) != "hi" || r.IsError {
		t.Errorf("echo: %+v %v", r, err)
	}
	if r, _ := c.CallTool(ctx, "test", "fail", nil); !r.IsError || text(t, r) != "no such thing" {
		t.Errorf("a tool error: %+v", r)
	}
	// One process, reused.
	c.CallTool(ctx, "test", "count", nil)
	if r, _ := c.CallTool(ctx, "test", "count", nil); text(t, r) != "2" {
		t.Errorf("the connection was not reused: %+v", r)
	}
	// The server crashes mid-call: an isError result, then a new process.
	r, err = c.CallTool(ctx, "test", "crash", nil)
	if err != nil || !r.IsError || !strings.Contains(text(t, r), "MCP server test failed during crash") {
		t.Fatalf("crash: %+v %v", r, err)
	}
	if r, err := c.CallTool(ctx, "test", "count", nil); err != nil || text(t, r) != "1" {
		t.Errorf("after the crash: %+v %v (want a fresh process counting from 1)", r, err)
	}
	if _, err := c.CallTool(ctx, "nope", "echo", nil); err == nil || !strings.Contains(err.Error(), `no server named "nope"`) {
		t.Errorf("unknown server: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := c.CallTool(ctx, "test", "echo", nil); err == nil {
		t.Error("a closed host still calls")
	}
}

func TestHTTPServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := exec.Command(serverBin, "-http", addr)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the HTTP MCP server did not start")
		}
	}
	c, _ := mcpconn.New(map[string]agentconfig.MCPServer{"remote": {URL: "http://" + addr, BearerToken: "s3cret"}}, nil)
	defer c.Close()
	r, err := c.CallTool(context.Background(), "remote", "whoami", nil)
	if err != nil || text(t, r) != "Bearer s3cret" {
		t.Errorf("whoami: %+v %v", r, err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, s := range []agentconfig.MCPServer{{}, {Command: "x", URL: "http://y"}} {
		if _, err := mcpconn.New(map[string]agentconfig.MCPServer{"bad": s}, nil); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
}

package harness_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	acp "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/internal/harnesstest"
)

// startGemini starts Gemini CLI against a new fake, with a session open.
func startGemini(t *testing.T, rec *recorder, answer func(acp.RequestPermissionRequest) acp.RequestPermissionResponse, mcps ...harness.MCPServer) (*fakemodel.Server, *harness.Process, string) {
	t.Helper()
	fake := fakemodel.New()
	t.Cleanup(fake.Close)
	ws := t.TempDir()
	p, err := harness.Start(context.Background(), harness.Options{Spec: harnesstest.Gemini(t, fake), Workspace: ws, Home: t.TempDir(),
		MCP: mcps, Handler: rec.handler(answer)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if _, err := p.NewSession(context.Background()); err != nil {
		t.Fatal(err, p.Stderr())
	}
	return fake, p, ws
}

// logAsked logs the permission requests as Gemini sent them.
func logAsked(t *testing.T, rec *recorder) {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, q := range rec.asked {
		b, _ := json.Marshal(q)
		t.Logf("session/request_permission %s", b)
	}
}

// lastFunctionResponse is the functionResponse of the fake's last recorded step.
func lastFunctionResponse(t *testing.T, fake *fakemodel.Server) map[string]any {
	t.Helper()
	reqs := fake.Requests()
	var body struct {
		Contents []struct {
			Parts []struct {
				FunctionResponse map[string]any `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(reqs[len(reqs)-1], &body); err != nil {
		t.Fatal(err)
	}
	for i := len(body.Contents) - 1; i >= 0; i-- {
		for _, p := range body.Contents[i].Parts {
			if p.FunctionResponse != nil {
				return p.FunctionResponse
			}
		}
	}
	t.Fatalf("no functionResponse in the last request: %.500s", reqs[len(reqs)-1])
	return nil
}

const geminiShell = `{"command":"echo made > made.txt","description":"make a file"}`

// Gemini CLI asks before it runs a shell command, runs it in the
// workspace once allowed, and goes on with the model's next reply.
func TestGeminiShellAllowed(t *testing.T) {
	var rec recorder
	fake, p, ws := startGemini(t, &rec, harness.AllowOnce)
	fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{{Name: "run_shell_command", Input: geminiShell}}},
		fakemodel.Reply{Text: []string{"made it"}})
	r, err := p.Prompt(context.Background(), "make a file")
	if err != nil {
		t.Fatal(err, p.Stderr())
	}
	logAsked(t, &rec)
	if b, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || strings.TrimSpace(string(b)) != "made" {
		t.Fatalf("made.txt: %q, %v", b, err)
	}
	if r.StopReason != acp.StopReasonEndTurn || !strings.HasSuffix(rec.text(), "made it") {
		t.Errorf("stop %s, text %q", r.StopReason, rec.text())
	}
	if len(rec.asked) != 1 || rec.asked[0].ToolCall.Kind == nil || *rec.asked[0].ToolCall.Kind != acp.ToolKindExecute {
		t.Errorf("asked %+v, want one execute request", rec.asked)
	}
	if fr := lastFunctionResponse(t, fake); fr["name"] != "run_shell_command" {
		t.Errorf("function response %v", fr)
	}
}

// A rejected shell command does not run, and the model is told.
func TestGeminiShellRejected(t *testing.T) {
	var rec recorder
	fake, p, ws := startGemini(t, &rec, harness.Reject)
	fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{{Name: "run_shell_command", Input: geminiShell}}},
		fakemodel.Reply{Text: []string{"ok, not made"}})
	r, err := p.Prompt(context.Background(), "make a file")
	if err != nil {
		t.Fatal(err, p.Stderr())
	}
	logAsked(t, &rec)
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); !os.IsNotExist(err) {
		t.Errorf("made.txt exists after a rejection (%v)", err)
	}
	fr := lastFunctionResponse(t, fake)
	b, _ := json.Marshal(fr)
	t.Logf("function response %s; stop %s", b, r.StopReason)
	resp, _ := fr["response"].(map[string]any)
	if resp["error"] == nil {
		t.Errorf("function response %s, want an error", b)
	}
}

// Gemini CLI calls a tool of an MCP server handed to its session, after
// asking.
func TestGeminiMCPTool(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	server := mcp.NewServer(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "word_count", Description: "Count the words of a text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in in) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			seen = append(seen, in.Text)
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "words: 3"}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	// After the harness is gone (cleanups run last first): its SSE stream
	// would hold Close otherwise.
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	var rec recorder
	fake, p, _ := startGemini(t, &rec, harness.AllowOnce, harness.MCPServer{Name: "agent", URL: srv.URL})
	fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{{Name: "mcp_agent_word_count", Input: `{"text":"one two three"}`}}},
		fakemodel.Reply{Text: []string{"three words"}})
	if _, err := p.Prompt(context.Background(), "count the words"); err != nil {
		t.Fatal(err, p.Stderr())
	}
	logAsked(t, &rec)
	first := string(fake.Requests()[0])
	if !strings.Contains(first, `"name":"mcp_agent_word_count"`) {
		t.Errorf("the step's functionDeclarations lack mcp_agent_word_count")
	}
	rec.mu.Lock()
	for _, u := range rec.updates {
		if u.ToolCall != nil {
			t.Logf("tool_call id %s title %q kind %s", u.ToolCall.ToolCallId, u.ToolCall.Title, u.ToolCall.Kind)
		}
		if u.ToolCallUpdate != nil {
			b, _ := json.Marshal(u.ToolCallUpdate)
			t.Logf("tool_call_update %.400s", b)
		}
	}
	rec.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "one two three" {
		t.Errorf("the MCP server saw %q", seen)
	}
}

// A new process continues a session of an earlier one (session/load).
func TestGeminiLoadSession(t *testing.T) {
	fake := fakemodel.New()
	t.Cleanup(fake.Close)
	spec := harnesstest.Gemini(t, fake)
	ws, home := t.TempDir(), t.TempDir()
	var rec recorder
	ctx := context.Background()
	p, err := harness.Start(ctx, harness.Options{Spec: spec, Workspace: ws, Home: home, Handler: rec.handler(harness.AllowOnce)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	id, err := p.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fake.Push(fakemodel.Reply{Text: []string{"first answer"}})
	if _, err := p.Prompt(ctx, "remember the first prompt"); err != nil {
		t.Fatal(err, p.Stderr())
	}
	p.Close()
	p2, err := harness.Start(ctx, harness.Options{Spec: spec, Workspace: ws, Home: home, Handler: rec.handler(harness.AllowOnce)})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if err := p2.LoadSession(ctx, id); err != nil {
		if strings.Contains(err.Error(), "No previous sessions found for this project") {
			// Gemini CLI 0.61.0 does not find the session its earlier
			// process wrote (the chat file exists): a known limitation.
			t.Skip("gemini cannot load a session across a restart:", err)
		}
		t.Fatal(err, p2.Stderr())
	}
	fake.Push(fakemodel.Reply{Text: []string{"again"}})
	if _, err := p2.Prompt(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	reqs := fake.Requests()
	if last := string(reqs[len(reqs)-1]); !strings.Contains(last, "remember the first prompt") {
		t.Errorf("the continued session's request lacks the history: %.300s", last)
	}
}

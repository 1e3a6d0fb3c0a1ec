package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The real agent-sdk binary, built once, and an agent made by its init.
var (
	cliBin   string
	repoRoot string
	shared   string // an agent directory the read-only tests share
)

func TestMain(m *testing.M) {
	os.Exit(func() int {
		tmp, err := os.MkdirTemp("", "agent-sdk-e2e")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(tmp)
		repoRoot, _ = filepath.Abs("../..")
		cliBin = filepath.Join(tmp, "agent-sdk")
		if out, err := exec.Command("go", "build", "-o", cliBin, ".").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building agent-sdk: %v\n%s", err, out)
			return 1
		}
		shared = filepath.Join(tmp, "myagent")
		if err := newAgent(shared); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}())
}

// Extra tools the tests add to an agent made by init.
var extraTools = map[string]string{
	"fail.go": `package tools

import (
	"context"
	"errors"

	"github.com/agentsdk/agentsdk/tool"
)

var _ = tool.Define(tool.Config{Description: "Always fails."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
	return nil, errors.New("the PR does not exist")
})
`,
	"slow.go": `package tools

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

type SlowInput struct {
	Ms int ` + "`" + `json:"ms"` + "`" + `
}

var _ = tool.Define(tool.Config{Description: "Sleeps, then answers."}, func(ctx context.Context, call *tool.Call, in SlowInput) (any, error) {
	os.WriteFile(filepath.Join(call.StateRoot, "slow-started"), []byte(call.ID), 0o644)
	select {
	case <-time.After(time.Duration(in.Ms) * time.Millisecond):
		return map[string]any{"slept": in.Ms}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
})
`,
	"echo.go": `package tools

import "github.com/agentsdk/agentsdk/tool"

type EchoInput struct {
	Message string ` + "`" + `json:"message"` + "`" + `
}

var _ = tool.DefineScript(tool.Config{
	Description: "Echo a message from the agent workspace.",
	InputSchema: tool.SchemaOf[EchoInput](),
}, "#!/bin/sh\ncat\n")
`,
}

// newAgent runs agent-sdk init in dir against this checkout and adds the
// extra tools.
func newAgent(dir string) error {
	cmd := exec.Command(cliBin, "init", dir, "--sdk", repoRoot)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("agent-sdk init: %v\n%s", err, out)
	}
	for name, content := range extraTools {
		if err := os.WriteFile(filepath.Join(dir, "agent", "tools", name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs agent-sdk in dir with args and stdin.
func run(t *testing.T, dir, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(cliBin, args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("running agent-sdk %v: %v", args, err)
	}
	return result{stdout.String(), stderr.String(), code}
}

func TestInitScaffold(t *testing.T) {
	for _, f := range []string{"go.mod", "go.sum", "agent/tools/hello.go", "agent/lib/lib.go", "README.md", ".gitignore"} {
		if _, err := os.Stat(filepath.Join(shared, f)); err != nil {
			t.Errorf("init did not create %s: %v", f, err)
		}
	}
	gomod, _ := os.ReadFile(filepath.Join(shared, "go.mod"))
	if !strings.Contains(string(gomod), "replace github.com/agentsdk/agentsdk => "+repoRoot) {
		t.Errorf("go.mod lacks the replace:\n%s", gomod)
	}
	// A CLI built from source needs no --sdk where go.mod has the SDK.
	if r := run(t, shared, "", "init", "."); r.code != 0 || !strings.Contains(r.stderr, "nothing was missing") {
		t.Errorf("init over an agent: %+v", r)
	}
}

func TestCallEphemeral(t *testing.T) {
	input := filepath.Join(t.TempDir(), "in.json")
	os.WriteFile(input, []byte(`{"name":"File"}`), 0o644)
	tests := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout string // a substring
		stderr string
	}{
		{"ok", "", []string{"call", "hello", "--dir", shared, "--input", `{"name":"Ada"}`}, 0, `"result": "Hello, Ada!"`, ""},
		{"input from a file", "", []string{"call", "hello", "--dir", shared, "--input", "@" + input}, 0, `"result": "Hello, File!"`, ""},
		{"input from stdin", `{"name":"Stdin"}`, []string{"call", "hello", "--dir", shared, "--input", "-"}, 0, `"result": "Hello, Stdin!"`, ""},
		{"tool error", "", []string{"call", "fail", "--dir", shared}, 1, `"isError": true`, ""},
		{"unknown tool", "", []string{"call", "helo", "--dir", shared}, 2, `"code": "unknown_tool"`, "available: echo, fail, hello, slow"},
		{"invalid input", "", []string{"call", "hello", "--dir", shared, "--input", `{"nmae":"x"}`}, 2, `"path": "input.nmae"`, "did you mean name?"},
		{"agent tool", "", []string{"call", "echo", "--dir", shared, "--input", `{"message":"x"}`}, 2, `"code": "agent_tool"`, ""},
		{"not JSON", "", []string{"call", "hello", "--dir", shared, "--input", `{name}`}, 2, "", "not valid JSON"},
		{"missing file", "", []string{"call", "hello", "--dir", shared, "--input", "@/nonexistent.json"}, 2, "", "no such file"},
		{"no tool name", "", []string{"call", "--dir", shared}, 2, "", "accepts 1 arg"},
		{"not an agent", "", []string{"call", "hello", "--dir", t.TempDir()}, 2, "", "no agent/tools directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, repoRoot, tt.stdin, tt.args...)
			if r.code != tt.code || !strings.Contains(r.stdout, tt.stdout) || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, stdout with %q, stderr with %q", r.code, r.stdout, r.stderr, tt.code, tt.stdout, tt.stderr)
			}
		})
	}
	t.Run("outcome shape", func(t *testing.T) {
		r := run(t, repoRoot, "", "call", "hello", "--dir", shared, "--input", `{"name":"Ada"}`)
		var out map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
		}
		if len(out) != 6 || out["ok"] != true || out["toolName"] != "hello" || out["isError"] != false || !strings.HasPrefix(out["callId"].(string), "tool_hello_") {
			t.Errorf("outcome %v", out)
		}
		entries, _ := os.ReadDir(filepath.Join(shared, ".agent-sdk", "tool-calls"))
		if len(entries) != 0 {
			t.Errorf("scratch workspaces left behind: %d", len(entries))
		}
	})
}

func TestTools(t *testing.T) {
	r := run(t, repoRoot, "", "tools", "--dir", shared, "--json")
	var list struct {
		Tools []struct {
			Name, Execution, Approval string
			InputSchema               json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || r.code != 0 {
		t.Fatalf("tools --json: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name+"/"+tl.Execution)
	}
	if strings.Join(names, ",") != "echo/agent,fail/server,hello/server,slow/server" {
		t.Errorf("tools: %v", names)
	}
	human := run(t, repoRoot, "", "tools", "--dir", shared)
	if !strings.Contains(human.stdout, "hello  (server tool, approval: never)") || !strings.Contains(human.stdout, "Greet someone by name.") {
		t.Errorf("tools:\n%s", human.stdout)
	}
}

// agent-sdk openapi prints the document the host serves: the agent's own
// server tools each under their call path, agent tools not.
func TestOpenAPI(t *testing.T) {
	r := run(t, repoRoot, "", "openapi", "--dir", shared)
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 {
		t.Fatalf("openapi: exit %d, %v\n%.500s%s", r.code, err, r.stdout, r.stderr)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") || doc.Paths["/myagent/v1/tools/hello"]["post"] == nil ||
		doc.Paths["/myagent/v1/tools/echo"] != nil || doc.Paths["/myagent/v1/session/{id}/events"]["get"] == nil {
		t.Errorf("openapi %s, paths %v", doc.OpenAPI, doc.Paths)
	}
}

func TestHelp(t *testing.T) {
	for _, c := range []string{"init", "serve", "call", "tools", "build", "version", "openapi", "keys"} {
		r := run(t, repoRoot, "", c, "--help")
		if r.code != 0 || !strings.Contains(r.stdout, "Usage:") || !strings.Contains(r.stdout, "Examples:") {
			t.Errorf("%s --help: exit %d\n%s", c, r.code, r.stdout)
		}
	}
	if r := run(t, repoRoot, "", "version"); r.code != 0 || !strings.HasPrefix(r.stdout, "agent-sdk ") {
		t.Errorf("version: %+v", r)
	}
}

// server is a running agent-sdk serve.
type server struct {
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:port/<slug>/v1
	token  string
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan struct{}
}

var servingLine = regexp.MustCompile(`serving (\S+) at (http://\S+/v1)`)

func startServer(t *testing.T, dir string, args ...string) *server {
	t.Helper()
	return startServerEnv(t, dir, nil, args...)
}

// startServerEnv starts agent-sdk serve with extra environment variables.
func startServerEnv(t *testing.T, dir string, env []string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(cliBin, append([]string{"serve", "--dir", dir, "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			s.mu.Lock()
			s.stderr.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select { // the first; serve --watch says it again each swap
				case found <- m[2]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	select {
	case s.base = <-found:
	case <-s.done:
		t.Fatalf("the server exited:\n%s", s.logs())
	case <-time.After(5 * time.Minute):
		t.Fatalf("the server did not start:\n%s", s.logs())
	}
	tok, err := os.ReadFile(filepath.Join(dir, ".agent-sdk", "token"))
	if err != nil {
		t.Fatalf("no token stored: %v", err)
	}
	s.token = strings.TrimSpace(string(tok))
	return s
}

func (s *server) logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// post sends a request and returns the status and the decoded body.
func (s *server) request(t *testing.T, method, path, token, body string) (int, map[string]any, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%v\nthe server's log:\n%s", err, s.logs())
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s %s: not JSON: %s", method, path, data)
	}
	return resp.StatusCode, v, resp.Header
}

func TestServe(t *testing.T) {
	s := startServer(t, shared, "--max-body-bytes", "4096")
	if !strings.Contains(s.logs(), "generated an API token") && !strings.Contains(s.logs(), "serving myagent") {
		t.Errorf("start-up output:\n%s", s.logs())
	}
	if fi, _ := os.Stat(filepath.Join(shared, ".agent-sdk", "token")); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v", fi.Mode().Perm())
	}

	status, v, _ := s.request(t, "POST", "/tools/hello", s.token, `{"input":{"name":"HTTP"}}`)
	if status != 200 || len(v) != 6 || v["ok"] != true || v["result"] != "Hello, HTTP!" || v["isError"] != false || v["toolName"] != "hello" {
		t.Errorf("call: %d %v", status, v)
	}
	if _, ok := v["durationMs"].(float64); !ok {
		t.Errorf("durationMs: %v", v["durationMs"])
	}

	for _, tt := range []struct {
		name, path, token, body string
		status                  int
		code                    string
	}{
		{"no token", "/tools/hello", "", `{"input":{"name":"x"}}`, 401, "unauthorized"},
		{"bad token", "/tools/hello", s.token + "x", `{"input":{"name":"x"}}`, 401, "unauthorized"},
		{"unknown", "/tools/nope", s.token, `{"input":{}}`, 404, "unknown_tool"},
		{"agent tool", "/tools/echo", s.token, `{"input":{"message":"x"}}`, 400, "agent_tool"},
		{"invalid", "/tools/hello", s.token, `{"input":{"name":3,"x":1}}`, 400, "invalid_input"},
		{"malformed", "/tools/hello", s.token, `{"input":{`, 400, "malformed_json"},
		{"too large", "/tools/hello", s.token, `{"input":{"name":"` + strings.Repeat("x", 5000) + `"}}`, 413, "body_too_large"},
	} {
		status, v, _ := s.request(t, "POST", tt.path, tt.token, tt.body)
		e, _ := v["error"].(map[string]any)
		if status != tt.status || v["ok"] != false || e["code"] != tt.code {
			t.Errorf("%s: %d %v", tt.name, status, v)
		}
		switch tt.code {
		case "unknown_tool":
			if a, _ := json.Marshal(e["available"]); string(a) != `["echo","fail","hello","slow"]` {
				t.Errorf("available: %s", a)
			}
		case "invalid_input":
			if vs, _ := json.Marshal(e["violations"]); !strings.Contains(string(vs), `"path":"input.name"`) || !strings.Contains(string(vs), `"path":"input.x"`) {
				t.Errorf("violations: %s", vs)
			}
		}
	}
	if resp, err := http.Get(strings.TrimSuffix(s.base, "/myagent/v1") + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("healthz: %v %v", resp, err)
	}

	// The CLI against the running host finds the token itself when run
	// from the agent's directory.
	r := run(t, shared, "", "call", "hello", "--url", strings.TrimSuffix(s.base, "/v1"), "--input", `{"name":"URL"}`)
	if r.code != 0 || !strings.Contains(r.stdout, `"result": "Hello, URL!"`) {
		t.Errorf("call --url: %+v", r)
	}
	r = run(t, shared, "", "call", "fail", "--url", strings.TrimSuffix(s.base, "/v1"))
	if r.code != 1 {
		t.Errorf("call --url of a failing tool: %+v", r)
	}
	r = run(t, shared, "", "call", "nope", "--url", strings.TrimSuffix(s.base, "/v1"))
	if r.code != 2 || !strings.Contains(r.stderr, "available: echo, fail, hello, slow") {
		t.Errorf("call --url of an unknown tool: %+v", r)
	}
	r = run(t, t.TempDir(), "", "call", "hello", "--url", strings.TrimSuffix(s.base, "/v1"))
	if r.code != 2 || !strings.Contains(r.stderr, "HTTP 401") {
		t.Errorf("call --url without a token: %+v", r)
	}
	r = run(t, shared, "", "tools", "--url", strings.TrimSuffix(s.base, "/v1"))
	if r.code != 0 || !strings.Contains(r.stdout, "slow  (server tool, approval: never)") {
		t.Errorf("tools --url: %+v", r)
	}

	// Request logs: method, path, status and call id, never the input.
	logs := s.logs()
	if !regexp.MustCompile(`method=POST path=/myagent/v1/tools/hello status=200 duration=\S+ call_id=tool_hello_`).MatchString(logs) || strings.Contains(logs, "HTTP!") {
		t.Errorf("request logs:\n%s", logs)
	}
}

func TestGracefulShutdown(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "drain")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir)
	answer := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest("POST", s.base+"/tools/slow", strings.NewReader(`{"input":{"ms":1500}}`))
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answer <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answer <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	started := filepath.Join(dir, ".agent-sdk", "slow-started")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow call never started")
		}
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	got := <-answer
	if !strings.HasPrefix(got, "200 ") || !strings.Contains(got, `"slept":1500`) {
		t.Errorf("the in-flight call was not finished: %s", got)
	}
	err := s.cmd.Wait()
	<-s.done
	if err != nil {
		t.Errorf("serve exited with %v after SIGTERM:\n%s", err, s.logs())
	}
	if !strings.Contains(s.logs(), "draining in-flight requests") {
		t.Errorf("logs:\n%s", s.logs())
	}
}

func TestBuildCacheAndChecks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	call := func() result { return run(t, dir, "", "call", "hello", "--dir", ".", "--input", `{"name":"C"}`) }
	first := call()
	if first.code != 0 || !strings.Contains(first.stderr, "built the agent") {
		t.Fatalf("first call: %+v", first)
	}
	second := call()
	if second.code != 0 || strings.Contains(second.stderr, "building") {
		t.Errorf("the second call rebuilt: %+v", second)
	}
	hello := filepath.Join(dir, "agent", "tools", "hello.go")
	src, _ := os.ReadFile(hello)
	os.WriteFile(hello, bytes.Replace(src, []byte("Hello, %s!"), []byte("Hi, %s!"), 1), 0o644)
	third := call()
	if third.code != 0 || !strings.Contains(third.stderr, "built the agent") || !strings.Contains(third.stdout, "Hi, C!") {
		t.Errorf("editing a tool did not rebuild: %+v", third)
	}
	bins, _ := filepath.Glob(filepath.Join(dir, ".agent-sdk", "build", "agent-*"))
	if len(bins) != 1 {
		t.Errorf("cached binaries: %v", bins)
	}

	// Two tools in one file: refused before building, naming the file.
	two := filepath.Join(dir, "agent", "tools", "two.go")
	os.WriteFile(two, []byte(`package tools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

var _ = tool.Define(tool.Config{Description: "a"}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return nil, nil })

var _ = tool.Define(tool.Config{Description: "b"}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return nil, nil })
`), 0o644)
	r := call()
	if r.code != 3 || !strings.Contains(r.stderr, "agent/tools/two.go: defines 2 tools, at lines 9, 11") {
		t.Errorf("two tools in one file: %+v", r)
	}
	os.Remove(two)

	// A compile error is shown with its file and line.
	os.WriteFile(filepath.Join(dir, "agent", "tools", "broken.go"), []byte("package tools\n\nimport \"github.com/agentsdk/agentsdk/tool\"\n\nvar _ = tool.Define(tool.Config{Description: \"b\"}, undefinedHandler)\n"), 0o644)
	r = call()
	if r.code != 3 || !regexp.MustCompile(`agent/tools/broken.go:5:\d+: undefined: undefinedHandler`).MatchString(r.stderr) {
		t.Errorf("compile error: %+v", r)
	}
}

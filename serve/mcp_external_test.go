package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/npmtest"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/tool"
)

// Tests in which MCP clients nobody here wrote talk to the endpoint: the
// MCP Inspector's CLI, and the MCP conformance suite. Both are npm
// packages, installed (once per machine) by package internal/npmtest; see
// the research notes on the endpoint, section "External clients".

// The pinned versions. inspector-cli 1.0.3 is the last v1 (v2 needs Node
// 22.19); conformance 0.1.16 is the newest release.
const (
	inspectorPackage   = "@modelcontextprotocol/inspector-cli"
	inspectorVersion   = "1.0.3"
	conformancePackage = "@modelcontextprotocol/conformance"
	conformanceVersion = "0.1.16"
)

// externalTimeout bounds each run of an outside program.
const externalTimeout = 30 * time.Second

// The conformance scenarios that apply to a server with tools only, no
// resources, prompts, logging, sampling or elicitation.
var conformanceScenarios = []string{
	"server-initialize",
	"ping",
	"tools-list",
	"tools-call-simple-text",
	"tools-call-error",
	"dns-rebinding-protection",
}

// setupExternalMCP serves an agent with the tools the outside clients
// call: greet, and the two the conformance scenarios name; and an agent
// tool, which the endpoint must not list.
func setupExternalMCP(t *testing.T) *mcpBundle {
	t.Helper()
	greet, err := tool.New("greet", tool.Config{Description: "Greet someone by name."},
		func(ctx context.Context, call *tool.Call, in greetInput) (any, error) {
			return map[string]any{"greeting": strings.Repeat("hello "+in.Name+"! ", max(in.Times, 1))}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	simple, err := tool.New("test_simple_text", tool.Config{Description: "Return simple text (conformance scenario tools-call-simple-text)."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			return "This is a simple text response for testing.", nil
		})
	if err != nil {
		t.Fatal(err)
	}
	failing, err := tool.New("test_error_handling", tool.Config{Description: "Always fail (conformance scenario tools-call-error)."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			return nil, errors.New("This tool intentionally returns an error for testing")
		})
	if err != nil {
		t.Fatal(err)
	}
	script, err := tool.NewScript("echo", tool.Config{Description: "Echo (an agent tool)."}, "#!/bin/sh\ncat\n")
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(greet, simple, failing, script)
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
	srv, err := serve.New(h, &serve.Options{Slug: "agent", Token: testToken, ApprovalWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); h.Close() })
	return &mcpBundle{host: h, srv: srv, base: ts.URL, url: ts.URL + "/agent/mcp"}
}

// runNode runs node with args in dir, bounded by externalTimeout, and
// returns its stdout and stderr.
func runNode(t *testing.T, dir string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), externalTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npmtest.Node(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	// A child it spawned may hold the pipes open after it is killed.
	cmd.WaitDelay = 2 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ctx.Err() != nil {
		err = errors.Join(err, ctx.Err())
	}
	return ansi.ReplaceAllString(out.String(), ""), ansi.ReplaceAllString(errOut.String(), ""), err
}

// ansi matches the colour codes the conformance suite prints whatever
// NO_COLOR says.
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// The MCP Inspector's CLI lists the server tools (and not the agent tool)
// and calls them with the bearer token in --header: a result, and a
// tool's error as an isError result; without the token, or with a wrong
// one, it cannot connect and says why.
func TestMCPInspectorCLI(t *testing.T) {
	pkg := npmtest.Install(t, inspectorPackage, inspectorVersion)
	b := setupExternalMCP(t)

	// Its bug: it reads its own package.json as "../package.json" from
	// the working directory (inspector issues #1334 and #1503), so it
	// runs in a directory whose parent is an npm project.
	project := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "package.json"), []byte(`{"private": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(project, "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	inspect := func(t *testing.T, token string, args ...string) (string, string, error) {
		t.Helper()
		args = append([]string{pkg.Bin("mcp-inspector-cli"), "--cli", b.url, "--transport", "http"}, args...)
		if token != "" {
			args = append(args, "--header", "Authorization: Bearer "+token)
		}
		return runNode(t, dir, args...)
	}
	type callResult struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	call := func(t *testing.T, args ...string) callResult {
		t.Helper()
		stdout, stderr, err := inspect(t, testToken, append([]string{"--method", "tools/call"}, args...)...)
		var res callResult
		if err != nil || json.Unmarshal([]byte(stdout), &res) != nil || len(res.Content) != 1 || res.Content[0].Type != "text" {
			t.Fatalf("tools/call %s: %v\nstdout: %s\nstderr: %s", args, err, stdout, stderr)
		}
		return res
	}

	t.Run("list", func(t *testing.T) {
		t.Parallel()
		stdout, stderr, err := inspect(t, testToken, "--method", "tools/list")
		var list struct {
			Tools []struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		}
		if err != nil || json.Unmarshal([]byte(stdout), &list) != nil {
			t.Fatalf("tools/list: %v\nstdout: %s\nstderr: %s", err, stdout, stderr)
		}
		var names []string
		for _, lt := range list.Tools {
			names = append(names, lt.Name)
			if lt.Description == "" || len(lt.InputSchema) == 0 {
				t.Errorf("tool %s listed without a description or input schema: %+v", lt.Name, lt)
			}
		}
		slices.Sort(names)
		if want := []string{"greet", "test_error_handling", "test_simple_text"}; !slices.Equal(names, want) {
			t.Errorf("listed %v, want the server tools %v", names, want)
		}
	})
	t.Run("call", func(t *testing.T) {
		t.Parallel()
		res := call(t, "--tool-name", "greet", "--tool-arg", "name=Ada")
		if res.IsError || res.Content[0].Text != `{"greeting":"hello Ada! "}` {
			t.Errorf("greet name=Ada: %+v", res)
		}
	})
	t.Run("call error", func(t *testing.T) {
		t.Parallel()
		res := call(t, "--tool-name", "test_error_handling")
		if !res.IsError || !strings.Contains(res.Content[0].Text, "intentionally returns an error") {
			t.Errorf("test_error_handling: %+v; want an isError result with the tool's error", res)
		}
	})
	for name, token := range map[string]string{"no token": "", "wrong token": "wrong"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, err := inspect(t, token, "--method", "tools/list")
			var exit *exec.ExitError
			if !errors.As(err, &exit) || strings.Contains(stdout, "greet") {
				t.Fatalf("tools/list with token %q: %v; want a failure\nstdout: %s\nstderr: %s", token, err, stdout, stderr)
			}
			if !strings.Contains(stderr, "unauthorized") || !strings.Contains(stderr, "bearer token") {
				t.Errorf("with token %q it failed, but not saying the token is missing or wrong:\nstdout: %s\nstderr: %s", token, stdout, stderr)
			}
		})
	}
}

// conformanceShim makes @modelcontextprotocol/conformance load on Node 20:
// it imports fs.globSync by name (used by its tier-check command only),
// which Node 22 added. Loaded with node --import, shim.mjs registers a
// resolve hook that hands ES-module imports of fs a module that is fs plus
// a small globSync. On a Node that has fs.globSync it does nothing.
var conformanceShim = map[string]string{
	"shim.mjs": `import fs from "node:fs";
import { register } from "node:module";

if (typeof fs.globSync !== "function") {
  register("./hooks.mjs", import.meta.url);
}
`,
	"hooks.mjs": `const fsWithGlob = new URL("./fs-glob.mjs", import.meta.url).href;

export async function resolve(specifier, context, next) {
  if ((specifier === "fs" || specifier === "node:fs") && context.parentURL !== fsWithGlob) {
    return { url: fsWithGlob, shortCircuit: true };
  }
  return next(specifier, context);
}
`,
	"fs-glob.mjs": `import fs from "node:fs";
import path from "node:path";

export * from "node:fs";
export default fs;

// globSync supports "*", "?" and "**" path segments, and options.cwd.
export function globSync(pattern, options = {}) {
  const cwd = String(options.cwd ?? process.cwd());
  const source = String(pattern)
    .split("/")
    .map((part) =>
      part === "**"
        ? "(?:[^/]+/)*"
        : part.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*").replace(/\?/g, "[^/]") + "/",
    )
    .join("")
    .replace(/\/$/, "");
  const match = new RegExp("^" + source + "$");
  return fs
    .readdirSync(cwd, { recursive: true })
    .map((p) => String(p).split(path.sep).join("/"))
    .filter((p) => match.test(p));
}
`,
}

// conformanceCheck is one check in a scenario's checks.json.
type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO
	Description  string `json:"description"`
	ErrorMessage string `json:"errorMessage"`
}

// The MCP conformance suite's scenarios for a tools-only server pass. The
// suite cannot send a token, so it talks to a reverse proxy on loopback
// that adds one and forwards everything else as it came, the Host and
// Origin headers too (the DNS-rebinding scenario sends its own).
func TestMCPConformance(t *testing.T) {
	pkg := npmtest.Install(t, conformancePackage, conformanceVersion)
	b := setupExternalMCP(t)

	target, err := url.Parse(b.base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host // SetURL sets the target's
		r.Out.Header.Set("Authorization", "Bearer "+testToken)
	}})
	t.Cleanup(proxy.Close)
	endpoint := proxy.URL + "/agent/mcp" // http://127.0.0.1:port: a loopback URL, as dns-rebinding-protection needs

	dir := t.TempDir()
	for name, src := range conformanceShim {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	suite := filepath.Join(pkg.Dir(), "dist", "index.js")
	for _, scenario := range conformanceScenarios {
		t.Run(scenario, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			stdout, stderr, err := runNode(t, dir, "--import", "./shim.mjs", suite,
				"server", "--url", endpoint, "--scenario", scenario, "--output-dir", out)
			files, _ := filepath.Glob(filepath.Join(out, "server-"+scenario+"-*", "checks.json"))
			if len(files) != 1 {
				t.Fatalf("conformance %s: %v, and no checks.json\nstdout: %s\nstderr: %s", scenario, err, stdout, stderr)
			}
			raw, readErr := os.ReadFile(files[0])
			var checks []conformanceCheck
			if readErr != nil || json.Unmarshal(raw, &checks) != nil {
				t.Fatalf("reading %s: %v\n%s", files[0], readErr, raw)
			}
			passed := 0
			for _, c := range checks {
				switch c.Status {
				case "SUCCESS":
					passed++
				case "FAILURE":
					t.Errorf("check %s failed: %s: %s", c.ID, c.Description, c.ErrorMessage)
				case "WARNING":
					t.Logf("check %s warns: %s: %s", c.ID, c.Description, c.ErrorMessage)
				}
			}
			if passed == 0 || err != nil {
				t.Errorf("conformance %s: %d checks passed, exit %v\nstdout: %s\nstderr: %s", scenario, passed, err, stdout, stderr)
			}
		})
	}
}

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentsdk/agentsdk/internal/build"
	"github.com/agentsdk/agentsdk/internal/command"
)

func newInit() *cobra.Command {
	var (
		sdk    string
		module string
	)
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Scaffold an agent, or add what an agent directory is missing",
		Long: `init makes DIR (default: the current directory) an agent: a go.mod that
requires this SDK, agent/agent.yaml with every key and its default (commented
out), a first tool in agent/tools/hello.go with its test
(agent/tools/hello_test.go, run by go test ./... through package tooltest),
agent/lib/ for shared code, a README and a .gitignore for the state directory
(.agent-sdk/), then runs go mod tidy.

In a directory that has some of these already, init adds only what is
missing and overwrites nothing: it says what it added and what it kept. An
existing go.mod gets the SDK's require (and replace, with --sdk) if it lacks
them; agent/tools/ that has tools gets no sample; an existing .gitignore gets
the .agent-sdk/ line if it lacks it.

--sdk points the agent at a local checkout of the SDK with a replace directive
(needed when this agent-sdk was built from source rather than installed at a
released version).`,
		Example: `  agent-sdk init myagent --sdk ~/src/agentsdk
  agent-sdk init . --module example.com/myagent
  agent-sdk init . --sdk ../agentsdk   # an agent/ without go.mod: adds go.mod, keeps agent/`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return scaffold(dir, module, sdk, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&sdk, "sdk", "", "path to a local checkout of the SDK (writes a replace directive)")
	cmd.Flags().StringVar(&module, "module", "", "module path of a new go.mod (default: the directory's name)")
	return cmd
}

var moduleNameChars = regexp.MustCompile(`[^A-Za-z0-9._~/-]+`)

// sdkGoVersion is the go line of the SDK's go.mod, which init writes into
// a new agent's go.mod (without --sdk; with it, the checkout's own line).
// init_test.go checks it against the SDK's go.mod.
const sdkGoVersion = "1.26.8"

// goLine finds a go.mod's go directive.
var goLine = regexp.MustCompile(`(?m)^go\s+(\S+)\s*$`)

// sdkSource is how an agent's go.mod reaches the SDK: its version and,
// for a checkout, the replace.
type sdkSource struct {
	version   string // of the require
	replace   string // the checkout's absolute path; "" for a released version
	goVersion string // the go line a new go.mod gets
}

// findSDK resolves --sdk, or this CLI's released version.
func findSDK(sdk string) (sdkSource, error) {
	if sdk == "" {
		v := sdkVersionOnly()
		if v == "" {
			return sdkSource{}, exitWith(command.ExitRefused, "this agent-sdk was built from source, so it has no released SDK version to require: pass --sdk PATH_TO_YOUR_CHECKOUT")
		}
		return sdkSource{version: v, goVersion: sdkGoVersion}, nil
	}
	abs, err := filepath.Abs(sdk)
	if err != nil {
		return sdkSource{}, err
	}
	if _, err := os.Stat(filepath.Join(abs, "tool", "tool.go")); err != nil {
		return sdkSource{}, exitWith(command.ExitRefused, "--sdk %s does not look like a checkout of %s (no tool/tool.go)", sdk, build.SDKModule)
	}
	src := sdkSource{version: "v0.0.0-00010101000000-000000000000", replace: abs, goVersion: sdkGoVersion}
	if b, err := os.ReadFile(filepath.Join(abs, "go.mod")); err == nil {
		if m := goLine.FindSubmatch(b); m != nil {
			src.goVersion = string(m[1])
		}
	}
	return src, nil
}

// scaffold makes dir an agent, adding only what it is missing, and says on
// w what it added and what it kept.
func scaffold(dir, module, sdk string, w io.Writer) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		return exitWith(command.ExitRefused, "%s is a file, not a directory", abs)
	}
	// The SDK's source is needed for a go.mod to write or complete: with
	// --sdk it is checked at once, else looked up only then (an agent
	// whose go.mod has the SDK needs no released version).
	var src sdkSource
	needSDK := func() error {
		if src.version != "" {
			return nil
		}
		var err error
		src, err = findSDK(sdk)
		return err
	}
	if sdk != "" {
		if err := needSDK(); err != nil {
			return err
		}
	}
	var added, kept []string
	gomod := filepath.Join(abs, "go.mod")
	existing, err := os.ReadFile(gomod)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := needSDK(); err != nil {
			return err
		}
		if module == "" {
			module = strings.Trim(moduleNameChars.ReplaceAllString(strings.ToLower(filepath.Base(abs)), "-"), "-./")
			if module == "" {
				module = "agent"
			}
		}
		content := fmt.Sprintf("module %s\n\ngo %s\n\nrequire %s %s\n", module, src.goVersion, build.SDKModule, src.version)
		if src.replace != "" {
			content += fmt.Sprintf("\nreplace %s => %s\n", build.SDKModule, src.replace)
		}
		if err := writeNew(abs, "go.mod", content); err != nil {
			return err
		}
		added = append(added, "go.mod")
	case err != nil:
		return fmt.Errorf("reading %s: %w", gomod, err)
	default:
		if module != "" {
			return exitWith(command.ExitRefused, "%s has a go.mod already; --module names the module of a new one (edit its module line instead)", abs)
		}
		what, err := completeGoMod(abs, existing, sdk != "", needSDK, &src)
		if err != nil {
			return err
		}
		if what != "" {
			added = append(added, what)
		} else {
			kept = append(kept, "go.mod")
		}
	}

	if err := addOrKeep(abs, "agent/agent.yaml", agentYAML, &added, &kept); err != nil {
		return err
	}
	// A sample tool only where there are no tools yet; agent/lib only
	// where there is none.
	if n, err := goFiles(filepath.Join(abs, "agent", "tools")); err != nil {
		return err
	} else if n == 0 {
		for _, f := range []struct{ name, content string }{{"agent/tools/hello.go", helloTool}, {"agent/tools/hello_test.go", helloTest}} {
			if err := writeNew(abs, f.name, f.content); err != nil {
				return err
			}
			added = append(added, f.name)
		}
	} else {
		kept = append(kept, fmt.Sprintf("agent/tools/ (%d Go files; no sample tool added)", n))
	}
	if _, err := os.Stat(filepath.Join(abs, "agent", "lib")); errors.Is(err, os.ErrNotExist) {
		if err := writeNew(abs, "agent/lib/lib.go", libFile); err != nil {
			return err
		}
		added = append(added, "agent/lib/lib.go")
	} else {
		kept = append(kept, "agent/lib/")
	}
	if err := addOrKeep(abs, "README.md", fmt.Sprintf(readmeTemplate, filepath.Base(abs)), &added, &kept); err != nil {
		return err
	}
	switch what, err := completeGitignore(abs); {
	case err != nil:
		return err
	case what != "":
		added = append(added, what)
	default:
		kept = append(kept, ".gitignore")
	}

	if len(kept) == 0 {
		fmt.Fprintf(w, "created an agent in %s\n", abs)
	} else {
		fmt.Fprintf(w, "completed the agent in %s, overwriting nothing\n", abs)
	}
	if len(added) > 0 {
		fmt.Fprintf(w, "  added: %s\n", strings.Join(added, ", "))
	}
	if len(kept) > 0 {
		fmt.Fprintf(w, "  kept:  %s\n", strings.Join(kept, ", "))
	}
	if len(added) == 0 {
		fmt.Fprintln(w, "nothing was missing.")
		return nil
	}
	fmt.Fprintln(w, "running go mod tidy…")
	tidy := exec.Command("go", "mod", "tidy")
	tidy.Dir = abs
	if out, err := tidy.CombinedOutput(); err != nil {
		return exitWith(command.ExitFailure, "go mod tidy: %v\n%s", err, out)
	}
	fmt.Fprintf(w, "done. Next:\n  cd %s && go test ./...            # the tools' tests (package tooltest)\n  agent-sdk call hello --dir %s --input '{\"name\":\"Ada\"}'\n  agent-sdk serve --dir %s\n", dir, dir, dir)
	return nil
}

// completeGoMod adds the SDK's require to an existing go.mod that lacks
// it, and with --sdk its replace, with go mod edit; it returns what it
// added ("" for nothing).
func completeGoMod(dir string, gomod []byte, withSDK bool, needSDK func() error, src *sdkSource) (string, error) {
	requires := regexp.MustCompile(`(?m)^\s*(require\s+)?` + regexp.QuoteMeta(build.SDKModule) + `\s+v`).Match(gomod)
	replaces := regexp.MustCompile(`(?m)^\s*(replace\s+)?` + regexp.QuoteMeta(build.SDKModule) + `(\s+v\S+)?\s*=>`).Match(gomod)
	if requires && (replaces || !withSDK) {
		return "", nil
	}
	if err := needSDK(); err != nil {
		return "", err
	}
	var edits, what []string
	if !requires {
		edits = append(edits, "-require="+build.SDKModule+"@"+src.version)
		what = append(what, "its require")
	}
	if src.replace != "" && !replaces {
		edits = append(edits, "-replace="+build.SDKModule+"="+src.replace)
		what = append(what, "a replace to "+src.replace)
	}
	edit := exec.Command("go", append([]string{"mod", "edit"}, edits...)...)
	edit.Dir = dir
	if out, err := edit.CombinedOutput(); err != nil {
		return "", exitWith(command.ExitFailure, "adding the SDK to %s: go mod edit: %v\n%s", filepath.Join(dir, "go.mod"), err, out)
	}
	return "the SDK to go.mod (" + strings.Join(what, " and ") + ")", nil
}

// completeGitignore makes .gitignore ignore the state directory: a new
// file, or the line added to one that lacks it. It returns what it added.
func completeGitignore(dir string) (string, error) {
	path := filepath.Join(dir, ".gitignore")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return ".gitignore", writeNew(dir, ".gitignore", gitignore)
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		switch strings.TrimSpace(line) {
		case ".agent-sdk", ".agent-sdk/", "/.agent-sdk", "/.agent-sdk/":
			return "", nil
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return "", fmt.Errorf("adding .agent-sdk/ to %s: %w", path, err)
	}
	prefix := ""
	if len(b) > 0 && b[len(b)-1] != '\n' {
		prefix = "\n"
	}
	if _, err := f.WriteString(prefix + gitignore); err != nil {
		f.Close()
		return "", fmt.Errorf("adding .agent-sdk/ to %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("adding .agent-sdk/ to %s: %w", path, err)
	}
	return ".agent-sdk/ to .gitignore", nil
}

// gitignore keeps the state directory (the token, the SQLite store, the
// build cache, workspaces) out of version control.
const gitignore = "# the agent's state: its token, store, workspaces and builds\n.agent-sdk/\n"

// addOrKeep adds a file that is missing to added, or names the one there
// in kept.
func addOrKeep(dir, name, content string, added, kept *[]string) error {
	made, err := addFile(dir, name, content)
	switch {
	case err != nil:
		return err
	case made:
		*added = append(*added, name)
	default:
		*kept = append(*kept, name)
	}
	return nil
}

// addFile writes name under dir unless something is there already; it
// reports whether it wrote it.
func addFile(dir, name, content string) (bool, error) {
	if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name))); err == nil {
		return false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	return true, writeNew(dir, name, content)
}

// writeNew creates a file that must not exist yet (O_EXCL: init never
// overwrites), with its directories.
func writeNew(dir, name, content string) error {
	path := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", name, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("creating %s: %w", name, err)
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// goFiles counts the .go files directly in dir (0 if it does not exist).
func goFiles(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", dir, err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") {
			n++
		}
	}
	return n, nil
}

// sdkVersionOnly is this CLI's released module version, or "" for a build
// from source.
func sdkVersionOnly() string {
	v := sdkVersion()
	if i := strings.IndexByte(v, '+'); i >= 0 {
		v = v[:i]
	}
	if v == "" || v == "(devel)" || v == "unknown" {
		return ""
	}
	return v
}

const helloTool = `package tools

import (
	"context"
	"fmt"

	"github.com/agentsdk/agentsdk/tool"
)

// HelloInput is hello's input; its JSON Schema is inferred from the struct.
type HelloInput struct {
	Name string ` + "`" + `json:"name" jsonschema:"who to greet"` + "`" + `
}

// Hello greets someone. The file's name, hello.go, is the tool's name.
var Hello = tool.Define(tool.Config{
	Description: "Greet someone by name.",
}, func(ctx context.Context, call *tool.Call, in HelloInput) (any, error) {
	return fmt.Sprintf("Hello, %s!", in.Name), nil
})
`

const helloTest = `package tools

import (
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/tooltest"
)

// A tool's test runs it as a direct call would — the input validated, the
// approval predicate asked, the handler run — with the host's services in
// memory (tooltest.New(t, nil).KV, .Files, .Sent(), …): go test ./...
func TestHello(t *testing.T) {
	out := tooltest.Call(t, "hello", ` + "`" + `{"name":"Ada"}` + "`" + `)
	if out.Err != nil || out.IsError || out.Text() != "Hello, Ada!" {
		t.Fatalf("hello: %v", out)
	}
}

// Input that breaks the schema is refused before the handler runs, as a
// host refuses it, with every violation and its path.
func TestHelloRefusesAMisspeltKey(t *testing.T) {
	out := tooltest.Call(t, "hello", ` + "`" + `{"nmae":"Ada"}` + "`" + `)
	if out.Err == nil {
		t.Fatalf("hello ran with a misspelt key: %v", out)
	}
	for _, v := range out.Violations {
		if v.Path == "input.nmae" && strings.Contains(v.Message, "did you mean name?") {
			return
		}
	}
	t.Errorf("violations %v, want one at input.nmae", out.Violations)
}
`

const libFile = `// Package lib holds code shared by the agent's tools. Files in agent/tools
// each define exactly one tool; everything else goes here.
package lib
`

const readmeTemplate = `# %s

An agent built with the Agent SDK for Go. Each file in agent/tools defines one
tool, named after the file; shared code lives in agent/lib; agent/agent.yaml
configures the model, limits and integrations (every key is there, commented
out, with its default).

    go test ./...                                             # the tools' tests (package tooltest)
    agent-sdk tools --dir .                                   # list the tools
    agent-sdk call hello --dir . --input '{"name":"Ada"}'     # call one, no model turn
    agent-sdk serve --dir .                                   # serve the HTTP API
`

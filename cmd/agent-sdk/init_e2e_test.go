package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/agentconfig"
)

// goVersionOf reads a go.mod's go line.
func goVersionOf(t *testing.T, gomod string) string {
	t.Helper()
	b, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go\s+(\S+)\s*$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no go line:\n%s", gomod, b)
	}
	return string(m[1])
}

// goRun runs a go command in dir.
func goRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %v in %s: %v\n%s", args, dir, err, out)
	}
	return string(out)
}

// A new agent has everything, and its sample test passes under go test
// ./... in its own module (through package tooltest, of this checkout).
func TestInitScaffoldsATestedAgent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fresh")
	r := run(t, repoRoot, "", "init", dir, "--sdk", repoRoot)
	if r.code != 0 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	for _, f := range []string{"go.mod", "go.sum", "agent/agent.yaml", "agent/tools/hello.go", "agent/tools/hello_test.go", "agent/lib/lib.go", "README.md", ".gitignore"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("init did not create %s: %v", f, err)
		}
		if !strings.Contains(r.stderr, f) && f != "go.sum" {
			t.Errorf("init did not say it added %s:\n%s", f, r.stderr)
		}
	}
	if !strings.Contains(r.stderr, "created an agent in") || strings.Contains(r.stderr, "kept:") {
		t.Errorf("init's report:\n%s", r.stderr)
	}
	if got, want := goVersionOf(t, filepath.Join(dir, "go.mod")), goVersionOf(t, filepath.Join(repoRoot, "go.mod")); got != want {
		t.Errorf("the agent's go.mod says go %s, the SDK's go %s", got, want)
	}
	if c, err := agentconfig.Load(agentconfig.Path(dir)); err != nil || c.Model.Provider != "" {
		t.Errorf("agent.yaml: %+v, %v", c, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); !strings.Contains(string(b), ".agent-sdk/\n") {
		t.Errorf(".gitignore:\n%s", b)
	}
	out := goRun(t, dir, "test", "-count=1", "-v", "./...")
	for _, want := range []string{"--- PASS: TestHello ", "--- PASS: TestHelloRefusesAMisspeltKey", "ok  \tfresh/agent/tools"} {
		if !strings.Contains(out, want) {
			t.Errorf("go test ./... in the new agent lacks %q:\n%s", want, out)
		}
	}
}

// init in a directory that has agent/ but no go.mod adds what is missing
// and keeps what is there, byte for byte.
func TestInitCompletesAnAgentDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "partial")
	yaml := "system: You are terse.\n"
	tool := "package tools\n\nimport (\n\t\"context\"\n\n\t\"github.com/agentsdk/agentsdk/tool\"\n)\n\nvar _ = tool.Define(tool.Config{Description: \"Ping.\"}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {\n\treturn \"pong\", nil\n})\n"
	readme := "# mine\n"
	for name, content := range map[string]string{"agent/agent.yaml": yaml, "agent/tools/ping.go": tool, "README.md": readme} {
		path := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := run(t, dir, "", "init", ".", "--sdk", repoRoot)
	if r.code != 0 {
		t.Fatalf("init . over agent/: exit %d\n%s", r.code, r.stderr)
	}
	added := regexp.MustCompile(`(?m)^  added: (.*)$`).FindStringSubmatch(r.stderr)
	kept := regexp.MustCompile(`(?m)^  kept:  (.*)$`).FindStringSubmatch(r.stderr)
	if added == nil || added[1] != "go.mod, agent/lib/lib.go, .gitignore" {
		t.Errorf("added: %v\n%s", added, r.stderr)
	}
	if kept == nil || kept[1] != "agent/agent.yaml, agent/tools/ (1 Go files; no sample tool added), README.md" {
		t.Errorf("kept: %v\n%s", kept, r.stderr)
	}
	for name, content := range map[string]string{"agent/agent.yaml": yaml, "agent/tools/ping.go": tool, "README.md": readme} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != content {
			t.Errorf("init changed %s:\n%s", name, b)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "agent", "tools", "hello.go")); err == nil {
		t.Error("init added a sample tool beside the agent's own")
	}
	goRun(t, dir, "build", "./...")

	// Again: nothing is missing, nothing changes.
	r = run(t, dir, "", "init", ".", "--sdk", repoRoot)
	if r.code != 0 || !strings.Contains(r.stderr, "nothing was missing") || strings.Contains(r.stderr, "added:") {
		t.Errorf("init a second time: exit %d\n%s", r.code, r.stderr)
	}
}

// An existing go.mod that does not require the SDK gets its require and
// replace (go mod tidy raises its go line to the SDK's); an existing .gitignore gets the
// state directory's line; --module cannot rename an existing module.
func TestInitCompletesAGoModule(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/mine\n\ngo 1.25\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("bin/"), 0o644)
	if r := run(t, dir, "", "init", ".", "--sdk", repoRoot, "--module", "example.com/other"); r.code != 2 || !strings.Contains(r.stderr, "has a go.mod already") {
		t.Errorf("init --module over a go.mod: exit %d\n%s", r.code, r.stderr)
	}
	r := run(t, dir, "", "init", ".", "--sdk", repoRoot)
	if r.code != 0 || !strings.Contains(r.stderr, "the SDK to go.mod (its require and a replace to "+repoRoot+")") || !strings.Contains(r.stderr, ".agent-sdk/ to .gitignore") {
		t.Fatalf("init in a module without the SDK: exit %d\n%s", r.code, r.stderr)
	}
	gomod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	for _, want := range []string{"module example.com/mine\n", "go " + goVersionOf(t, filepath.Join(repoRoot, "go.mod")) + "\n", "github.com/agentsdk/agentsdk v0.0.0-00010101000000-000000000000", "replace github.com/agentsdk/agentsdk => " + repoRoot} {
		if !strings.Contains(string(gomod), want) {
			t.Errorf("go.mod lacks %q:\n%s", want, gomod)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); string(b) != "bin/\n# the agent's state: its token, store, workspaces and builds\n.agent-sdk/\n" {
		t.Errorf(".gitignore:\n%s", b)
	}
	goRun(t, dir, "vet", "./...")
}

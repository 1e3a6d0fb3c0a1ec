package main_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A build says each of its phases on stderr, with its time, and the
// warnings of tool files Go leaves out; the cached binary is used without
// a word but the warnings.
func TestBuildReportsPhases(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "phases")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	other := "windows"
	if runtime.GOOS == "windows" {
		other = "linux"
	}
	tools := filepath.Join(dir, "agent", "tools")
	src, err := os.ReadFile(filepath.Join(tools, "fail.go"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tools, "lint_test.go"), src, 0o644)
	os.WriteFile(filepath.Join(tools, "deploy_"+other+".go"), src, 0o644)

	first := run(t, dir, "", "build", "--dir", ".")
	if first.code != 0 {
		t.Fatalf("build: %+v", first)
	}
	wantInOrder(t, first.stderr,
		"agent-sdk: warning: agent/tools/deploy_"+other+".go: Go compiles a file whose name ends in _"+other+" only for GOOS="+other,
		"rename the file, e.g. to deploy-"+other+".go",
		"agent-sdk: warning: agent/tools/lint_test.go: Go compiles files whose names end in _test.go only into tests, so tool lint_test is missing from the agent; rename the file, e.g. to lint-test.go",
		"agent-sdk: building the agent (first build of this agent)",
		"agent-sdk: generated main in ",
		"agent-sdk: compiling the agent with go build (first build: its dependencies, SQLite and the model provider's SDK among them; minutes on a cold Go cache)…",
		"agent-sdk: compiled ",
		"agent-sdk: built the agent in ",
	)
	if !strings.Contains(first.stdout, filepath.Join(".agent-sdk", "build", "agent-")) {
		t.Errorf("stdout: %q", first.stdout)
	}
	second := run(t, dir, "", "build", "--dir", ".")
	if second.code != 0 || strings.Contains(second.stderr, "agent-sdk: building") || strings.Contains(second.stderr, "agent-sdk: compil") || !strings.Contains(second.stderr, "lint_test.go") {
		t.Errorf("the cached build: %+v", second)
	}
	tl := run(t, dir, "", "tools", "--dir", ".")
	if strings.Contains(tl.stdout, "lint_test") || strings.Contains(tl.stdout, "deploy_") {
		t.Errorf("tools lists a tool Go left out:\n%s", tl.stdout)
	}
}

// The traps that fail before anything is built, as the CLI says them.
func TestBuildTraps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "traps")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		t.Helper()
		path := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lib, _ := os.ReadFile(filepath.Join(dir, "agent", "lib", "lib.go"))
	tests := []struct {
		name  string
		setup func()
		in    string // directory to run in, under dir
		args  []string
		code  int // 2 refused (flags, agent.yaml), 3 the build failed (as for any check of the tools)
		want  []string
	}{
		{"a tool defined in agent/lib", func() {
			write("agent/lib/lib.go", "package lib\n\nimport \"github.com/agentsdk/agentsdk/tool\"\n\nvar _ = tool.DefineScript(tool.Config{Description: \"x\"}, \"#!/bin/sh\\n\")\n")
		}, ".", []string{"build", "--dir", "."}, 3, []string{`agent/lib/lib.go:5: tool.DefineScript outside agent/tools would add a tool named "lib" (after the file) to the agent; define tools in agent/tools`}},
		{"a tool defined in a module package a tool imports", func() {
			write("agent/lib/lib.go", string(lib))
			write("internal/x/x.go", "package x\n\nimport \"github.com/agentsdk/agentsdk/tool\"\n\nvar _ = tool.DefineScript(tool.Config{Description: \"x\"}, \"#!/bin/sh\\n\")\n")
			write("agent/tools/usex.go", "package tools\n\nimport _ \"traps/internal/x\"\n\nimport \"github.com/agentsdk/agentsdk/tool\"\n\nvar _ = tool.DefineScript(tool.Config{Description: \"y\"}, \"#!/bin/sh\\n\")\n")
		}, ".", []string{"build", "--dir", "."}, 3, []string{`internal/x/x.go:5: tool.DefineScript outside agent/tools would add a tool named "x" (after the file) to the agent (the agent links traps/internal/x); define tools in agent/tools`}},
		{"an unknown agent.yaml key", func() {
			os.Remove(filepath.Join(dir, "agent", "tools", "usex.go"))
			write("agent/agent.yaml", "model:\n  provider: anthropic\n  nmae: claude-sonnet-4-5\n")
		}, ".", []string{"build", "--dir", "."}, 2, []string{`agent.yaml: line 3: unknown key "nmae" under model (did you mean "name"?); the keys of model are: apiKey, baseURL, contextWindow, maxTokens, name, provider, reasoningEffort, thinking`}},
		{"--dir agent/tools", func() { os.Remove(filepath.Join(dir, "agent", "agent.yaml")) }, ".", []string{"call", "hello", "--dir", "agent/tools", "--input", "{}"}, 2,
			[]string{"agent/tools is inside the agent " + dir + ", not the agent directory: --dir should be the directory that holds agent/ (try --dir .)"}},
		{"run from agent/tools", func() {}, "agent/tools", []string{"call", "hello", "--input", "{}"}, 2,
			[]string{"(try --dir ../..)"}},
		{"no go.mod", func() { os.Remove(filepath.Join(dir, "go.mod")) }, ".", []string{"build", "--dir", "."}, 2,
			[]string{"is not in a Go module: no go.mod in it or above it (add one with: agent-sdk init . --sdk " + repoRoot + "; init adds what is missing and keeps the files you have)"}},
		{"a go.mod without the SDK", func() { write("go.mod", "module traps\n\ngo 1.26\n") }, ".", []string{"build", "--dir", "."}, 3,
			[]string{"go.mod does not require github.com/agentsdk/agentsdk. The SDK is not published as a module, so go get cannot fetch it",
				"\n  require github.com/agentsdk/agentsdk v0.0.0-00010101000000-000000000000\n  replace github.com/agentsdk/agentsdk => " + repoRoot}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup()
			r := run(t, filepath.Join(dir, tt.in), "", tt.args...)
			if r.code != tt.code {
				t.Errorf("exit code %d, want %d", r.code, tt.code)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "go get") && !strings.Contains(r.stderr, "go get cannot") {
				t.Errorf("suggests go get:\n%s", r.stderr)
			}
		})
	}
}

// wantInOrder checks that s holds each part, in this order.
func wantInOrder(t *testing.T, s string, parts ...string) {
	t.Helper()
	rest := s
	for _, p := range parts {
		i := strings.Index(rest, p)
		if i < 0 {
			t.Errorf("stderr lacks %q after what came before:\n%s", p, s)
			return
		}
		rest = rest[i+len(p):]
	}
}

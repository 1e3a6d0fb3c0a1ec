package build

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A tool in a file Go leaves out by its name, or builds only for one
// system, is warned of: the file, why the tool is missing, the new name.
func TestCheckWarnsOfFileNames(t *testing.T) {
	other := "windows" // a GOOS this test does not run on
	if runtime.GOOS == "windows" {
		other = "linux"
	}
	tests := []struct {
		name  string
		files map[string]string
		want  []string // one warning each, its parts separated by |
	}{
		{"a test file", map[string]string{"hello.go": oneTool, "lint_test.go": oneTool},
			[]string{"agent/tools/lint_test.go: |only into tests|tool lint_test is missing from the agent|rename the file, e.g. to lint-test.go"}},
		{"another test file", map[string]string{"hello.go": oneTool, "unit_test.go": oneTool},
			[]string{"agent/tools/unit_test.go: |tool unit_test is missing|e.g. to unit-test.go"}},
		{"a test of a tool", map[string]string{"hello.go": oneTool, "hello_test.go": "package tools\n\nimport \"testing\"\n\nfunc TestHello(t *testing.T) {}\n"}, nil},
		{"another system's file", map[string]string{"hello.go": oneTool, "deploy_" + other + ".go": oneTool},
			[]string{"agent/tools/deploy_" + other + ".go: |name ends in _" + other + " only for GOOS=" + other + "|tool deploy_" + other + " is missing from this agent (built for " + runtime.GOOS + "/" + runtime.GOARCH + ")|rename the file, e.g. to deploy-" + other + ".go"}},
		{"this system's file", map[string]string{"hello.go": oneTool, "notify_" + runtime.GOOS + ".go": oneTool},
			[]string{"agent/tools/notify_" + runtime.GOOS + ".go: |only for GOOS=" + runtime.GOOS + "|tool notify_" + runtime.GOOS + " is missing from the agent when built for any other system|e.g. to notify-" + runtime.GOOS + ".go"}},
		{"an architecture's file", map[string]string{"hello.go": oneTool, "scan_arm64_test.go": oneTool},
			[]string{"agent/tools/scan_arm64_test.go: |only into tests|tool scan_arm64_test is missing"}},
		{"a system and an architecture", map[string]string{"hello.go": oneTool, "probe_" + other + "_amd64.go": oneTool},
			[]string{"probe_" + other + "_amd64.go: |ends in _" + other + "_amd64 only for GOOS=" + other + " GOARCH=amd64|e.g. to probe-" + other + "-amd64.go"}},
		{"an ignored file", map[string]string{"hello.go": oneTool, "_draft.go": oneTool},
			[]string{"agent/tools/_draft.go: Go ignores files whose names begin with _ or .|tool _draft is missing|e.g. to draft.go"}},
		{"a build constraint", map[string]string{"hello.go": oneTool, "legacy.go": "//go:build ignore\n\n" + oneTool},
			[]string{"agent/tools/legacy.go: its //go:build line leaves it out of this build|tool legacy is missing"}},
		{"a channel", map[string]string{"hello.go": oneTool, "../channels/github_" + other + ".go": oneChannel},
			[]string{"agent/channels/github_" + other + ".go: |channel github_" + other + " is missing"}},
		{"a schedule test", map[string]string{"hello.go": oneTool, "../schedules/nightly_test.go": oneSchedule},
			[]string{"agent/schedules/nightly_test.go: |schedule nightly_test is missing|e.g. to nightly-test.go"}},
		{"a name like a system's", map[string]string{"hello.go": oneTool, "linux.go": oneTool, "fetch_url.go": oneTool}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			warnings, err := writeAgent(t, tt.files).Check()
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if len(warnings) != len(tt.want) {
				t.Fatalf("warnings = %q, want %d", warnings, len(tt.want))
			}
			for i, w := range tt.want {
				for _, part := range strings.Split(w, "|") {
					if !strings.Contains(warnings[i], part) {
						t.Errorf("warning lacks %q:\n%s", part, warnings[i])
					}
				}
			}
		})
	}
}

// The only tool in a file Go leaves out: the warning says why, and the
// error that there is no tool.
func TestCheckOnlyToolLeftOut(t *testing.T) {
	warnings, err := writeAgent(t, map[string]string{"lint_test.go": oneTool}).Check()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "lint_test.go") {
		t.Errorf("warnings = %q", warnings)
	}
	if err == nil || !strings.Contains(err.Error(), "agent/tools: no tools defined") {
		t.Errorf("error = %v", err)
	}
}

// A definition outside its directory is refused, naming the file, the
// line and the name it would have added.
func TestCheckRefusesDefinitionsElsewhere(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"a tool in agent/lib", map[string]string{"hello.go": oneTool, "../lib/lib.go": strings.Replace(oneTool, "package tools", "package lib", 1)},
			[]string{`agent/lib/lib.go:5: tool.Define outside agent/tools would add a tool named "lib" (after the file) to the agent`, "define tools in agent/tools, one per file", "tool.New makes a tool that is not registered"}},
		{"a script in a package under lib", map[string]string{"hello.go": oneTool, "../lib/shell/run.go": "package shell\nimport \"github.com/agentsdk/agentsdk/tool\"\nvar _ = tool.DefineScript(tool.Config{}, \"#!/bin/sh\")\n"},
			[]string{`agent/lib/shell/run.go:3: tool.DefineScript outside agent/tools would add a tool named "run"`}},
		{"a tool among the channels", map[string]string{"hello.go": oneTool, "../channels/github.go": oneChannel + "\nvar _ = tool.Define[In, Out](tool.Config{}, handle)\n"},
			[]string{`agent/channels/github.go:10: tool.Define outside agent/tools would add a tool named "github"`}},
		{"a schedule in agent/lib", map[string]string{"hello.go": oneTool, "../lib/cron.go": strings.Replace(oneSchedule, "package schedules", "package lib", 1)},
			[]string{`agent/lib/cron.go:5: schedule.Define outside agent/schedules would add a schedule named "cron"`}},
		{"a tool in a module package a tool imports", map[string]string{"hello.go": importing(oneTool, "example.com/a/internal/x"), "../../internal/x/x.go": strings.Replace(oneTool, "package tools", "package x", 1)},
			[]string{`internal/x/x.go:5: tool.Define outside agent/tools would add a tool named "x" (after the file) to the agent (the agent links example.com/a/internal/x); define tools in agent/tools, one per file`}},
		{"a schedule two imports away, through agent/lib", map[string]string{
			"hello.go":               importing(oneTool, "example.com/a/agent/lib"),
			"../lib/lib.go":          importing("package lib\n", "example.com/a/pkg/a"),
			"../../pkg/a/a.go":       importing("package a\n", "example.com/a/pkg/b"),
			"../../pkg/b/nightly.go": strings.Replace(oneSchedule, "package schedules", "package b", 1),
		}, []string{`pkg/b/nightly.go:5: schedule.Define outside agent/schedules would add a schedule named "nightly" (after the file) to the agent (the agent links example.com/a/pkg/b)`}},
		{"a tool in a package a channel imports", map[string]string{"hello.go": oneTool, "../channels/github.go": importing(oneChannel, "example.com/a/internal/hooks"), "../../internal/hooks/hooks.go": strings.Replace(oneTool, "package tools", "package hooks", 1)},
			[]string{`internal/hooks/hooks.go:5: tool.Define outside agent/tools would add a tool named "hooks"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Contains(tt.files["../channels/github.go"], "tool.Define") {
				tt.files["../channels/github.go"] = strings.Replace(tt.files["../channels/github.go"], `import "github.com/agentsdk/agentsdk/channel"`,
					"import (\n\t\"github.com/agentsdk/agentsdk/channel\"\n\t\"github.com/agentsdk/agentsdk/tool\"\n)", 1)
			}
			_, err := writeAgent(t, tt.files).Check()
			var tfe *ToolFileError
			if !errors.As(err, &tfe) {
				t.Fatalf("error = %v, want a *ToolFileError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	// Shared code that makes tools with tool.New, and tests, are fine.
	ok := map[string]string{
		"hello.go":          importing(oneTool, "example.com/a/agent/lib"),
		"../lib/lib.go":     "package lib\nimport \"github.com/agentsdk/agentsdk/tool\"\nvar T, _ = tool.New(\"t\", tool.Config{}, handle)\n",
		"../lib/x_test.go":  strings.Replace(oneTool, "package tools", "package lib", 1),
		"../lib/testdata/a": "",
		// A package of the module the agent does not link adds nothing;
		// nor does one only a test imports, or one this system leaves out.
		"../../internal/unused/u.go":  strings.Replace(oneTool, "package tools", "package unused", 1),
		"hello_test.go":               importing("package tools\n", "example.com/a/internal/fortest"),
		"../../internal/fortest/f.go": strings.Replace(oneTool, "package tools", "package fortest", 1),
		"../lib/other.go":             importing("//go:build ignore\n\npackage lib\n", "example.com/a/internal/ignored"),
		"../../internal/ignored/i.go": strings.Replace(oneTool, "package tools", "package ignored", 1),
	}
	if _, err := writeAgent(t, ok).Check(); err != nil {
		t.Errorf("unexpected error: %v", err)
	}
}

// A --dir that names a directory inside an agent says which --dir would
// find it; one with no agent and one with no go.mod say which init
// command adds what is missing.
func TestFindMessages(t *testing.T) {
	a := writeAgent(t, map[string]string{"hello.go": oneTool})
	t.Chdir(a.ToolsDir())
	for _, tt := range []struct{ dir, want string }{
		{".", "--dir should be the directory that holds agent/ (try --dir ../..)"},
		{"../lib", "(try --dir ../..)"},
		{filepath.Join(a.Dir, "agent"), "(try --dir " + a.Dir + ")"},
	} {
		_, err := Find(tt.dir)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "is inside the agent "+a.Dir) {
			t.Errorf("Find(%s) = %v, want %q", tt.dir, err, tt.want)
		}
	}

	empty := t.TempDir()
	_, err := Find(empty)
	if want := "has no agent/tools directory (create one with: agent-sdk init " + empty + " --sdk " + SDKDir() + "; init adds what is missing and keeps the files you have)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Find(empty) = %v, want %q", err, want)
	}
	noMod := t.TempDir()
	os.MkdirAll(filepath.Join(noMod, "agent", "tools"), 0o755)
	_, err = Find(noMod)
	if want := "no go.mod in it or above it (add one with: agent-sdk init " + noMod + " --sdk " + SDKDir() + "; init adds"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Find(no go.mod) = %v, want %q", err, want)
	}
}

// A go.mod without the SDK is told the lines that reach it, with the real
// path of the checkout: go get cannot fetch an unpublished module.
func TestNoSDKMessage(t *testing.T) {
	if SDKDir() == "" {
		t.Fatal("SDKDir is empty in a test run from the checkout")
	}
	if _, err := os.Stat(filepath.Join(SDKDir(), "internal", "build", "sdkdir.go")); err != nil {
		t.Fatalf("SDKDir %s is not this checkout: %v", SDKDir(), err)
	}
	a := writeAgent(t, map[string]string{"hello.go": oneTool})
	os.WriteFile(filepath.Join(a.ModuleRoot, "go.mod"), []byte("module example.com/a\n\ngo 1.26\n"), 0o644)
	a, err := Find(a.Dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Build(t.Context(), Options{StateDir: t.TempDir()})
	for _, want := range []string{
		filepath.Join(a.ModuleRoot, "go.mod") + " does not require " + SDKModule,
		"go get cannot fetch it",
		"\n  require " + SDKModule + " v0.0.0-00010101000000-000000000000\n  replace " + SDKModule + " => " + SDKDir(),
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "go get "+SDKModule) {
		t.Errorf("error suggests go get:\n%v", err)
	}
}

// importing is the Go source src (a package clause, then its own imports)
// with a blank import of path added after its package clause.
func importing(src, path string) string {
	i := strings.Index(src, "package ")
	j := i + strings.Index(src[i:], "\n")
	return src[:j+1] + "\nimport _ \"" + path + "\"\n" + src[j+1:]
}

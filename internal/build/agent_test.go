package build

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeAgent makes an agent directory in a module with the given tool files.
func writeAgent(t *testing.T, files map[string]string) *Agent {
	t.Helper()
	dir := t.TempDir()
	all := map[string]string{"go.mod": "module example.com/a\n\ngo 1.26\n\nrequire " + SDKModule + " v0.0.0\n\nreplace " + SDKModule + " => ../sdk\n"}
	for name, content := range files {
		all[filepath.Join("agent", "tools", name)] = content
	}
	for name, content := range all {
		path := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(dir, "agent", "tools"), 0o755)
	a, err := Find(dir)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

const oneTool = `package tools

import "github.com/agentsdk/agentsdk/tool"

var _ = tool.Define(tool.Config{Description: "d"}, handle)
`

const oneChannel = `package channels

import "github.com/agentsdk/agentsdk/channel"

var _ = channel.Define(channel.Config{})
`

const oneSchedule = `package schedules

import "github.com/agentsdk/agentsdk/schedule"

var _ = schedule.Define(schedule.Config{})
`

func TestCheckTools(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string // substrings of the error; none means no error
	}{
		{"one tool", map[string]string{"hello.go": oneTool, "hello_test.go": "package tools\n"}, nil},
		{"a script tool", map[string]string{"echo.go": "package tools\nimport \"github.com/agentsdk/agentsdk/tool\"\nvar _ = tool.DefineScript(tool.Config{}, \"#!/bin/sh\")\n"}, nil},
		{"aliased import and explicit type", map[string]string{"hello.go": "package tools\nimport t \"github.com/agentsdk/agentsdk/tool\"\nvar _ = t.Define[In](t.Config{}, handle)\n"}, nil},
		{"two tools", map[string]string{"hello.go": oneTool + "\nvar _ = tool.Define(tool.Config{Description: \"e\"}, handle)\n"},
			[]string{"agent/tools/hello.go: defines 2 tools, at lines 5, 7"}},
		{"no tool", map[string]string{"hello.go": oneTool, "helpers.go": "package tools\n\nfunc handle() {}\n"},
			[]string{"agent/tools/helpers.go: defines no tool", "agent/lib"}},
		{"another package's Define", map[string]string{"hello.go": "package tools\nimport \"example.com/tool\"\nvar _ = tool.Define()\n"},
			[]string{"hello.go: defines no tool"}},
		{"bad file name", map[string]string{"hello world.go": oneTool}, []string{`"hello world" is not a valid tool name`}},
		{"syntax error", map[string]string{"hello.go": "package tools\nvar = \n"}, []string{"hello.go:2"}},
		{"code in a subdirectory", map[string]string{"hello.go": oneTool, "sub/x.go": "package sub\n"}, []string{"agent/tools/sub: tools live directly in agent/tools"}},
		{"empty", map[string]string{}, []string{"no tools defined"}},
		// Channels and schedules follow the same rule in their directories.
		{"a channel and a schedule", map[string]string{"hello.go": oneTool, "../channels/github.go": oneChannel, "../schedules/nightly.go": oneSchedule}, nil},
		{"two channels", map[string]string{"hello.go": oneTool, "../channels/github.go": oneChannel + "var _ = channel.Define(channel.Config{})\n"},
			[]string{"agent/channels/github.go: defines 2 channels, at lines 5, 6"}},
		{"no schedule", map[string]string{"hello.go": oneTool, "../schedules/util.go": "package schedules\n"},
			[]string{"agent/schedules/util.go: defines no schedule (call schedule.Define once"}},
		{"bad channel name", map[string]string{"hello.go": oneTool, "../channels/git hub.go": oneChannel}, []string{`"git hub" is not a valid channel name`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := writeAgent(t, tt.files).CheckTools()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
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
}

func TestFind(t *testing.T) {
	a := writeAgent(t, map[string]string{"hello.go": oneTool})
	if a.ToolsPkg != "example.com/a/agent/tools" || a.Slug() != filepath.Base(a.Dir) || !a.requiresSDK() {
		t.Errorf("agent %+v", a)
	}
	if got := a.localReplaces(); len(got) != 1 || got[0] != filepath.Join(filepath.Dir(a.ModuleRoot), "sdk") {
		t.Errorf("local replaces %v", got)
	}
	// An agent in a subdirectory of a module.
	sub := filepath.Join(a.ModuleRoot, "agents", "pr")
	os.MkdirAll(filepath.Join(sub, "agent", "tools"), 0o755)
	b, err := Find(sub)
	if err != nil || b.ToolsPkg != "example.com/a/agents/pr/agent/tools" || b.ModuleRoot != a.ModuleRoot {
		t.Errorf("Find(sub) = %+v, %v", b, err)
	}
	if _, err := Find(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no agent/tools directory") {
		t.Errorf("Find of a non-agent: %v", err)
	}
}

func TestHashFollowsSources(t *testing.T) {
	a := writeAgent(t, map[string]string{"hello.go": oneTool})
	h1, err := a.hash("main", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if h2, _ := a.hash("main", "v1"); h2 != h1 {
		t.Error("the hash changed with nothing changed")
	}
	// State, tests and hidden directories do not count.
	os.MkdirAll(filepath.Join(a.Dir, ".agent-sdk", "build"), 0o755)
	os.WriteFile(filepath.Join(a.Dir, ".agent-sdk", "x.go"), []byte("package x"), 0o644)
	os.WriteFile(filepath.Join(a.ToolsDir(), "hello_test.go"), []byte("package tools"), 0o644)
	if h2, _ := a.hash("main", "v1"); h2 != h1 {
		t.Error("the hash changed for files that do not affect the binary")
	}
	for _, c := range []struct {
		name   string
		change func()
	}{
		{"a tool file", func() { os.WriteFile(filepath.Join(a.ToolsDir(), "hello.go"), []byte(oneTool+"// edited\n"), 0o644) }},
		{"go.sum", func() { os.WriteFile(filepath.Join(a.Dir, "go.sum"), []byte("x v1 h1:y\n"), 0o644) }},
		{"lib code", func() {
			os.MkdirAll(filepath.Join(a.Dir, "agent", "lib"), 0o755)
			os.WriteFile(filepath.Join(a.Dir, "agent", "lib", "l.go"), []byte("package lib"), 0o644)
		}},
		{"an embedding package", func() {
			os.WriteFile(filepath.Join(a.Dir, "agent", "lib", "l.go"), []byte("package lib\n\nimport _ \"embed\"\n\n//go:embed msg.txt\nvar msg string\n"), 0o644)
			os.WriteFile(filepath.Join(a.Dir, "agent", "lib", "msg.txt"), []byte("first"), 0o644)
		}},
		{"an embedded file", func() { os.WriteFile(filepath.Join(a.Dir, "agent", "lib", "msg.txt"), []byte("second"), 0o644) }},
	} {
		prev, _ := a.hash("main", "v1")
		c.change()
		if next, _ := a.hash("main", "v1"); next == prev {
			t.Errorf("changing %s did not change the hash", c.name)
		}
	}
	prev, _ := a.hash("main", "v1")
	if next, _ := a.hash("main", "v2"); next == prev {
		t.Error("the SDK version is not part of the hash")
	}
}

package agenttool

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// setup materialises the given scripts in a fresh workspace.
func setup(t *testing.T, scripts map[string]string) (string, *tool.Set) {
	t.Helper()
	var tools []*tool.Tool
	for name, script := range scripts {
		tl, err := tool.NewScript(name, tool.Config{Description: "Test script " + name + ".", Timeout: 5 * time.Second}, script)
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tl)
	}
	set, err := tool.NewSet(tools...)
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	if err := Materialize(ws, set); err != nil {
		t.Fatal(err)
	}
	return ws, set
}

func run(t *testing.T, ws string, set *tool.Set, name, input string, timeout time.Duration) tool.Output {
	t.Helper()
	tl, _ := set.Lookup(name)
	in, err := tl.Validate(json.RawMessage(input))
	if err != nil {
		t.Fatal(err)
	}
	return Run(context.Background(), tl, in, RunOptions{Workspace: ws, Timeout: timeout, CallID: "tool_" + name + "_x"})
}

// needPython skips a test whose scripts use python3, as the reference
// page's echo tool does, on a machine without it.
func needPython(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
}

func TestRun(t *testing.T) {
	needPython(t)
	ws, set := setup(t, map[string]string{
		"cat":     "#!/bin/sh\ncat\n",
		"text":    "#!/bin/sh\necho 'hello world'\n",
		"fail":    "#!/bin/sh\necho partial\necho 'bad things happened' >&2\nexit 3\n",
		"quiet":   "#!/bin/sh\nexit 4\n",
		"env":     "#!/bin/sh\nenv | sort\n",
		"pwd":     "#!/bin/sh\npwd\n",
		"args":    "#!/bin/sh\necho \"$#\"\n",
		"noshell": "#!/usr/bin/env python3\nimport json,sys\nprint(json.dumps({'got': json.load(sys.stdin)}))\n",
		"flood":   "#!/bin/sh\nhead -c 5000000 /dev/zero\n",
	})
	tests := []struct {
		name, tool, input string
		want              string
		isError           bool
	}{
		{"stdin to stdout as JSON", "cat", `{"a":[1,2]}`, `{"a":[1,2]}`, false},
		{"text result", "text", `{}`, `"hello world"`, false},
		{"non-zero exit carries stderr", "fail", `{}`, `"exit status 3: bad things happened"`, true},
		{"non-zero exit without stderr", "quiet", `{}`, `"exit status 4"`, true},
		{"no arguments", "args", `{}`, `0`, false},
		{"another interpreter", "noshell", `{"m":"x"}`, `{"got": {"m": "x"}}`, false},
		{"output limit", "flood", `{}`, `"agent tool flood printed more than 4194304 bytes on stdout"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := run(t, ws, set, tt.tool, tt.input, 0)
			if string(out.Result) != tt.want || out.IsError != tt.isError {
				t.Errorf("Output = %.200s (isError %v), want %s (isError %v)", out.Result, out.IsError, tt.want, tt.isError)
			}
		})
	}
	t.Run("runs in the workspace", func(t *testing.T) {
		out := run(t, ws, set, "pwd", `{}`, 0)
		real, _ := filepath.EvalSymlinks(ws)
		if string(out.Result) != strconv.Quote(real) && string(out.Result) != strconv.Quote(ws) {
			t.Errorf("pwd = %s, want %s", out.Result, ws)
		}
	})
	t.Run("minimal environment", func(t *testing.T) {
		t.Setenv("AGENT_SDK_TOKEN", "secret-token")
		t.Setenv("OPENAI_API_KEY", "sk-secret")
		out := run(t, ws, set, "env", `{}`, 0)
		var env string
		json.Unmarshal(out.Result, &env)
		if strings.Contains(env, "secret") {
			t.Errorf("the host's secrets leaked into the script's environment:\n%s", env)
		}
		for _, want := range []string{"PATH=", "HOME=" + ws, "AGENT_SDK_TOOL=env", "AGENT_SDK_CALL_ID=tool_env_x", "AGENT_SDK_WORKSPACE=" + ws} {
			if !strings.Contains(env, want) {
				t.Errorf("environment lacks %s:\n%s", want, env)
			}
		}
	})
}

// Hostile input reaches the script byte for byte and runs nothing.
func TestHostileInput(t *testing.T) {
	needPython(t)
	ws, set := setup(t, map[string]string{
		"echo": "#!/usr/bin/env bash\nset -euo pipefail\nmessage=$(python3 -c 'import json,sys; print(json.load(sys.stdin)[\"message\"], end=\"\")')\nprintf '%s' \"$message\"\n",
		"raw":  "#!/bin/sh\ncat\n",
	})
	canary := filepath.Join(ws, "pwned")
	for _, msg := range []string{
		`it's "quoted"`,
		"$(touch " + canary + ")",
		"`touch " + canary + "`",
		"; touch " + canary,
		"line one\nline two\n\ttabbed",
		"$HOME ${PATH} %s %d \\n",
		strings.Repeat("x", 1<<20),
	} {
		input, _ := json.Marshal(map[string]string{"message": msg})
		out := run(t, ws, set, "echo", string(input), 0)
		var got string
		if err := json.Unmarshal(out.Result, &got); err != nil || out.IsError || got != strings.TrimSuffix(msg, "\n") {
			t.Errorf("echo of %.40q: got %.80s (isError %v)", msg, out.Result, out.IsError)
		}
		raw := run(t, ws, set, "raw", string(input), 0)
		if string(raw.Result) != string(input) {
			t.Errorf("raw stdin of %.40q changed on the way: %.80s", msg, raw.Result)
		}
	}
	if _, err := os.Stat(canary); err == nil {
		t.Fatal("hostile input ran a command")
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	ws, set := setup(t, map[string]string{
		// The pid file is written whole or not at all (mv), and the timeout
		// leaves a loaded machine time to start both processes.
		"hang": "#!/bin/sh\nsleep 300 &\necho $! > child.pid.tmp\nmv child.pid.tmp child.pid\nsleep 300\n",
	})
	start := time.Now()
	out := run(t, ws, set, "hang", `{}`, 3*time.Second)
	if !out.IsError || string(out.Result) != `"timed out after 3s"` {
		t.Errorf("Output = %s (isError %v)", out.Result, out.IsError)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("the run took %s after a 3s timeout", d)
	}
	assertDead(t, filepath.Join(ws, "child.pid"))
}

func TestLeftoverChildIsKilled(t *testing.T) {
	ws, set := setup(t, map[string]string{
		"spawn": "#!/bin/sh\nsleep 300 &\necho $! > child.pid\necho done\n",
	})
	out := run(t, ws, set, "spawn", `{}`, 0)
	if out.IsError || string(out.Result) != `"done"` {
		t.Errorf("Output = %s (isError %v)", out.Result, out.IsError)
	}
	assertDead(t, filepath.Join(ws, "child.pid"))
}

// assertDead waits briefly for the process in pidFile to be gone.
func assertDead(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		t.Fatalf("pid file %s holds %q", pidFile, b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		// Kill with signal 0 probes; a zombie reaped by init disappears.
		if err := syscall.Kill(pid, 0); err != nil {
			return
		}
		if stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); strings.Contains(string(stat), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d still runs after the call returned", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMaterialize(t *testing.T) {
	ws, _ := setup(t, map[string]string{"echo": "#!/bin/sh\ncat\n", "other": "#!/bin/sh\necho hi\n"})
	for _, name := range []string{"echo", "other"} {
		fi, err := os.Stat(Path(ws, name))
		if err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: %v, mode %v", name, err, fi.Mode())
		}
	}
	agents, _ := os.ReadFile(filepath.Join(ws, "AGENTS.md"))
	for _, want := range []string{beginMarker, endMarker, "### echo", "Test script echo.", "echo '{}' | .agent-serve/tools/echo", `"type": "object"`} {
		if !strings.Contains(string(agents), want) {
			t.Errorf("AGENTS.md lacks %q:\n%s", want, agents)
		}
	}

	// The user's own text around the generated section is kept, and the
	// section is replaced, not repeated.
	user := "# My workspace\n\nNotes written by hand.\n\n" + string(agents) + "\n## More notes\n\nKeep me.\n"
	os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte(user), 0o644)
	one, _ := tool.NewScript("echo", tool.Config{Description: "Echo, renamed."}, "#!/bin/sh\ncat\n")
	smaller, _ := tool.NewSet(one)
	if err := Materialize(ws, smaller); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(ws, "AGENTS.md"))
	text := string(got)
	if !strings.HasPrefix(text, "# My workspace\n\nNotes written by hand.\n\n"+beginMarker) || !strings.HasSuffix(text, endMarker+"\n\n## More notes\n\nKeep me.\n") {
		t.Errorf("user content not kept:\n%s", text)
	}
	if strings.Count(text, beginMarker) != 1 || strings.Contains(text, "### other") || !strings.Contains(text, "Echo, renamed.") {
		t.Errorf("generated section not replaced:\n%s", text)
	}
	if _, err := os.Stat(Path(ws, "other")); !os.IsNotExist(err) {
		t.Errorf("a tool no longer defined is still on disk: %v", err)
	}

	// A damaged section is reported, not overwritten.
	os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte("notes\n"+beginMarker+"\nhalf\n"), 0o644)
	if err := Materialize(ws, smaller); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("damaged AGENTS.md: %v", err)
	}

	// A set without agent tools touches nothing.
	empty := t.TempDir()
	none, _ := tool.NewSet()
	if err := Materialize(empty, none); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("wrote %d entries for a set without agent tools", len(entries))
	}
}

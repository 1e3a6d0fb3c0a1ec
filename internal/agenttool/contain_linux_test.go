//go:build linux

package agenttool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// sleeper writes its pid to the file $1 names and sleeps.
const sleeper = "#!/bin/sh\necho $$ > \"$1.tmp\"\nmv \"$1.tmp\" \"$1\"\nexec sleep 300\n"

// escapes is a script whose children escape its process group: one with
// setsid, one by a double fork into a new session (its parent exits at
// once), one with setsid that keeps the script's stdout open, and, with
// $ENV_I set, one that also drops its environment (env -i). It waits until
// all have written their pid files, then runs its last line.
func escapes(last string) string {
	return `#!/bin/sh
setsid sh ./sleeper setsid.pid </dev/null >/dev/null 2>&1 &
setsid sh -c 'sh ./sleeper double.pid </dev/null >/dev/null 2>&1 & exit 0' </dev/null >/dev/null 2>&1 &
setsid sh ./sleeper held.pid &
want="setsid.pid double.pid held.pid"
if [ -n "$(cat env_i 2>/dev/null)" ]; then
	setsid env -i /bin/sh ./sleeper clean.pid </dev/null >/dev/null 2>&1 &
	want="$want clean.pid"
fi
for f in $want; do
	while [ ! -s $f ]; do sleep 0.01; done
done
` + last + "\n"
}

// modes runs f, in parallel, with each way of containing a run this
// machine has: a cgroup per run, and the sweep of marked processes.
func modes(t *testing.T, f func(t *testing.T, cgroup bool)) {
	t.Run("cgroup", func(t *testing.T) {
		if cgroupParent() == "" {
			t.Skip("this host cannot make cgroups (cgroup v2 not writable); the sweep is used")
		}
		t.Parallel()
		f(t, true)
	})
	t.Run("sweep", func(t *testing.T) {
		t.Parallel()
		f(t, false)
	})
}

// runIn runs the named tool, in a cgroup or not.
func runIn(t *testing.T, ctx context.Context, cgroup bool, ws string, set *tool.Set, name string, timeout time.Duration) tool.Output {
	t.Helper()
	tl, _ := set.Lookup(name)
	in, err := tl.Validate(json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	return Run(ctx, tl, in, RunOptions{Workspace: ws, Timeout: timeout, noCgroup: !cgroup})
}

// escapeSetup materialises the escapes script with last as its last line,
// and the sleeper.
func escapeSetup(t *testing.T, cgroup bool, last string) (string, *tool.Set, []string) {
	ws, set := setup(t, map[string]string{"escape": escapes(last)})
	if err := os.WriteFile(filepath.Join(ws, "sleeper"), []byte(sleeper), 0o755); err != nil {
		t.Fatal(err)
	}
	pids := []string{"setsid.pid", "double.pid", "held.pid"}
	if cgroup {
		// Only a cgroup holds a process that drops its environment.
		if err := os.WriteFile(filepath.Join(ws, "env_i"), []byte("1"), 0o644); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, "clean.pid")
	}
	for i, p := range pids {
		pids[i] = filepath.Join(ws, p)
	}
	return ws, set, pids
}

// No process a script starts outlives its call, however it left the
// script's process group, whether the script exits, times out or is
// cancelled.
func TestEscapedDescendantsAreKilled(t *testing.T) {
	modes(t, func(t *testing.T, cgroup bool) {
		t.Run("exit", func(t *testing.T) {
			t.Parallel()
			ws, set, pids := escapeSetup(t, cgroup, "echo started")
			out := runIn(t, context.Background(), cgroup, ws, set, "escape", time.Minute)
			if out.IsError || string(out.Result) != `"started"` {
				t.Errorf("Output = %s (isError %v)", out.Result, out.IsError)
			}
			assertAllDead(t, pids)
		})
		t.Run("timeout", func(t *testing.T) {
			t.Parallel()
			// The script must start its children within the timeout; on
			// a machine so loaded that it does not, the test fails saying
			// so rather than pass without checking.
			ws, set, pids := escapeSetup(t, cgroup, "sleep 300")
			out := runIn(t, context.Background(), cgroup, ws, set, "escape", 3*time.Second)
			if !out.IsError || string(out.Result) != `"timed out after 3s"` {
				t.Errorf("Output = %s (isError %v)", out.Result, out.IsError)
			}
			assertAllDead(t, pids)
		})
		t.Run("cancel", func(t *testing.T) {
			t.Parallel()
			ws, set, pids := escapeSetup(t, cgroup, "sleep 300")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				waitForFiles(t, pids)
				cancel()
			}()
			out := runIn(t, ctx, cgroup, ws, set, "escape", time.Minute)
			if !out.IsError || !strings.HasPrefix(string(out.Result), `"cancelled`) {
				t.Errorf("Output = %s (isError %v)", out.Result, out.IsError)
			}
			assertAllDead(t, pids)
		})
	})
}

// Ending one call kills its processes only: the host runs many at once.
func TestEndingACallSparesOtherCalls(t *testing.T) {
	modes(t, func(t *testing.T, cgroup bool) {
		long, longSet, longPids := escapeSetup(t, cgroup, "while [ ! -e release ]; do sleep 0.01; done; echo released")
		short, shortSet, shortPids := escapeSetup(t, cgroup, "echo started")
		var wg sync.WaitGroup
		var out tool.Output
		wg.Go(func() { out = runIn(t, context.Background(), cgroup, long, longSet, "escape", time.Minute) })
		waitForFiles(t, longPids)
		runIn(t, context.Background(), cgroup, short, shortSet, "escape", time.Minute)
		assertAllDead(t, shortPids)
		for _, p := range longPids {
			if pid := readPid(t, p); !alive(pid) {
				t.Errorf("ending another call killed %s (%d)", filepath.Base(p), pid)
			}
		}
		if err := os.WriteFile(filepath.Join(long, "release"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if string(out.Result) != `"released"` {
			t.Errorf("Output = %s", out.Result)
		}
		assertAllDead(t, longPids)
	})
}

// A run starts in a cgroup of its own, removed when it ends.
func TestRunCgroup(t *testing.T) {
	parent := cgroupParent()
	if parent == "" {
		t.Skip("this host cannot make cgroups")
	}
	ws, set := setup(t, map[string]string{"where": "#!/bin/sh\ncat /proc/self/cgroup\n"})
	out := run(t, ws, set, "where", `{}`, 0)
	var cg string
	json.Unmarshal(out.Result, &cg)
	if !strings.Contains(cg, "/agent-sdk-"+strconv.Itoa(os.Getpid())+"-") {
		t.Errorf("the script ran in %q, not a cgroup of its own", cg)
	}
	left, _ := filepath.Glob(filepath.Join(parent, "agent-sdk-"+strconv.Itoa(os.Getpid())+"-*"))
	if len(left) > 0 {
		t.Errorf("cgroups left behind: %v", left)
	}
}

// A script that cannot start reports it, with or without cgroups.
func TestStartFailure(t *testing.T) {
	modes(t, func(t *testing.T, cgroup bool) {
		ws, set := setup(t, map[string]string{"gone": "#!/bin/sh\necho hi\n"})
		os.Remove(Path(ws, "gone"))
		out := runIn(t, context.Background(), cgroup, ws, set, "gone", 0)
		if !out.IsError || !strings.Contains(string(out.Result), "starting agent tool gone") {
			t.Errorf("Output = %s (isError %v)", out.Result, out.IsError)
		}
		if cgroup && cgroupParent() == "" {
			t.Error("a script that is not there turned cgroups off")
		}
	})
}

func TestHasEntry(t *testing.T) {
	env := []byte("A=1\x00AGENT_SDK_RUN_ID=abc\x00B=2\x00")
	for _, tt := range []struct {
		entry string
		want  bool
	}{
		{"AGENT_SDK_RUN_ID=abc", true},
		{"AGENT_SDK_RUN_ID=ab", false},
		{"GENT_SDK_RUN_ID=abc", false},
		{"B=2", true},
	} {
		if got := hasEntry(env, []byte(tt.entry)); got != tt.want {
			t.Errorf("hasEntry(%q) = %v", tt.entry, got)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/sys/fs/cgroup/a\040b\`); got != `/sys/fs/cgroup/a b\` {
		t.Errorf("got %q", got)
	}
}

func readPid(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return pid
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// assertAllDead asserts that none of the processes in the pid files runs
// any more: Run returns once they are gone, so there is no waiting.
func assertAllDead(t *testing.T, files []string) {
	t.Helper()
	for _, f := range files {
		if pid := readPid(t, f); alive(pid) {
			t.Errorf("%s (%d) still runs after the call returned", filepath.Base(f), pid)
			_ = syscall.Kill(pid, syscall.SIGKILL) // leave nothing behind
		}
	}
}

func waitForFiles(t *testing.T, files []string) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		all := true
		for _, f := range files {
			if b, err := os.ReadFile(f); err != nil || len(b) == 0 {
				all = false
			}
		}
		if all {
			return
		}
	}
	t.Errorf("the script did not start its children: %v", files)
}

// BenchmarkRun measures a run of a script that leaves nothing behind, with
// each way of containing it:
//
//	go test ./internal/agenttool -run '^$' -bench Run
func BenchmarkRun(b *testing.B) {
	tl, err := tool.NewScript("hi", tool.Config{Description: "d"}, "#!/bin/sh\necho hi\n")
	if err != nil {
		b.Fatal(err)
	}
	set, _ := tool.NewSet(tl)
	ws := b.TempDir()
	if err := Materialize(ws, set); err != nil {
		b.Fatal(err)
	}
	in, _ := tl.Validate(nil)
	bench := func(b *testing.B, cgroup bool) {
		for b.Loop() {
			if out := Run(context.Background(), tl, in, RunOptions{Workspace: ws, noCgroup: !cgroup}); out.IsError {
				b.Fatal(string(out.Result))
			}
		}
	}
	b.Run("cgroup", func(b *testing.B) {
		if cgroupParent() == "" {
			b.Skip("no cgroups")
		}
		bench(b, true)
	})
	b.Run("sweep", func(b *testing.B) { bench(b, false) })
}

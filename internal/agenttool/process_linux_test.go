//go:build linux

package agenttool

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// tree is a harness's process tree: it starts a child in its group, one
// in a session of its own (setsid) and, with $ENV_I set, one that also
// drops its environment (env -i); each writes its pid file. Then it runs
// its last line.
func tree(last string) string {
	return `#!/bin/sh
sh ./sleeper group.pid &
setsid sh ./sleeper setsid.pid </dev/null >/dev/null 2>&1 &
if [ -n "$ENV_I" ]; then
	setsid env -i /bin/sh ./sleeper clean.pid </dev/null >/dev/null 2>&1 &
fi
` + last + "\n"
}

// treeCmd writes the tree and the sleeper into a fresh directory and
// returns a command that runs the tree there, with the pid files its
// processes write: the tree itself (tree.pid) and its children.
func treeCmd(t *testing.T, cgroup bool, last string) (*exec.Cmd, []string) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{"tree": tree(last), "sleeper": sleeper} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("/bin/sh", "./tree") // not exec of ./tree: a parallel fork may hold its written file (ETXTBSY)
	cmd.Dir = dir
	names := []string{"tree.pid", "group.pid", "setsid.pid"}
	if cgroup {
		// Only a cgroup holds a process that drops its environment.
		cmd.Env = append(os.Environ(), "ENV_I=1")
		names = append(names, "clean.pid")
	}
	pids := make([]string, len(names))
	for i, n := range names {
		pids[i] = filepath.Join(dir, n)
	}
	return cmd, pids
}

// startTree starts the tree contained and waits until all its processes
// run.
func startTree(t *testing.T, cgroup bool, last string, opts ProcessOptions) (*Process, []string) {
	t.Helper()
	cmd, pids := treeCmd(t, cgroup, last)
	opts.noCgroup = !cgroup
	p, err := StartProcess(cmd, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		p.Wait()
	})
	waitForFiles(t, pids)
	return p, pids
}

// Kill kills the whole tree, however its processes left the group, and
// forgets the run; Signal reaches the group only.
func TestProcessKill(t *testing.T) {
	modes(t, func(t *testing.T, cgroup bool) {
		records := t.TempDir()
		p, pids := startTree(t, cgroup, "exec sh ./sleeper tree.pid", ProcessOptions{Records: records})
		run := runOf(t, records, os.Getpid())
		if cgroup != (run.Cgroup != "") {
			t.Errorf("the run's cgroup is %q in a run with cgroup %v", run.Cgroup, cgroup)
		}
		if cgroup {
			procs, err := os.ReadFile(filepath.Join(run.Cgroup, "cgroup.procs"))
			if err != nil || !slices.Contains(strings.Fields(string(procs)), strconv.Itoa(p.Pid())) {
				t.Errorf("process %d is not in its run's cgroup %s: %q, %v", p.Pid(), run.Cgroup, procs, err)
			}
		}
		if pid := readPid(t, pids[0]); pid != p.Pid() {
			t.Errorf("Pid = %d; the tree runs as %d", p.Pid(), pid)
		}

		// The tree ignores SIGTERM; its group's sleepers die of it.
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("Signal = %v", err)
		}
		if err := p.Wait(); err == nil || !strings.Contains(err.Error(), "terminated") {
			t.Errorf("Wait = %v; want the process terminated", err)
		}
		assertAllDead(t, pids) // Wait kills what the process left

		if left, _ := os.ReadDir(records); len(left) != 0 {
			t.Errorf("records left after the run ended: %v", left)
		}
		if _, err := os.Stat(run.Cgroup); run.Cgroup != "" && !os.IsNotExist(err) {
			t.Errorf("the run's cgroup %s is still there: %v", run.Cgroup, err)
		}
		if err := p.Kill(); err != nil {
			t.Errorf("Kill after Wait = %v", err)
		}
		if err := p.Signal(syscall.SIGTERM); !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("Signal after the end = %v; want os.ErrProcessDone", err)
		}
	})
}

// Kill of a process that ignores SIGTERM kills it and all its tree at
// once, and Wait then returns.
func TestProcessKillIgnoringTerm(t *testing.T) {
	modes(t, func(t *testing.T, cgroup bool) {
		ignore := "trap '' TERM; echo $$ > tree.pid.tmp; mv tree.pid.tmp tree.pid; while :; do sleep 1; done"
		p, pids := startTree(t, cgroup, ignore, ProcessOptions{})
		waited := make(chan error, 1)
		go func() { waited <- p.Wait() }()
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("Signal = %v", err)
		}
		if pid := readPid(t, pids[0]); !alive(pid) {
			t.Fatalf("the tree %d died of SIGTERM, which it ignores", pid)
		}
		if err := p.Kill(); err != nil {
			t.Errorf("Kill = %v", err)
		}
		assertAllDead(t, pids) // Kill returns once they are gone
		if err := p.Kill(); err != nil {
			t.Errorf("Kill again = %v", err)
		}
		if err := <-waited; err == nil || !strings.Contains(err.Error(), "killed") {
			t.Errorf("Wait = %v; want the process killed", err)
		}
	})
}

// A process that exits leaves nothing running: Wait kills its children.
func TestProcessWaitKillsLeftovers(t *testing.T) {
	modes(t, func(t *testing.T, cgroup bool) {
		cmd, pids := treeCmd(t, cgroup, "while [ ! -e release ]; do sleep 0.01; done; echo $$ > tree.pid")
		cmd.Env = append(cmd.Environ(), "HARNESS=1")
		p, err := StartProcess(cmd, ProcessOptions{noCgroup: !cgroup})
		if err != nil {
			t.Fatal(err)
		}
		waitForFiles(t, pids[1:])
		if err := os.WriteFile(filepath.Join(cmd.Dir, "release"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(); err != nil {
			t.Errorf("Wait = %v", err)
		}
		assertAllDead(t, pids)
		marked := slices.ContainsFunc(cmd.Env, func(e string) bool { return strings.HasPrefix(e, runIDVar+"=") })
		if !slices.Contains(cmd.Env, "HARNESS=1") || !marked {
			t.Errorf("the command's environment is not the caller's and the mark: %q", cmd.Env)
		}
	})
}

// A command that cannot start is reported, and leaves no record.
func TestStartProcessFailure(t *testing.T) {
	modes(t, func(t *testing.T, cgroup bool) {
		records := t.TempDir()
		cmd := exec.Command(filepath.Join(t.TempDir(), "missing"))
		_, err := StartProcess(cmd, ProcessOptions{Records: records, noCgroup: !cgroup})
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("StartProcess = %v; want a missing file", err)
		}
		if left, _ := os.ReadDir(records); len(left) != 0 {
			t.Errorf("records left: %v", left)
		}
		if cgroup && cgroupParent() == "" {
			t.Error("a command that is not there turned cgroups off")
		}
	})
}

// The helper process host: this test binary, run again with
// $AGENTTOOL_PROCESS_HOST set to a directory, starts the tree there
// contained, recording it in $AGENTTOOL_HOST_RECORDS, and waits until it
// is killed.
const processHostVar = "AGENTTOOL_PROCESS_HOST"

func TestHelperProcessHost(t *testing.T) {
	dir := os.Getenv(processHostVar)
	if dir == "" {
		t.Skip("the helper host of TestProcessReap")
	}
	cmd := exec.Command("/bin/sh", "./tree") // not exec of ./tree: a parallel fork may hold its written file (ETXTBSY)
	cmd.Dir = dir
	p, err := StartProcess(cmd, ProcessOptions{Records: os.Getenv(hostRecordsVar), noCgroup: os.Getenv(hostCgroupVar) == ""})
	if err != nil {
		t.Fatal(err)
	}
	p.Wait()
}

// processHost starts a helper host running the tree, recording into
// records, and returns it with the tree's pid files once all run.
func processHost(t *testing.T, cgroup bool, records string) (*exec.Cmd, []string) {
	t.Helper()
	tc, pids := treeCmd(t, cgroup, "exec sh ./sleeper tree.pid")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessHost$")
	// The helper host starts the tree with its own environment.
	cmd.Env = append(os.Environ(), processHostVar+"="+tc.Dir, hostRecordsVar+"="+records)
	if cgroup {
		cmd.Env = append(cmd.Env, hostCgroupVar+"=1", "ENV_I=1")
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		for _, f := range pids {
			if b, err := os.ReadFile(f); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	})
	waitForFiles(t, pids)
	return cmd, pids
}

// A host killed with SIGKILL leaves its contained process's tree running;
// the next host's Reap kills all of it, and leaves a live host's alone.
func TestProcessReap(t *testing.T) {
	modes(t, func(t *testing.T, cgroup bool) {
		records := t.TempDir()
		dead, deadPids := processHost(t, cgroup, records)
		live, livePids := processHost(t, cgroup, records)
		deadRun := runOf(t, records, dead.Process.Pid)
		liveRun := runOf(t, records, live.Process.Pid)
		if cgroup && (deadRun.Cgroup == "" || liveRun.Cgroup == "") {
			t.Fatalf("runs recorded without their cgroups: %+v %+v", deadRun, liveRun)
		}
		dead.Process.Kill()
		dead.Wait()
		for _, f := range deadPids {
			if pid := readPid(t, f); !alive(pid) {
				t.Fatalf("%s (%d) died with its host: nothing to reap", filepath.Base(f), pid)
			}
		}

		if n, err := Reap(records); err != nil || n != 1 {
			t.Errorf("Reap = %d, %v; want 1 run ended", n, err)
		}
		assertAllDead(t, deadPids) // Reap returns once they are gone
		if _, err := os.Stat(deadRun.Cgroup); deadRun.Cgroup != "" && !os.IsNotExist(err) {
			t.Errorf("the dead host's cgroup %s is still there after Reap: %v", deadRun.Cgroup, err)
		}
		for _, f := range livePids {
			if pid := readPid(t, f); !alive(pid) {
				t.Errorf("Reap killed %s (%d) of a live host", filepath.Base(f), pid)
			}
		}
		if again := runOf(t, records, live.Process.Pid); again.Mark != liveRun.Mark {
			t.Errorf("Reap forgot a live host's run")
		}

		live.Process.Kill()
		live.Wait()
		if n, err := Reap(records); err != nil || n != 1 {
			t.Errorf("Reap = %d, %v; want 1 run ended", n, err)
		}
		assertAllDead(t, livePids)
		if left, _ := os.ReadDir(records); len(left) != 0 {
			t.Errorf("records left: %v", left)
		}
	})
}

//go:build linux

package agenttool

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// The helper host: this test binary, run again with these variables set,
// runs the linger script in $AGENTTOOL_HOST_WS, recording the run in
// $AGENTTOOL_HOST_RECORDS, until it is killed.
const (
	hostWSVar      = "AGENTTOOL_HOST_WS"
	hostRecordsVar = "AGENTTOOL_HOST_RECORDS"
	hostCgroupVar  = "AGENTTOOL_HOST_CGROUP"
)

// linger leaves a child running outside its process group, writes its
// pid (whole or not at all) and blocks.
const linger = "#!/bin/sh\nsetsid sh -c 'echo $$ > child.pid.tmp; mv child.pid.tmp child.pid; exec sleep 300' </dev/null >/dev/null 2>&1 &\nexec sleep 300\n"

func TestHelperHost(t *testing.T) {
	ws := os.Getenv(hostWSVar)
	if ws == "" {
		t.Skip("the helper host of TestReap")
	}
	tl, _ := tool.NewScript("linger", tool.Config{Description: "d", Timeout: time.Hour}, linger)
	in, _ := tl.Validate(json.RawMessage(`{}`))
	Run(context.Background(), tl, in, RunOptions{Workspace: ws, Records: os.Getenv(hostRecordsVar), noCgroup: os.Getenv(hostCgroupVar) == ""})
}

// helperHost starts a helper host running linger in a workspace of its
// own, recording into records, and returns it with its script's child's
// pid file once the child runs.
func helperHost(t *testing.T, cgroup bool, records string) (*exec.Cmd, string) {
	t.Helper()
	ws, _ := setup(t, map[string]string{"linger": linger})
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHost$")
	cmd.Env = append(os.Environ(), hostWSVar+"="+ws, hostRecordsVar+"="+records)
	if cgroup {
		cmd.Env = append(cmd.Env, hostCgroupVar+"=1")
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(ws, "child.pid")
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if b, err := os.ReadFile(pidFile); err == nil {
			var pid int
			json.Unmarshal(b, &pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	waitForFiles(t, []string{pidFile})
	return cmd, pidFile
}

// A host that starts after another died ends the dead host's runs, their
// cgroups and temp dirs, and leaves those of a live host that shares the
// state directory.
func TestReap(t *testing.T) {
	modes(t, func(t *testing.T, cgroup bool) {
		records := t.TempDir()
		dead, deadChild := helperHost(t, cgroup, records)
		live, liveChild := helperHost(t, cgroup, records)
		deadRun := runOf(t, records, dead.Process.Pid)
		liveRun := runOf(t, records, live.Process.Pid)
		if cgroup && (deadRun.Cgroup == "" || liveRun.Cgroup == "") {
			t.Fatalf("runs recorded without their cgroups: %+v %+v", deadRun, liveRun)
		}
		dead.Process.Kill()
		dead.Wait()
		if pid := readPid(t, deadChild); !alive(pid) {
			t.Fatalf("the child %d died with its host: nothing to reap", pid)
		}

		n, err := Reap(records)
		if err != nil || n != 1 {
			t.Errorf("Reap = %d, %v; want 1 run ended", n, err)
		}
		assertAllDead(t, []string{deadChild}) // Reap returns once they are gone
		for _, p := range []string{deadRun.Cgroup, deadRun.Tmp} {
			if _, err := os.Stat(p); p != "" && !os.IsNotExist(err) {
				t.Errorf("%s is still there after Reap: %v", p, err)
			}
		}
		if pid := readPid(t, liveChild); !alive(pid) {
			t.Errorf("Reap killed the child %d of a live host", pid)
		}
		if again := runOf(t, records, live.Process.Pid); again.Mark != liveRun.Mark {
			t.Errorf("Reap forgot a live host's run")
		}
		if _, err := os.Stat(liveRun.Cgroup); liveRun.Cgroup != "" && err != nil {
			t.Errorf("Reap removed a live host's cgroup: %v", err)
		}

		// Once that host is gone too, its run goes the same way.
		live.Process.Kill()
		live.Wait()
		if n, err := Reap(records); err != nil || n != 1 {
			t.Errorf("Reap = %d, %v; want 1 run ended", n, err)
		}
		assertAllDead(t, []string{liveChild})
		if left, _ := os.ReadDir(records); len(left) != 0 {
			t.Errorf("records left: %v", left)
		}
	})
}

// runOf returns the record of the run of the host pid.
func runOf(t *testing.T, records string, pid int) runRecord {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(records, "*.json"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		var r runRecord
		if json.Unmarshal(b, &r) == nil && r.Host.Pid == pid {
			return r
		}
	}
	t.Fatalf("no run of host %d recorded in %s", pid, records)
	return runRecord{}
}

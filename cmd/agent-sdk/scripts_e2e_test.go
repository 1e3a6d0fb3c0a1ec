//go:build linux

package main_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"golang.org/x/sys/unix"
)

// The agent of the script tests: init's, with the tools of
// testdata/scripts (linger), built once.
var scriptsBuild struct {
	once     sync.Once
	dir, bin string
	err      error
}

func scriptsAgent(t *testing.T) (dir, bin string) {
	t.Helper()
	scriptsBuild.once.Do(func() {
		dir := filepath.Join(filepath.Dir(cliBin), "scripts") // removed with TestMain's directory
		if err := newAgent(dir); err != nil {
			scriptsBuild.err = err
			return
		}
		if err := addFixtures(dir, "scripts", "model:\n  provider: anthropic\n  name: fake-model\nmaxSteps: 4\n"); err != nil {
			scriptsBuild.err = err
			return
		}
		bin, err := buildFixtureAgent(dir, false)
		if err != nil {
			scriptsBuild.err = err
			return
		}
		scriptsBuild.dir, scriptsBuild.bin = dir, bin
	})
	if scriptsBuild.err != nil {
		t.Fatal(scriptsBuild.err)
	}
	return scriptsBuild.dir, scriptsBuild.bin
}

// lingering is a linger call running in a session of a host: the
// session's workspace, the child it left running and the cgroup it runs
// in ("" where the host makes none).
type lingering struct {
	ws     string
	child  int
	cgroup string
}

// startLinger opens a session on p whose model calls linger, and waits
// until the script has started its child.
func startLinger(t *testing.T, p *agentProc, state, marker string) *lingering {
	t.Helper()
	ctx := context.Background()
	status, v, err := apiDo(ctx, p.base, "POST", "/session", `{}`)
	sid, _ := v["sessionId"].(string)
	if err != nil || status != 201 || sid == "" {
		t.Fatalf("opening a session: %d %v %v", status, v, err)
	}
	if status, v, err := apiDo(ctx, p.base, "POST", "/session/"+sid+"/messages", fmt.Sprintf(`{"message":%q}`, marker)); err != nil || status >= 300 {
		t.Fatalf("sending the message: %d %v %v", status, v, err)
	}
	l := &lingering{ws: filepath.Join(state, "sessions", sid, "workspace")}
	pidFile := filepath.Join(l.ws, "child.pid")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil {
			if l.child, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
				t.Fatalf("child.pid: %q", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("linger did not start its child in session %s:\n%s", sid, p.logTail(30))
		}
	}
	cg, err := os.ReadFile(filepath.Join(l.ws, "cgroup"))
	if err != nil {
		t.Fatal(err)
	}
	l.cgroup = runCgroup(string(cg))
	t.Cleanup(func() { l.end() }) // whatever the test found, leave nothing running
	return l
}

// end kills what the call left, if anything.
func (l *lingering) end() {
	if l.cgroup != "" {
		os.WriteFile(filepath.Join(l.cgroup, "cgroup.kill"), []byte("1"), 0)
		for i := 0; i < 100 && syscall.Rmdir(l.cgroup) == syscall.EBUSY; i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
	syscall.Kill(l.child, syscall.SIGKILL)
}

// runCgroup returns the directory of the cgroup a /proc/<pid>/cgroup
// names, if it is a run's own (agent-sdk-…), else "".
func runCgroup(procCgroup string) string {
	var rel string
	for line := range strings.Lines(procCgroup) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			rel = p
		}
	}
	if !strings.HasPrefix(filepath.Base(rel), "agent-sdk-") {
		return ""
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, _ := strings.Cut(sc.Text(), " - ")
		if fields := strings.Fields(pre); strings.HasPrefix(post, "cgroup2 ") && len(fields) >= 5 && fields[3] == "/" {
			return filepath.Join(fields[4], rel)
		}
	}
	return ""
}

// procAlive reports whether pid runs (a zombie does not).
func procAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// TestScriptsDieWithTheirHost: a host SIGKILLed while a script runs a
// child that left its process group, started again on the same state
// directory, kills that child and removes the run's cgroup; a second host,
// alive on the machine, keeps its own run. The script, meanwhile, could
// read neither another session's workspace nor the store, nor write beside
// them.
func TestScriptsDieWithTheirHost(t *testing.T) {
	t.Parallel()
	dir, bin := scriptsAgent(t)
	model := fakemodel.NewRouter()
	t.Cleanup(model.Close)
	model.Route("session-alpha", fakemodel.Reply{Calls: []fakemodel.Call{{ID: "toolu_alpha", Name: "linger", Input: `{}`}}})
	model.Route("session-beta", fakemodel.Reply{Calls: []fakemodel.Call{{ID: "toolu_beta", Name: "linger", Input: `{}`}}})
	env := []string{"ANTHROPIC_BASE_URL=" + model.URL, "ANTHROPIC_API_KEY=test-key"}
	stateA, stateB := t.TempDir(), t.TempDir()
	other := filepath.Join(stateA, "sessions", "other", "workspace")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "secret.txt"), []byte("another session's secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	specA := agentSpec{bin: bin, dir: dir, state: stateA, env: env, args: []string{"--lease-ttl", "1s"}}
	specB := agentSpec{bin: bin, dir: dir, state: stateB, env: env, args: []string{"--lease-ttl", "1s"}}
	hostA, hostB := specA.start(t), specB.start(t)
	a := startLinger(t, hostA, stateA, "session-alpha")
	b := startLinger(t, hostB, stateB, "session-beta")
	if a.cgroup == "" {
		t.Log("the hosts make no cgroups here: their runs are swept by their mark")
	}

	hostA.kill(t)
	if !procAlive(a.child) {
		t.Fatalf("the child %d died with the host: nothing left to check", a.child)
	}
	specA.start(t)
	gone := func() bool {
		if procAlive(a.child) {
			return false
		}
		_, err := os.Stat(a.cgroup)
		return a.cgroup == "" || os.IsNotExist(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !gone() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if procAlive(a.child) {
		t.Errorf("the child %d of the killed host's script still runs after the restart", a.child)
	}
	if _, err := os.Stat(a.cgroup); a.cgroup != "" && err == nil {
		t.Errorf("the killed host's run cgroup %s is still there after the restart", a.cgroup)
	}
	if !procAlive(b.child) {
		t.Errorf("the restart killed the child %d of a live host's script", b.child)
	}
	if _, err := os.Stat(b.cgroup); b.cgroup != "" && err != nil {
		t.Errorf("the restart removed a live host's run cgroup: %v", err)
	}

	for _, l := range []*lingering{a, b} {
		peek, err := os.ReadFile(filepath.Join(l.ws, "peek"))
		if err != nil {
			t.Fatal(err)
		}
		if len(peek) > 0 && isolated(t) {
			t.Errorf("a script reached outside its session's workspace:\n%s", peek)
		}
	}
}

// isolated reports whether this kernel lets a host confine its scripts
// (Landlock ABI 3 or later), saying so where it does not.
func isolated(t *testing.T) bool {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 || abi < 3 {
		t.Logf("NOT CHECKED: this kernel has no Landlock ABI 3 (%d, %v): scripts run unconfined, as README says", abi, errno)
		return false
	}
	return true
}

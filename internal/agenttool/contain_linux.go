//go:build linux

package agenttool

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// On Linux every process a script starts is killed when its call ends,
// and every process a process of [StartProcess] starts when it is killed
// or exits, including those that leave its process group (setsid, a
// daemon's double fork), which a kill of the group misses:
//
//   - Where the host may create cgroups (cgroup v2, its own cgroup's
//     directory writable: a root host on a machine or VM, a container with
//     a writable, delegated /sys/fs/cgroup), each run starts in a cgroup of
//     its own, <host's cgroup>/agent-sdk-<host pid>-<run id>, and ends with
//     cgroup.kill (every process in it, however it forked; the cgroup is
//     then removed). No process of the run can leave it without writing to
//     cgroup files itself.
//   - Elsewhere (a read-only /sys/fs/cgroup, as in a default Docker
//     container; cgroup v1 only; a kernel before 5.7) each run is marked by
//     AGENT_SDK_RUN_ID=<run id> in the script's environment, which its
//     descendants inherit through fork, setsid and reparenting, and ends
//     with a sweep of /proc that kills every process bearing the mark,
//     until none is left. A process that replaces its environment (env -i,
//     a program that execs with an environment of its own) escapes it.
//
// Both are per run: the host runs many calls at once, and ending one kills
// only that call's processes. Neither makes the host a child subreaper: an
// adopted orphan would be the host's child to reap, and reaping children
// the host did not start races os/exec's own waits. Both are found again
// after the host dies, by the run's record (reap_linux.go): its cgroup's
// path and its mark.

// runIDVar names the environment variable that marks a run's processes.
const runIDVar = "AGENT_SDK_RUN_ID"

// containment is what keeps one run's processes together, and confines
// them.
type containment struct {
	id     string
	cgroup string // the run's cgroup directory; "" for none
	fd     int    // the cgroup directory, open until the script starts; -1 for none
	tmp    string // the run's temp dir; "" for none (not confined)
	jail   *jail  // the run's Landlock ruleset; nil for none
	record string // the run's record (reap_linux.go); "" for none
	ran    bool   // the script started
	killed bool
}

// newContainment prepares a run's containment: its record where opts ask
// for one, a cgroup when the host may create one and start processes in
// it (and opts allow), a Landlock ruleset and a temp dir of its own where
// opts ask to confine and the kernel can, the environment mark always.
func newContainment(opts containOptions) (*containment, error) {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	c := &containment{id: hex.EncodeToString(b[:]), fd: -1}
	name := "agent-sdk-" + strconv.Itoa(os.Getpid()) + "-" + c.id
	var cgroup string
	if parent := cgroupParent(); parent != "" && !opts.noCgroup {
		cgroup = filepath.Join(parent, name)
	}
	if opts.confine && isolating() {
		c.tmp = filepath.Join(os.TempDir(), name)
	}
	// The record comes first: a host killed from here on leaves nothing
	// its successor does not find. (If the run ends up without the cgroup
	// it names, Reap finds its processes by the mark.)
	if opts.records != "" {
		path, err := record(opts.records, runRecord{Host: self(), Mark: c.id, Cgroup: cgroup, Tmp: c.tmp})
		if err != nil {
			return nil, fmt.Errorf("recording the run: %w", err)
		}
		c.record = path
	}
	if c.tmp != "" {
		if err := os.Mkdir(c.tmp, 0o700); err != nil {
			c.release()
			return nil, fmt.Errorf("making the run's temp dir: %w", err)
		}
		j, err := newJail(opts.workspace, c.tmp, opts.private)
		if err != nil {
			c.release()
			return nil, err
		}
		c.jail = j
	}
	if cgroup == "" {
		return c, nil
	}
	if err := os.Mkdir(cgroup, 0o755); err != nil {
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS) {
			cgroupsOff.Store(true) // not writable: do not try again
		}
		return c, nil
	}
	fd, err := unix.Open(cgroup, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Rmdir(cgroup)
		return c, nil
	}
	if !canStartIn(fd) {
		_ = unix.Close(fd)
		_ = unix.Rmdir(cgroup)
		return c, nil
	}
	c.cgroup, c.fd = cgroup, fd
	return c, nil
}

var cgroupProbe sync.Once

// canStartIn reports whether the host can start processes in the cgroup
// fd opens (clone3 with CLONE_INTO_CGROUP: Linux 5.7, and no seccomp
// filter refusing clone3), finding out once per host: it starts a process
// there whose exec must fail with ENOTDIR, which tells a clone that worked
// from one that did not. Where it cannot, cgroups are off: a run cannot
// try to start twice ([StartProcess] starts its caller's command, whose
// pipes a failed start closes).
func canStartIn(fd int) bool {
	cgroupProbe.Do(func() {
		p, err := os.StartProcess("/dev/null/agent-sdk-probe", []string{"agent-sdk-probe"}, &os.ProcAttr{
			Sys: &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd},
		})
		if p != nil { // cannot happen: nothing runs at that path
			_ = p.Kill()
			_, _ = p.Wait()
			return
		}
		if !errors.Is(err, unix.ENOTDIR) {
			cgroupsOff.Store(true)
		}
	})
	return !cgroupsOff.Load()
}

// prepare makes cmd start contained.
func (c *containment) prepare(cmd *exec.Cmd) {
	cmd.Env = append(cmd.Env, runIDVar+"="+c.id)
	if c.tmp != "" {
		cmd.Env = append(cmd.Env, "TMPDIR="+c.tmp) // the last of a key wins
	}
	if c.fd >= 0 {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = c.fd
	}
}

// start starts cmd, confined where the run is.
func (c *containment) start(cmd *exec.Cmd) error {
	if c.jail == nil {
		return cmd.Start()
	}
	return c.jail.start(cmd)
}

// started releases what starting the script needed, and notes whether it
// started.
func (c *containment) started(ok bool) {
	c.ran = ok
	if c.fd >= 0 {
		_ = unix.Close(c.fd)
		c.fd = -1
	}
}

// kill kills every process of the run that is still alive and returns once
// they are gone (bounded: a process stuck in the kernel may outlive it),
// then forgets the run. It reports a cgroup it could not kill (the sweep
// then killed the marked processes) and processes the sweep left alive.
// Calling it again does nothing.
func (c *containment) kill() error {
	if c.killed {
		return nil
	}
	c.killed = true
	if c.fd >= 0 {
		_ = unix.Close(c.fd)
		c.fd = -1
	}
	var err error
	if c.cgroup != "" {
		if err = killCgroup(c.cgroup); err != nil {
			err = fmt.Errorf("killing the run's cgroup: %w", err)
		}
	}
	if (c.cgroup == "" || err != nil) && c.ran && !sweep(c.id) {
		err = errors.Join(err, errSurvived)
	}
	c.release()
	return err
}

// errSurvived says that processes of a run were still alive after they
// were killed, for as long as the kill waits.
var errSurvived = fmt.Errorf("processes of the run still alive %s after they were killed", killWait)

// release closes the ruleset, removes the temp dir and forgets the run.
func (c *containment) release() {
	c.jail.close()
	c.jail = nil
	if c.tmp != "" {
		_ = os.RemoveAll(c.tmp)
	}
	if c.record != "" {
		_ = os.Remove(c.record)
	}
}

// killWait bounds how long kill waits for the run's processes to die.
const killWait = 2 * time.Second

// killCgroup kills every process in a run's cgroup and removes it; a
// cgroup that is not there is an error of os.ErrNotExist.
func killCgroup(dir string) error {
	if err := unix.Rmdir(dir); err == nil || errors.Is(err, unix.ENOENT) {
		return err // empty: the script left nothing behind
	}
	kill := func() error {
		err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
		if errors.Is(err, os.ErrNotExist) {
			err = killListed(dir) // before Linux 5.14
		}
		return err
	}
	if err := kill(); err != nil {
		return err
	}
	delay := 100 * time.Microsecond
	for deadline := time.Now().Add(killWait); ; {
		err := unix.Rmdir(dir)
		if err == nil || !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(delay)
		delay = min(2*delay, 10*time.Millisecond)
		if err := kill(); err != nil {
			return err
		}
	}
}

// killListed kills the processes a cgroup lists, where there is no
// cgroup.kill; the caller repeats it until the cgroup is empty, for those
// forked meanwhile.
func killListed(dir string) error {
	procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return err
	}
	for _, f := range strings.Fields(string(procs)) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
	return nil
}

// sweep kills the processes that bear the mark of one of the runs ids in
// their environment until none is left alive (a zombie's environment reads
// empty). It stops only after two passes in a row find none: a process
// caught mid-exec can read as unmarked for a moment, and one pass would
// miss it. It reports whether it did, within killWait.
func sweep(ids ...string) bool {
	marks := make([][]byte, len(ids))
	for i, id := range ids {
		marks[i] = []byte(runIDVar + "=" + id)
	}
	delay := 100 * time.Microsecond
	quiet := 0
	for deadline := time.Now().Add(killWait); quiet < 2 && time.Now().Before(deadline); {
		if killMarked(marks) > 0 {
			quiet = 0
		} else {
			quiet++
		}
		time.Sleep(delay)
		delay = min(2*delay, 10*time.Millisecond)
	}
	return quiet >= 2
}

// killMarked sends SIGKILL to every process whose environment holds one of
// marks, and returns how many it found.
func killMarked(marks [][]byte) int {
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	self, n := os.Getpid(), 0
	buf := make([]byte, 16<<10)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		if env := environ(name, &buf); env == nil || !hasAny(env, marks) {
			continue
		}
		if killIfMarked(pid, name, marks, &buf) {
			n++
		}
	}
	return n
}

// killIfMarked kills the process pid if its environment holds one of
// marks. It
// holds a pidfd while it reads the environment again, so that a pid reused
// since it was first read is never killed.
func killIfMarked(pid int, name string, marks [][]byte, buf *[]byte) bool {
	pidfd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ENOSYS):
		pidfd = -1 // before Linux 5.3: kill by pid
	case err != nil:
		return false // gone
	default:
		defer unix.Close(pidfd)
	}
	if env := environ(name, buf); env == nil || !hasAny(env, marks) {
		return false
	}
	if pidfd >= 0 {
		_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
	} else {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	return true
}

// environ reads /proc/<name>/environ into *buf, growing it as need be; nil
// if it cannot be read (the process is gone, or not the host's to read).
func environ(name string, buf *[]byte) []byte {
	fd, err := unix.Open("/proc/"+name+"/environ", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err != nil {
			return nil
		}
		if n == 0 {
			*buf = b
			return b
		}
		b = b[:len(b)+n]
	}
}

// hasAny reports whether a NUL-separated environment holds one of entries.
func hasAny(env []byte, entries [][]byte) bool {
	for _, e := range entries {
		if hasEntry(env, e) {
			return true
		}
	}
	return false
}

// hasEntry reports whether a NUL-separated environment holds entry.
func hasEntry(env, entry []byte) bool {
	for len(env) > 0 {
		var e []byte
		e, env, _ = bytes.Cut(env, []byte{0})
		if bytes.Equal(e, entry) {
			return true
		}
	}
	return false
}

var (
	cgroupsOff  atomic.Bool // the host cannot make or use cgroups
	cgroupsOnce sync.Once
	cgroupsDir  string // the host's own cgroup v2 directory, if writable
)

// cgroupParent returns the directory under which runs' cgroups are made:
// the host process's own cgroup v2 directory, or "" if runs get none.
func cgroupParent() string {
	if cgroupsOff.Load() {
		return ""
	}
	cgroupsOnce.Do(func() { cgroupsDir = findCgroup() })
	return cgroupsDir
}

// findCgroup finds the host process's cgroup v2 directory, if the host may
// write there.
func findCgroup() string {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	var path string
	for line := range strings.Lines(string(self)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			path = p
		}
	}
	if path == "" || strings.HasSuffix(path, "(deleted)") {
		return ""
	}
	mounts, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer mounts.Close()
	sc := bufio.NewScanner(mounts)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional…] - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		f := strings.Fields(pre)
		if len(f) < 5 {
			continue
		}
		root, mountpoint := unescapeMount(f[3]), unescapeMount(f[4])
		rel, ok := strings.CutPrefix(path, root)
		if !ok || (rel != "" && root != "/" && !strings.HasPrefix(rel, "/")) {
			continue
		}
		dir := filepath.Join(mountpoint, rel)
		if unix.Access(dir, unix.W_OK) != nil {
			return ""
		}
		return dir
	}
	return ""
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

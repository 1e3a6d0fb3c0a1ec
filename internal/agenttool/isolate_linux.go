//go:build linux

package agenttool

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// On Linux with Landlock ABI 3 or later (Linux 6.2) a script sees only its
// own session. It runs under a Landlock domain that allows:
//
//   - its workspace: everything but making device files;
//   - a temp dir of the run's own (TMPDIR), removed when the call ends;
//   - reading and executing the system's directories (/usr, /bin, /sbin,
//     /lib*, /etc, /nix/store), those of its PATH and their parents (the
//     roots of version managers: ~/.pyenv for ~/.pyenv/shims), but for
//     top-level and home directories;
//   - reading /proc and /sys, and using /dev/null, /dev/zero, /dev/full,
//     /dev/random, /dev/urandom, /dev/tty and /dev/pts.
//
// Nothing else: not the state directory with the other sessions'
// workspaces and the store, not the host's directory, not /tmp. A system
// or PATH directory that holds the workspace or one of RunOptions.Private
// (the state directory) is left out. With ABI 6 (Linux 6.12) the script
// may not signal processes outside its domain either (the host, other
// calls' scripts). The domain is applied to a thread of the host's own,
// locked to the goroutine that starts the script and ended with it: the
// script inherits it at fork, and no other goroutine ever runs restricted.
// Names and metadata (stat) stay visible, contents do not; a script running
// as root keeps root's other powers.

// landlockABIMin is the Landlock ABI scripts are confined with: 3 is the
// first to govern truncate(2), without which a script could empty the
// store.
const landlockABIMin = 3

// landlockABI returns the kernel's Landlock ABI version, 0 for none.
var landlockABI = sync.OnceValue(func() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
})

// Isolation describes how scripts are confined on this machine, for a
// host to say at startup: "" where they see only their own session, else
// why they do not.
func Isolation() string {
	if abi := landlockABI(); abi < landlockABIMin {
		return fmt.Sprintf("agent tools can read and write everything the host can (other sessions' workspaces, the store): this kernel has no Landlock ABI %d (found %d; Linux 6.2 or later with landlock in lsm=)", landlockABIMin, abi)
	}
	return ""
}

// isolating reports whether runs are confined.
func isolating() bool { return landlockABI() >= landlockABIMin }

// Landlock's rights to files, as this package groups them.
const (
	fsReadExec = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	fsRead     = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	fsDevice   = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	fsDevices  = unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK
)

// handledFS is every right to files the ABI knows.
func handledFS(abi int) uint64 {
	h := uint64(0x1fff) // ABI 1: EXECUTE … MAKE_SYM
	if abi >= 2 {
		h |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		h |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return h
}

// systemDirs are read and executed by scripts where they exist.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/nix/store", "/run/systemd/resolve"}

// deviceFiles are read and written by scripts where they exist.
var deviceFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

// rulesetAttr is struct landlock_ruleset_attr up to ABI 6.
type rulesetAttr struct {
	fs, net, scoped uint64
}

// jail is the Landlock ruleset of one run.
type jail struct {
	fd int
}

// newJail makes the ruleset of a run in workspace with the temp dir tmp.
func newJail(workspace, tmp string, private []string) (*jail, error) {
	abi := landlockABI()
	handled := handledFS(abi)
	attr := rulesetAttr{fs: handled}
	size := unsafe.Sizeof(attr.fs)
	if abi >= 6 {
		attr.scoped = unix.LANDLOCK_SCOPE_SIGNAL
		size = unsafe.Sizeof(attr)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return nil, fmt.Errorf("creating the Landlock ruleset: %w", errno)
	}
	j := &jail{fd: int(fd)}
	own := handled &^ fsDevices
	if err := j.allow(workspace, own, true); err != nil {
		j.close()
		return nil, fmt.Errorf("opening the workspace to the script: %w", err)
	}
	if err := j.allow(tmp, own, true); err != nil {
		j.close()
		return nil, fmt.Errorf("opening the temp dir to the script: %w", err)
	}
	hidden := append([]string{workspace}, private...)
	for i, p := range hidden {
		hidden[i] = resolved(p)
	}
	for _, d := range readDirs() {
		if !overlaps(d, hidden) {
			_ = j.allow(d, fsReadExec&handled, false)
		}
	}
	for _, d := range []string{"/proc", "/sys"} {
		_ = j.allow(d, fsRead, false)
	}
	_ = j.allow("/dev", unix.LANDLOCK_ACCESS_FS_READ_DIR, false)
	_ = j.allow("/dev/pts", (fsDevice|unix.LANDLOCK_ACCESS_FS_READ_DIR)&handled, false)
	for _, f := range deviceFiles {
		_ = j.allow(f, fsDevice&handled, false)
	}
	return j, nil
}

// readDirs returns the directories scripts read and execute, resolved:
// the system's, and those of the host's PATH (when it first ran a script)
// with their tool roots. They are worked out once.
var readDirs = sync.OnceValue(func() []string { return readDirsOf(searchPath()) })

// readDirsOf returns the directories scripts read and execute with path.
func readDirsOf(path string) []string {
	dirs := append([]string{}, systemDirs...)
	for _, d := range filepath.SplitList(path) {
		dirs = append(dirs, d, toolRoot(d))
	}
	var out []string
	for _, d := range dirs {
		if filepath.IsAbs(d) {
			out = append(out, resolved(d))
		}
	}
	return out
}

// toolRoot is where the programs of a PATH directory keep their files: its
// parent (~/.pyenv for ~/.pyenv/shims, ~/go for ~/go/bin, /opt/conda for
// /opt/conda/bin), unless that is too wide to open (the root, a top-level
// directory, the home directory): "" then.
func toolRoot(dir string) string {
	parent := filepath.Dir(filepath.Clean(dir))
	home, _ := os.UserHomeDir()
	if !filepath.IsAbs(parent) || filepath.Dir(parent) == "/" || parent == "/" || parent == filepath.Clean(home) {
		return ""
	}
	return parent
}

// allow grants access beneath path (a directory) or to it (a file; only
// rights to files are kept). A path that is not there is skipped unless
// must.
func (j *jail) allow(path string, access uint64, must bool) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if must {
			return err
		}
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
			unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(j.fd), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("adding a Landlock rule for %s: %w", path, errno)
	}
	return nil
}

// start starts cmd confined: on a thread of its own, restricted first and
// never used again (the goroutine ends locked to it, which ends the thread).
func (j *jail) start(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			errc <- fmt.Errorf("setting no_new_privs: %w", err)
			return
		}
		if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(j.fd), 0, 0); errno != 0 {
			errc <- fmt.Errorf("applying the Landlock ruleset: %w", errno)
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}

// close releases the ruleset.
func (j *jail) close() {
	if j != nil && j.fd >= 0 {
		_ = unix.Close(j.fd)
		j.fd = -1
	}
}

// resolved returns path with its symbolic links resolved, or as it is.
func resolved(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return filepath.Clean(path)
}

// overlaps reports whether dir holds one of paths, or is inside one.
func overlaps(dir string, paths []string) bool {
	for _, p := range paths {
		if within(p, dir) || within(dir, p) {
			return true
		}
	}
	return false
}

// within reports whether path is dir or beneath it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

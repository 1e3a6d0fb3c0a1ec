// Package harness is what the benchmark commands (bench/load, bench/mcp)
// share: a server in a child process of its own (the command's binary
// re-executed with -serve), spoken to over its stdin and stdout, with its
// CPU and heap allocations read around each run; wrk runs and their
// figures; and the helpers of their tables.
//
// The child's side: its first line on stdout is its address and its log
// file (or whatever the command puts there), then it answers each line on
// stdin (Control) until stdin closes, and stops.
package harness

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// Child is a server process, started by Start.
type Child struct {
	Role    string // the server's name, its -serve argument
	Base    string // http://127.0.0.1:port
	LogPath string // the second word of its first line: its request log, if it has one
	stdin   io.WriteCloser
	stdout  *bufio.Reader
	cmd     *exec.Cmd
}

// Start runs this binary again with -serve role and args, and reads the
// child's first line: its address and its log file.
func Start(role string, args ...string) (*Child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("starting the %s server: %w", role, err)
	}
	cmd := exec.Command(self, append([]string{"-serve", role}, args...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("starting the %s server: %w", role, err)
	}
	stdoutPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("starting the %s server: %w", role, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the %s server: %w", role, err)
	}
	stdout := bufio.NewReader(stdoutPipe)
	line, err := stdout.ReadString('\n')
	if err != nil {
		stdin.Close()
		cmd.Wait()
		return nil, fmt.Errorf("starting the %s server: %w", role, err)
	}
	addr, logPath, _ := strings.Cut(strings.TrimSpace(line), " ")
	return &Child{Role: role, Base: "http://" + addr, LogPath: logPath, stdin: stdin, stdout: stdout, cmd: cmd}, nil
}

// Stop closes the child's stdin, which stops it, and waits for it to exit.
func (c *Child) Stop() { c.stdin.Close(); c.cmd.Wait() }

// Pid is the child's process id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Ask sends the child a line and returns its answer.
func (c *Child) Ask(line string) (string, error) {
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		return "", fmt.Errorf("asking the %s server %q: %w", c.Role, line, err)
	}
	answer, err := c.stdout.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("the %s server's answer to %q: %w", c.Role, line, err)
	}
	return strings.TrimSpace(answer), nil
}

// Usage is a child's CPU and allocation counters at one moment, or their
// growth over a run (Sub).
type Usage struct {
	CPU     time.Duration // utime+stime
	Mallocs uint64        // runtime.MemStats.Mallocs
	Bytes   uint64        // runtime.MemStats.TotalAlloc
}

// Sub is u's counters less those of before.
func (u Usage) Sub(before Usage) Usage {
	return Usage{CPU: u.CPU - before.CPU, Mallocs: u.Mallocs - before.Mallocs, Bytes: u.Bytes - before.Bytes}
}

// Usage reads the child's CPU from /proc/<pid>/stat, in clock ticks of
// tick (ClockTick), and asks it for its allocation counters ("stats").
func (c *Child) Usage(tick time.Duration) (Usage, error) {
	var u Usage
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Pid()))
	if err != nil {
		return u, err
	}
	// The fields after the command name, which is in parentheses: state is
	// field 3, utime 14, stime 15.
	i := bytes.LastIndexByte(stat, ')')
	var f []string
	if i >= 0 {
		f = strings.Fields(string(stat[i+1:]))
	}
	if len(f) < 13 {
		return u, fmt.Errorf("reading /proc/%d/stat: %q", c.Pid(), stat)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return u, fmt.Errorf("reading /proc/%d/stat: %w", c.Pid(), err)
	}
	u.CPU = time.Duration(ut+st) * tick
	line, err := c.Ask("stats")
	if err != nil {
		return u, err
	}
	if _, err := fmt.Sscan(line, &u.Mallocs, &u.Bytes); err != nil {
		return u, fmt.Errorf("the %s server's stats %q: %w", c.Role, line, err)
	}
	return u, nil
}

// ClockTick is the length of a /proc clock tick (USER_HZ, 100 on Linux).
func ClockTick() time.Duration {
	hz := 100
	if out, err := exec.Command("getconf", "CLK_TCK").Output(); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && n > 0 {
			hz = n
		}
	}
	return time.Second / time.Duration(hz)
}

// Control is the child's side: it answers the parent's lines on stdin,
// "stats" with its allocation counters (Mallocs and TotalAlloc) and
// "profile" with "ok" once it has started a CPU profile into profilePath
// (none if it is empty) or else with what went wrong, then calls stop at
// EOF.
func Control(profilePath string, stop func()) {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch sc.Text() {
		case "stats":
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			fmt.Println(m.Mallocs, m.TotalAlloc)
		case "profile":
			answer := "ok"
			if profilePath != "" {
				if f, err := os.Create(profilePath); err != nil {
					answer = err.Error()
				} else if err := pprof.StartCPUProfile(f); err != nil {
					answer = err.Error()
				}
			}
			fmt.Println(answer)
		}
	}
	stop()
}

// Serve is a child serving h on a loopback port until stdin closes: it
// prints the address and logPath on its first line, then answers the
// parent's lines (Control).
func Serve(h http.Handler, logPath, profilePath string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	fmt.Println(ln.Addr().String(), logPath)
	go Control(profilePath, func() { ln.Close() })
	if err := http.Serve(ln, h); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}

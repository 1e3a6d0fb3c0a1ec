package agenttool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// OutputLimitDefault bounds what a script may print on stdout and stderr.
const OutputLimitDefault = 4 << 20

// RunOptions describe one run of an agent tool's script.
type RunOptions struct {
	// Workspace is the directory the script runs in.
	Workspace string
	// Timeout bounds the run; zero means the tool's own timeout.
	Timeout time.Duration
	// CallID and Session are passed to the script in its environment.
	CallID    string
	SessionID string
	// OutputLimit bounds stdout and stderr each; zero means
	// OutputLimitDefault.
	OutputLimit int
	// Stderr, if set, receives what the script writes to stderr while it
	// runs, a line at a time (with its newline; a long line in pieces):
	// its live output.
	Stderr func(text string)
	// Records, if set, is a directory where the run is recorded while it
	// runs (a host's is <StateRoot>/agent-tool-runs), so that if the host
	// dies a host started after it ends what the run left: see [Reap].
	Records string
	// Private lists paths the script must never read, beyond what
	// confinement already keeps from it (a host's: its state directory,
	// with every session's workspace and the store): a system or PATH
	// directory that holds one of them is not opened to the script.
	Private []string

	noCgroup    bool // tests: contain the run without a cgroup, as where there are none
	noIsolation bool // tests: run unconfined, as where the kernel cannot confine
}

// Run runs an agent tool the way an agent would: the materialised script
// <workspace>/.agent-serve/tools/<name> is executed directly (never through
// a shell command line), with the validated input as JSON on stdin, in the
// workspace, with a minimal environment. Its stdout is the result: JSON if it
// parses, else text. A non-zero exit is an isError result carrying stderr.
//
// No process the script starts outlives the call: when the script exits,
// times out or ctx is cancelled, its process group is killed, and on Linux
// so is every other process it started, including those that left the
// group with setsid or a double fork (a cgroup per run where the host may
// make one, else a sweep for the processes that bear the run's mark; see
// contain_linux.go). Run returns once they are gone. With opts.Records they
// die with the host too: the next host's [Reap] ends them.
//
// On Linux with Landlock (ABI 3, Linux 6.2) the script sees only its own
// workspace: it may write there and in a temp dir of the run's own
// (TMPDIR), read and execute the system's directories and its PATH, and
// nothing else (see isolate_linux.go); [Isolation] says where it cannot.
func Run(ctx context.Context, t *tool.Tool, in *tool.Input, opts RunOptions) tool.Output {
	if t.Execution() != tool.Agent {
		return tool.ErrorOutput(fmt.Sprintf("tool %s is not an agent tool", t.Name()))
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = t.Timeout()
	}
	limit := opts.OutputLimit
	if limit <= 0 {
		limit = OutputLimitDefault
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	stdout := &limitedBuffer{limit: limit}
	stderr := &limitedBuffer{limit: limit}
	lines := &lineWriter{emit: opts.Stderr}
	defer lines.flush()
	c, err := newContainment(containOptions{
		records:   opts.Records,
		noCgroup:  opts.noCgroup,
		confine:   !opts.noIsolation,
		workspace: opts.Workspace,
		private:   opts.Private,
	})
	if err != nil {
		return tool.ErrorOutput(fmt.Sprintf("starting agent tool %s: %v", t.Name(), err))
	}
	// Nothing of the run outlives it, whatever happens below.
	defer c.kill()
	cmd := exec.Command(Path(opts.Workspace, t.Name()))
	cmd.Dir = opts.Workspace
	cmd.Env = environment(opts, t.Name())
	cmd.Stdin = bytes.NewReader(in.JSON())
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if opts.Stderr != nil {
		cmd.Stderr = io.MultiWriter(stderr, lines)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A child the script leaves running may hold stdout open; stop
	// waiting for it shortly after the script itself exits.
	cmd.WaitDelay = 100 * time.Millisecond
	c.prepare(cmd)
	err = c.start(cmd)
	c.started(err == nil)
	if err != nil {
		return tool.ErrorOutput(fmt.Sprintf("starting agent tool %s: %v", t.Name(), err))
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
		// Children left behind must not outlive the call.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		c.kill()
		if errors.Is(err, exec.ErrWaitDelay) {
			err = nil // the script exited 0; a leftover child held its output open
		}
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		c.kill()
		<-waited
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return tool.ErrorOutput(fmt.Sprintf("timed out after %s", timeout))
		}
		return tool.ErrorOutput("cancelled: " + ctx.Err().Error())
	}
	if stdout.overflow {
		return tool.ErrorOutput(fmt.Sprintf("agent tool %s printed more than %d bytes on stdout", t.Name(), limit))
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		var exit *exec.ExitError
		status := err.Error()
		if errors.As(err, &exit) {
			status = exit.String()
		}
		if msg == "" {
			return tool.ErrorOutput(status)
		}
		return tool.ErrorOutput(status + ": " + msg)
	}
	return resultOf(stdout.Bytes())
}

// resultOf turns a script's stdout into a result: JSON if it parses, else
// the text without its final newline.
func resultOf(out []byte) tool.Output {
	if trimmed := bytes.TrimSpace(out); len(trimmed) > 0 && json.Valid(trimmed) {
		return tool.Output{Result: json.RawMessage(bytes.Clone(trimmed))}
	}
	text := strings.TrimSuffix(strings.TrimSuffix(string(out), "\n"), "\r")
	b, _ := json.Marshal(text)
	return tool.Output{Result: b}
}

// environment is the minimal environment a script runs with: enough to find
// its interpreter and write temporary files, and nothing of the host's
// secrets.
func environment(opts RunOptions, name string) []string {
	env := []string{
		"PATH=" + searchPath(),
		"HOME=" + opts.Workspace,
		"TMPDIR=" + envOr("TMPDIR", os.TempDir()),
		"LANG=" + envOr("LANG", "C.UTF-8"),
		"AGENT_SDK_TOOL=" + name,
		"AGENT_SDK_WORKSPACE=" + opts.Workspace,
	}
	if opts.CallID != "" {
		env = append(env, "AGENT_SDK_CALL_ID="+opts.CallID)
	}
	if opts.SessionID != "" {
		env = append(env, "AGENT_SDK_SESSION_ID="+opts.SessionID)
	}
	return env
}

// searchPath is the PATH scripts run with: the host's.
func searchPath() string { return envOr("PATH", "/usr/local/bin:/usr/bin:/bin") }

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// limitedBuffer keeps at most limit bytes and notes whether more came. It
// does not embed bytes.Buffer, whose ReadFrom io.Copy would use instead of
// Write, bypassing the limit.
type limitedBuffer struct {
	buf      bytes.Buffer
	limit    int
	overflow bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.buf.Len(); len(p) > room {
		b.overflow = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *limitedBuffer) Bytes() []byte  { return b.buf.Bytes() }
func (b *limitedBuffer) String() string { return b.buf.String() }

// lineWriter passes what it is written to emit a line at a time; a line
// longer than maxLine goes in pieces, and flush sends what is left.
type lineWriter struct {
	emit func(string)
	mu   sync.Mutex
	buf  []byte
}

// maxLine bounds one piece of live output.
const maxLine = 4 << 10

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		switch {
		case i >= 0 && i < maxLine:
			w.emit(string(w.buf[:i+1]))
			w.buf = w.buf[i+1:]
		case len(w.buf) >= maxLine:
			w.emit(string(w.buf[:maxLine]))
			w.buf = w.buf[maxLine:]
		default:
			w.buf = append(w.buf[:0:0], w.buf...) // keep the rest, not the whole history
			return len(p), nil
		}
	}
}

// flush sends a last line without its newline.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 && w.emit != nil {
		w.emit(string(w.buf))
	}
	w.buf = nil
}

package agenttool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
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
}

// Run runs an agent tool the way an agent would: the materialised script
// <workspace>/.agent-serve/tools/<name> is executed directly (never through
// a shell command line), with the validated input as JSON on stdin, in the
// workspace, with a minimal environment. Its stdout is the result: JSON if it
// parses, else text. A non-zero exit is an isError result carrying stderr.
// On timeout the script's whole process group is killed.
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

	cmd := exec.Command(Path(opts.Workspace, t.Name()))
	cmd.Dir = opts.Workspace
	cmd.Env = environment(opts, t.Name())
	cmd.Stdin = bytes.NewReader(in.JSON())
	stdout := &limitedBuffer{limit: limit}
	stderr := &limitedBuffer{limit: limit}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A child the script leaves running may hold stdout open; stop waiting
	// for it shortly after the script itself exits.
	cmd.WaitDelay = 100 * time.Millisecond
	if err := cmd.Start(); err != nil {
		return tool.ErrorOutput(fmt.Sprintf("starting agent tool %s: %v", t.Name(), err))
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
		// Children left behind in the group must not outlive the call.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, exec.ErrWaitDelay) {
			err = nil // the script exited 0; a leftover child held its output open
		}
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
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
		"PATH=" + envOr("PATH", "/usr/local/bin:/usr/bin:/bin"),
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

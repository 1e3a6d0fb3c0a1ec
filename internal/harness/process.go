package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// Options say where and how a harness process runs.
type Options struct {
	Spec Spec
	// Workspace is the session's workspace: the harness's cwd, where its
	// tools run. It must be an absolute path.
	Workspace string
	// Home is the harness's own HOME (its config and session store).
	Home string
	// MCP are the MCP servers handed to the harness's session.
	MCP []MCPServer
	// Handler receives what the harness reports and asks.
	Handler Handler
	// Grace is how long a cancelled prompt may take to end before the
	// process is killed; 0 for 5 s.
	Grace time.Duration
	// StartProcess starts cmd contained (its process group, its
	// descendants) and returns the function that kills all of it; nil
	// starts it in a process group of its own and kills the group.
	StartProcess func(cmd *exec.Cmd) (kill func(), err error)
	// HangTimeout is how long a prompted harness may send nothing before
	// it is taken for hung, killed, and the prompt failed (*HangError):
	// 0 for Spec.HangTimeout, or DefaultHangTimeout; negative never. Time
	// the harness waits on us does not count: a permission request
	// waiting for a person, and whatever Busy says.
	HangTimeout time.Duration
	// Busy, if set, reports whether the harness waits on the caller (its
	// calls of the agent's own tools, which run outside the connection).
	Busy   func() bool
	Logger *slog.Logger
}

// DefaultHangTimeout is how long a prompted harness may send nothing
// (no update, request or answer) before it is taken for hung: longer
// than the harnesses' own limits on a command they run (Claude Code's
// is 10 minutes at most).
const DefaultHangTimeout = 30 * time.Minute

// MCPServer is an MCP server over streamable HTTP handed to the harness.
type MCPServer struct {
	Name    string
	URL     string
	Headers map[string]string
}

// Handler is what a harness process reports to. Update is called in the
// order the harness sent its updates; Permission runs on a goroutine of
// its own and may block until a person decides (ctx ends when the
// process goes away or the request is cancelled).
type Handler struct {
	Update     func(ctx context.Context, u acp.SessionUpdate)
	Permission func(ctx context.Context, r acp.RequestPermissionRequest) acp.RequestPermissionResponse
}

// Process is a running harness: one ACP connection to one process.
type Process struct {
	opts    Options
	cmd     *exec.Cmd
	conn    *acp.ClientSideConnection
	kill    func()
	stderr  *tail
	exited  chan struct{}
	waitErr error
	caps    acp.AgentCapabilities
	info    string // the agent's name and version, as it says

	// heard is when the harness last sent something (Unix ns), or the
	// last time it was found waiting on us; asking counts its permission
	// requests not yet answered.
	heard  atomic.Int64
	asking atomic.Int32

	mu      sync.Mutex
	session acp.SessionId
	loading bool // session/load replays the history: not this turn's updates
	// replayed is when the last update of a replayed history came.
	replayed time.Time
	closed   bool
}

// Start starts the harness and initialises the ACP connection. The
// process is killed when Close is called or ctx ends before Start
// returns.
func Start(ctx context.Context, opts Options) (*Process, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Grace <= 0 {
		opts.Grace = 5 * time.Second
	}
	if !filepath.IsAbs(opts.Workspace) {
		return nil, fmt.Errorf("starting harness %s: the workspace %q is not an absolute path", opts.Spec.Name, opts.Workspace)
	}
	argv, err := command(opts.Spec)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Home, 0o700); err != nil {
		return nil, fmt.Errorf("starting harness %s: making its HOME: %w", opts.Spec.Name, err)
	}
	env, err := environ(opts.Spec, opts.Home, os.Environ())
	if err != nil {
		return nil, err
	}
	if err := prepareHome(opts.Spec, opts.Home, env); err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = opts.Workspace
	cmd.Env = env
	p := &Process{opts: opts, cmd: cmd, stderr: &tail{max: 8 << 10}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("starting harness %s: %w", opts.Spec.Name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("starting harness %s: %w", opts.Spec.Name, err)
	}
	start := opts.StartProcess
	if start == nil {
		start = startGroup
	}
	kill, err := start(cmd)
	if err != nil {
		return nil, fmt.Errorf("starting harness %s (%s): %w", opts.Spec.Name, strings.Join(argv, " "), err)
	}
	p.kill = kill
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	p.heard.Store(time.Now().UnixNano())
	p.conn = acp.NewClientSideConnection(client{p}, stdin, heardReader{stdout, p})
	p.conn.SetLogger(opts.Logger)
	ictx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err = p.call(ictx, func(ctx context.Context) error {
		r, err := p.conn.Initialize(ctx, acp.InitializeRequest{
			ProtocolVersion: acp.ProtocolVersionNumber,
			// No fs or terminal: the harnesses read, write and run
			// themselves (Gemini cannot create a file through fs).
			ClientCapabilities: acp.ClientCapabilities{},
			ClientInfo:         &acp.Implementation{Name: "agent-sdk", Version: "1"},
		})
		if err == nil {
			p.caps = r.AgentCapabilities
			if r.AgentInfo != nil {
				p.info = r.AgentInfo.Name + " " + r.AgentInfo.Version
			}
		}
		return err
	})
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("initialising harness %s: %w", opts.Spec.Name, err)
	}
	return p, nil
}

// call runs an ACP request, failing it with the process's stderr when the
// process exits first.
func (p *Process) call(ctx context.Context, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	select {
	case err := <-done:
		if err != nil && p.exitsSoon() {
			return p.exitError()
		}
		return err
	case <-p.exited:
		cancel()
		<-done
		return p.exitError()
	}
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// exitsSoon reports whether the process exits within a moment: a request
// that failed because the connection closed fails because the process is
// exiting, which the wait for it may not have seen yet.
func (p *Process) exitsSoon() bool {
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-p.conn.Done():
	case <-t.C:
		return false
	}
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// exitError says the process exited, how, and the tail of its stderr.
func (p *Process) exitError() error {
	<-p.exited
	how := "exited"
	if p.waitErr != nil {
		how = p.waitErr.Error()
	}
	if t := strings.TrimSpace(p.stderr.String()); t != "" {
		return &ExitError{Harness: p.opts.Spec.Name, How: how, Stderr: t}
	}
	return &ExitError{Harness: p.opts.Spec.Name, How: how}
}

// ExitError is a harness process that exited before it answered.
type ExitError struct {
	Harness string
	How     string // the exit status
	Stderr  string // the tail of its stderr
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("harness %s %s before it answered", e.Harness, e.How)
	if e.How != "exited" {
		msg = fmt.Sprintf("harness %s exited (%s) before it answered", e.Harness, e.How)
	}
	if e.Stderr != "" {
		msg += "; its stderr ends with:\n" + e.Stderr
	}
	return msg
}

// Info is the agent's name and version as it reported them.
func (p *Process) Info() string { return p.info }

// CanLoad reports whether the harness can continue a session (session/load).
func (p *Process) CanLoad() bool { return p.caps.LoadSession }

// Stderr is the tail of what the process wrote to its stderr.
func (p *Process) Stderr() string { return p.stderr.String() }

// NewSession opens a new harness session in the workspace, with the MCP
// servers, and returns its id.
func (p *Process) NewSession(ctx context.Context) (string, error) {
	var id acp.SessionId
	err := p.call(ctx, func(ctx context.Context) error {
		r, err := p.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: p.opts.Workspace, McpServers: p.mcpServers(), Meta: p.sessionMeta()})
		id = r.SessionId
		return err
	})
	if err != nil {
		return "", fmt.Errorf("opening a session of harness %s: %w", p.opts.Spec.Name, err)
	}
	p.mu.Lock()
	p.session = id
	p.mu.Unlock()
	return string(id), nil
}

// LoadSession continues the harness session id (the harness replays its
// history, which is not reported to the Handler).
func (p *Process) LoadSession(ctx context.Context, id string) error {
	p.mu.Lock()
	p.loading = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.loading = false
		p.mu.Unlock()
	}()
	err := p.call(ctx, func(ctx context.Context) error {
		_, err := p.conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: acp.SessionId(id), Cwd: p.opts.Workspace, McpServers: p.mcpServers()})
		return err
	})
	if err != nil {
		return fmt.Errorf("continuing session %s of harness %s: %w", id, p.opts.Spec.Name, err)
	}
	p.settle(ctx)
	p.mu.Lock()
	p.session = acp.SessionId(id)
	p.mu.Unlock()
	return nil
}

// replayQuiet is how long a harness is quiet after session/load answered
// before its history is taken as replayed; replayMax bounds the wait.
const (
	replayQuiet = 200 * time.Millisecond
	replayMax   = 3 * time.Second
)

// settle waits, once session/load has answered, until the harness has
// sent no update of its replayed history for replayQuiet (at most
// replayMax): Gemini CLI streams the history it replays after its answer
// (its streamHistory is not awaited), and those updates are not the
// turn's. A harness that replays before it answers (Claude, Codex) costs
// what is left of replayQuiet since its last replayed update.
func (p *Process) settle(ctx context.Context) {
	deadline := time.Now().Add(replayMax)
	for {
		p.mu.Lock()
		wait := replayQuiet - time.Since(p.replayed)
		p.mu.Unlock()
		if wait <= 0 || time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// ErrCancelled is Prompt's error when ctx ended the prompt: the harness
// was told to cancel (and killed if it did not stop in time).
var ErrCancelled = errors.New("harness prompt cancelled")

// Prompt sends the prompt and waits for the harness to end its turn. If
// ctx ends first, the harness is sent session/cancel, given Options.Grace
// to stop, and killed otherwise; Prompt then returns ErrCancelled.
func (p *Process) Prompt(ctx context.Context, text string) (acp.PromptResponse, error) {
	p.mu.Lock()
	id := p.session
	p.mu.Unlock()
	type result struct {
		r   acp.PromptResponse
		err error
	}
	done := make(chan result, 1)
	pctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go func() {
		r, err := p.conn.Prompt(pctx, acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
		done <- result{r, err}
	}()
	hang := p.hangTimeout()
	var watch <-chan time.Time
	if hang > 0 {
		t := time.NewTicker(min(max(hang/10, 10*time.Millisecond), 10*time.Second))
		defer t.Stop()
		watch = t.C
	}
wait:
	for {
		select {
		case r := <-done:
			if r.err != nil {
				if p.exitsSoon() {
					return r.r, p.exitError()
				}
				return r.r, fmt.Errorf("prompting harness %s: %w", p.opts.Spec.Name, r.err)
			}
			return r.r, nil
		case <-p.exited:
			return acp.PromptResponse{}, p.exitError()
		case <-watch:
			if quiet := p.quiet(); quiet > hang {
				p.Close()
				return acp.PromptResponse{}, &HangError{Harness: p.opts.Spec.Name, Quiet: quiet.Round(time.Millisecond), Stderr: strings.TrimSpace(p.stderr.String())}
			}
		case <-ctx.Done():
			break wait
		}
	}
	_ = p.conn.Cancel(context.Background(), acp.CancelNotification{SessionId: id})
	t := time.NewTimer(p.opts.Grace)
	defer t.Stop()
	select {
	case <-done:
	case <-p.exited:
	case <-t.C:
	}
	p.Close()
	return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, ErrCancelled
}

// hangTimeout is the prompt's hang timeout: Options', else Spec's, else
// DefaultHangTimeout; 0 for none.
func (p *Process) hangTimeout() time.Duration {
	d := p.opts.HangTimeout
	if d == 0 {
		d = p.opts.Spec.HangTimeout
	}
	switch {
	case d == 0:
		return DefaultHangTimeout
	case d < 0:
		return 0
	}
	return d
}

// quiet is how long the harness has sent nothing while not waiting on
// us: waiting (a permission request unanswered, Busy), it is 0, and the
// count starts again from now.
func (p *Process) quiet() time.Duration {
	now := time.Now()
	if p.asking.Load() > 0 || p.opts.Busy != nil && p.opts.Busy() {
		p.heard.Store(now.UnixNano())
		return 0
	}
	return now.Sub(time.Unix(0, p.heard.Load()))
}

// HangError is a prompt failed because the harness sent nothing for
// longer than its hang timeout: it was killed.
type HangError struct {
	Harness string
	Quiet   time.Duration
	Stderr  string // the tail of its stderr
}

func (e *HangError) Error() string {
	msg := fmt.Sprintf("harness %s sent nothing for %s (its hang timeout) and was killed", e.Harness, e.Quiet)
	if e.Stderr != "" {
		msg += "; its stderr ends with:\n" + e.Stderr
	}
	return msg
}

// heardReader stamps the process's heard as the harness's output comes.
type heardReader struct {
	r io.Reader
	p *Process
}

func (h heardReader) Read(b []byte) (int, error) {
	n, err := h.r.Read(b)
	if n > 0 {
		h.p.heard.Store(time.Now().UnixNano())
	}
	return n, err
}

// Close kills the process and everything it started, and waits for it
// (a bounded time).
func (p *Process) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	p.kill()
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.opts.Logger.Warn("a killed harness process did not exit", "harness", p.opts.Spec.Name, "pid", p.cmd.Process.Pid)
	}
}

func (p *Process) mcpServers() []acp.McpServer {
	out := []acp.McpServer{}
	for _, s := range p.opts.MCP {
		hs := []acp.HttpHeader{}
		for k, v := range s.Headers {
			hs = append(hs, acp.HttpHeader{Name: k, Value: v})
		}
		out = append(out, acp.McpServer{Http: &acp.McpServerHttpInline{Type: "http", Name: s.Name, Url: s.URL, Headers: hs}})
	}
	return out
}

// sessionMeta is what a harness takes in session/new's _meta.
func (p *Process) sessionMeta() map[string]any {
	if p.opts.Spec.Name == ClaudeCode && p.opts.Spec.Model != "" {
		return map[string]any{"claudeCode": map[string]any{"options": map[string]any{"model": p.opts.Spec.Model}}}
	}
	return nil
}

// startGroup starts cmd in a process group of its own; killing it kills
// the group.
func startGroup(cmd *exec.Cmd) (func(), error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	return func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }, nil
}

// client is the ACP client side of a Process.
type client struct{ p *Process }

func (c client) SessionUpdate(ctx context.Context, n acp.SessionNotification) error {
	c.p.mu.Lock()
	skip := c.p.loading || (c.p.session != "" && n.SessionId != c.p.session)
	if c.p.loading {
		c.p.replayed = time.Now()
	}
	c.p.mu.Unlock()
	if !skip && c.p.opts.Handler.Update != nil {
		c.p.opts.Handler.Update(ctx, n.Update)
	}
	return nil
}

func (c client) RequestPermission(ctx context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	if c.p.opts.Handler.Permission == nil {
		return Reject(r), nil
	}
	c.p.asking.Add(1)
	defer func() {
		c.p.heard.Store(time.Now().UnixNano()) // answered: the count starts again
		c.p.asking.Add(-1)
	}()
	return c.p.opts.Handler.Permission(ctx, r), nil
}

var errNoCapability = &acp.RequestError{Code: -32601, Message: "the client does not offer this (no fs or terminal capability)"}

func (client) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, errNoCapability
}
func (client) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, errNoCapability
}
func (client) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, errNoCapability
}
func (client) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, errNoCapability
}
func (client) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, errNoCapability
}
func (client) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, errNoCapability
}
func (client) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, errNoCapability
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = t.buf[over:]
		if i := bytes.IndexByte(t.buf, '\n'); i >= 0 && i < len(t.buf)-1 {
			t.buf = t.buf[i+1:]
		}
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.ToValidUTF8(string(t.buf), "\uFFFD")
}

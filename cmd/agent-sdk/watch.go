package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/agentsdk/agentsdk/internal/build"
	"github.com/agentsdk/agentsdk/internal/command"
)

// Timing of serve --watch.
const (
	watchPoll     = 250 * time.Millisecond // how often the files are looked at
	watchSettle   = 150 * time.Millisecond // an edit is over when a look this much later finds nothing new
	watchMaxSpell = 3 * time.Second        // … or when edits have gone on this long
	watchStartup  = 2 * time.Minute        // how long a new host may take to serve
)

// watcher is serve --watch. This process stays: it holds the listening
// socket and runs the agent's host as its child, handing it the socket
// (--listen-fd). When the agent's files change it rebuilds the agent,
// starts a new host on the same socket, waits until it serves
// (--ready-fd), then tells the old host to drain (SIGTERM): the port
// answers throughout, and what the old host had in hand (sessions,
// parked approvals, schedules, turns) is in the store for the new one. A
// build that fails, or a new host that does not start, leaves the
// running host serving.
type watcher struct {
	build func(ctx context.Context) (*build.Agent, *build.Result, error)
	argv  []string // the host's arguments, without the handover's
	skip  []string // directories the host writes: not edits
	out   io.Writer
	ln    *os.File // the listening socket
	cur   *hostProc
	gone  []*hostProc // hosts told to drain, not yet exited
}

// hostProc is a running host.
type hostProc struct {
	cmd    *exec.Cmd
	bin    string
	served chan struct{} // closed when it says it serves
	exited chan struct{} // closed when it has exited; err is then set
	err    error
}

// run serves until ctx is done (SIGINT, SIGTERM), then stops the host
// and returns its exit status.
func (w *watcher) run(ctx context.Context, addr string, agent *build.Agent, res *build.Result) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return exitWith(command.ExitFailure, "listening on %s: %v", addr, err)
	}
	w.ln, err = ln.(*net.TCPListener).File()
	ln.Close() // w.ln holds the socket
	if err != nil {
		return exitWith(command.ExitFailure, "handing over the listening socket: %v", err)
	}
	defer w.ln.Close()
	first, err := w.start(agent, res.Binary)
	if err != nil {
		return err
	}
	if err := w.ready(ctx, first); err != nil {
		return w.exit(first, err)
	}
	w.cur = first
	files := agent.NewWatcher(w.skip...)
	files.Scan()
	fmt.Fprintf(w.out, "agent-sdk: watching %s for changes (agent/ and the module's Go files); a change rebuilds the agent and swaps the host\n", agent.Dir)
	tick := time.NewTicker(watchPoll)
	defer tick.Stop()
	for {
		var exited <-chan struct{}
		if w.cur != nil {
			exited = w.cur.exited
		}
		select {
		case <-ctx.Done():
			return w.stop()
		case <-exited:
			fmt.Fprintf(w.out, "agent-sdk: the host exited (%v); the next change starts it again\n", exitStatus(w.cur.err))
			w.cur = nil
			continue
		case <-tick.C:
		}
		w.reap()
		changed, err := files.Scan()
		if err != nil {
			fmt.Fprintf(w.out, "agent-sdk: %v\n", err)
			continue
		}
		if len(changed) == 0 {
			continue
		}
		seen := time.Now()
		changed = w.settle(ctx, files, changed, seen)
		w.swap(ctx, changed, seen)
	}
}

// settle waits for a spell of edits to end (an editor writes a file in
// steps, a checkout writes many), and returns every file it changed.
func (w *watcher) settle(ctx context.Context, files *build.Watcher, changed []string, since time.Time) []string {
	all := map[string]bool{}
	for _, c := range changed {
		all[c] = true
	}
	for time.Since(since) < watchMaxSpell {
		select {
		case <-ctx.Done():
			return changed
		case <-time.After(watchSettle):
		}
		more, err := files.Scan()
		if err != nil || len(more) == 0 {
			break
		}
		for _, c := range more {
			if !all[c] {
				all[c] = true
				changed = append(changed, c)
			}
		}
	}
	return changed
}

// swap rebuilds the agent and, when the build or the agent's files
// changed, replaces the running host with a new one.
func (w *watcher) swap(ctx context.Context, changed []string, seen time.Time) {
	fmt.Fprintf(w.out, "agent-sdk: changed: %s; rebuilding\n", summary(changed))
	agent, res, err := w.build(ctx)
	if err != nil {
		msg := err.Error()
		var exit *exitError
		if errors.As(err, &exit) {
			msg = exit.msg
		}
		fmt.Fprintf(w.out, "agent-sdk: %s\n", msg)
		if w.cur != nil {
			fmt.Fprintln(w.out, "agent-sdk: the build failed; the running host keeps serving the last build")
		}
		return
	}
	runtime := false
	for _, c := range changed {
		runtime = runtime || build.RuntimeFile(c)
	}
	if w.cur != nil && res.Binary == w.cur.bin && !runtime {
		fmt.Fprintln(w.out, "agent-sdk: the agent's binary is the same: the running host keeps serving")
		return
	}
	next, err := w.start(agent, res.Binary)
	if err != nil {
		fmt.Fprintf(w.out, "agent-sdk: %v\n", err)
		return
	}
	if err := w.ready(ctx, next); err != nil {
		w.drain(next)
		if w.cur != nil {
			fmt.Fprintf(w.out, "agent-sdk: the new host did not start (%v); the running host keeps serving the last build\n", err)
		} else {
			fmt.Fprintf(w.out, "agent-sdk: the new host did not start (%v); the next change tries again\n", err)
		}
		return
	}
	if old := w.cur; old != nil {
		w.drain(old)
		fmt.Fprintf(w.out, "agent-sdk: the new host serves, %.1fs after the change; the old one drains\n", time.Since(seen).Seconds())
	} else {
		fmt.Fprintf(w.out, "agent-sdk: the new host serves, %.1fs after the change\n", time.Since(seen).Seconds())
	}
	w.cur = next
}

// start starts a host of the binary on the listening socket.
func (w *watcher) start(agent *build.Agent, bin string) (*hostProc, error) {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, exitWith(command.ExitFailure, "starting the host: %v", err)
	}
	parentR, parentW, err := os.Pipe()
	if err != nil {
		readyR.Close()
		readyW.Close()
		return nil, exitWith(command.ExitFailure, "starting the host: %v", err)
	}
	cmd := exec.Command(bin, append(w.argv, "--listen-fd=3", "--ready-fd=4", "--parent-fd=5")...)
	cmd.Dir = agent.Dir
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{w.ln, readyW, parentR}
	err = cmd.Start()
	readyW.Close()
	parentR.Close()
	if err != nil {
		readyR.Close()
		parentW.Close()
		return nil, exitWith(command.ExitFailure, "running the agent: %v", err)
	}
	p := &hostProc{cmd: cmd, bin: bin, served: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		parentW.Close() // held open until then: the host's --parent-fd
		close(p.exited)
	}()
	go p.readReady(readyR)
	return p, nil
}

// readReady closes p.served when the host writes its ready line (at the
// end of the pipe without one, the host has exited: p.exited says so).
func (p *hostProc) readReady(r *os.File) {
	defer r.Close()
	if _, err := bufio.NewReader(r).ReadString('\n'); err == nil {
		close(p.served)
	}
}

// ready waits until the host serves: nil; or until it exits, ctx ends or
// it has taken watchStartup: why it does not serve.
func (w *watcher) ready(ctx context.Context, p *hostProc) error {
	t := time.NewTimer(watchStartup)
	defer t.Stop()
	select {
	case <-p.served:
		return nil
	case <-p.exited:
		return errors.New(exitStatus(p.err))
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("it did not serve within %s", watchStartup)
	}
}

// drain tells a host to finish what it has in hand and exit (the serve
// command's SIGTERM: in-flight requests finish within --drain-timeout).
func (w *watcher) drain(p *hostProc) {
	p.cmd.Process.Signal(syscall.SIGTERM)
	w.gone = append(w.gone, p)
}

// reap forgets the drained hosts that have exited.
func (w *watcher) reap() {
	var left []*hostProc
	for _, p := range w.gone {
		select {
		case <-p.exited:
		default:
			left = append(left, p)
		}
	}
	w.gone = left
}

// stop drains every host and waits for them; its result is the running
// host's exit status.
func (w *watcher) stop() error {
	if w.cur != nil {
		w.drain(w.cur)
	}
	for _, p := range w.gone {
		<-p.exited
	}
	if w.cur == nil {
		return nil
	}
	return w.exit(w.cur, nil)
}

// exit is the command's result once host p has exited: its exit code.
func (w *watcher) exit(p *hostProc, why error) error {
	select {
	case <-p.exited:
	default:
		w.drain(p)
		<-p.exited
	}
	var ee *exec.ExitError
	switch {
	case errors.As(p.err, &ee) && ee.ExitCode() > 0:
		return &exitError{code: ee.ExitCode()}
	case p.err != nil:
		return exitWith(command.ExitFailure, "the host: %v", p.err)
	case why != nil && !errors.Is(why, context.Canceled):
		return exitWith(command.ExitFailure, "the host: %v", why)
	}
	return nil
}

// exitStatus says how a host process ended.
func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// summary lists a few changed files.
func summary(files []string) string {
	if len(files) <= 3 {
		return strings.Join(files, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(files[:3], ", "), len(files)-3)
}

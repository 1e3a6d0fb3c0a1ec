package agenttool

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// ProcessOptions describe how [StartProcess] contains a process.
type ProcessOptions struct {
	// Records, if set, is a directory where the process is recorded while
	// it runs (a host's is <StateRoot>/agent-tool-runs, as for
	// [RunOptions].Records), so that if the host dies a host started
	// after it kills what the process left: see [Reap].
	Records string

	noCgroup bool // tests: contain the process without a cgroup, as where there are none
}

// A Process is a long-running process started by [StartProcess] (a coding
// agent's harness, for one turn), kept together with every process it
// starts, so that none of them outlives the turn or the host.
//
// A Process must end: by [Process.Wait] returning, or by [Process.Kill]
// (then Wait, to reap it). Its methods may be called from several
// goroutines at once.
type Process struct {
	cmd   *exec.Cmd
	c     *containment
	mu    sync.Mutex
	ended bool
}

// StartProcess starts cmd contained, as [Run] contains a script but not
// confined (no Landlock, no temp dir of its own): the process sees what
// the host sees, its HOME, its PATH, the network.
//
// The caller sets cmd's Path, Args, Dir, Env, Stdin, Stdout, Stderr (or
// their pipes) and WaitDelay before; StartProcess starts cmd in a process
// group of its own (Setpgid, unless cmd asks for a session of its own with
// Setsid), marks its environment with the run's id (AGENT_SDK_RUN_ID; a
// nil cmd.Env is the host's), and on Linux starts it in a cgroup of its
// own where the host may make one. With opts.Records the run is recorded
// there until it ends, and a host that dies with it running leaves it to
// the next host's [Reap].
//
// StartProcess changes cmd's SysProcAttr (a copy of the caller's) and Env;
// cmd must not have been started.
func StartProcess(cmd *exec.Cmd, opts ProcessOptions) (*Process, error) {
	if cmd.Process != nil {
		return nil, errors.New("starting a contained process: already started")
	}
	c, err := newContainment(containOptions{records: opts.Records, noCgroup: opts.noCgroup})
	if err != nil {
		return nil, fmt.Errorf("starting %s contained: %w", cmd.Path, err)
	}
	attr := &syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		*attr = *cmd.SysProcAttr
	}
	if !attr.Setsid { // a session leader leads its own group already
		attr.Setpgid, attr.Pgid = true, 0
	}
	cmd.SysProcAttr = attr
	cmd.Env = cmd.Environ()
	c.prepare(cmd)
	err = c.start(cmd)
	c.started(err == nil)
	if err != nil {
		_ = c.kill()
		return nil, fmt.Errorf("starting %s contained: %w", cmd.Path, err)
	}
	return &Process{cmd: cmd, c: c}, nil
}

// Pid returns the process's pid, which is also its process group's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process's group: the process and those of its
// descendants that stayed in its group (a SIGTERM before [Process.Kill],
// for a harness to end its turn cleanly). Once the process has ended it
// returns [os.ErrProcessDone].
func (p *Process) Signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("signalling process %d: %v is not a signal of this system", p.Pid(), sig)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return os.ErrProcessDone
	}
	if err := syscall.Kill(-p.Pid(), s); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return fmt.Errorf("signalling process group %d: %w", p.Pid(), err)
	}
	return nil
}

// Kill kills the process and every process it started that is still
// alive with SIGKILL, and forgets the run (its record, its cgroup). On
// Linux that is every descendant, including those that left the process
// group with setsid or a double fork: all of the run's cgroup, where it
// has one, else every process bearing the run's mark (one that replaced
// its environment escapes it); Kill returns once they are gone (waiting
// at most 2s), and reports a cgroup it could not kill or processes that
// survived. Elsewhere it is the process's group, signalled. Calling it
// again, or after [Process.Wait] returned, does nothing.
//
// Kill does not reap the process: call [Process.Wait] too, which returns
// once Kill has killed it.
func (p *Process) Kill() error {
	return p.end()
}

// Wait waits for the process to exit and for cmd's copying of its output
// to end (cmd.Wait: set cmd.WaitDelay if a child may hold the output open
// after it exits), then kills what the process left running, as
// [Process.Kill] does, and returns cmd.Wait's error.
func (p *Process) Wait() error {
	err := p.cmd.Wait()
	if kerr := p.end(); kerr != nil && err == nil {
		err = kerr
	}
	return err
}

// end kills the run once: its process group, then its cgroup or marked
// processes.
func (p *Process) end() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return nil
	}
	p.ended = true
	_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	if err := p.c.kill(); err != nil {
		return fmt.Errorf("killing process %d's run: %w", p.Pid(), err)
	}
	return nil
}

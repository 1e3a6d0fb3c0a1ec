//go:build !linux

package agenttool

import "os/exec"

// Outside Linux a run's processes are those of the script's (or the
// [StartProcess] process's) process group: a process that leaves it
// (setsid, a daemon's double fork) outlives the call, and all of them
// outlive a host that dies. A script is not
// confined: it can read and write whatever the host can.
type containment struct{}

func newContainment(containOptions) (*containment, error) { return &containment{}, nil }
func (c *containment) prepare(*exec.Cmd)                  {}
func (c *containment) start(cmd *exec.Cmd) error          { return cmd.Start() }
func (c *containment) started(bool)                       {}
func (c *containment) kill() error                        { return nil }

// Reap ends what runs recorded in dir left behind when their host died:
// outside Linux runs are not recorded, and it does nothing.
func Reap(dir string) (int, error) { return 0, nil }

// Isolation describes how scripts are confined on this machine, for a
// host to say at startup: outside Linux they are not.
func Isolation() string {
	return "agent tools can read and write everything the host can (other sessions' workspaces, the store): they are confined on Linux only (Landlock)"
}

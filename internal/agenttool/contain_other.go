//go:build !linux

package agenttool

import "os/exec"

// Outside Linux a run's processes are those of the script's process group:
// a process that leaves it (setsid, a daemon's double fork) outlives the
// call.
type containment struct{}

func newContainment(bool) *containment   { return &containment{} }
func (c *containment) prepare(*exec.Cmd) {}
func (c *containment) dropCgroup() bool  { return false }
func (c *containment) cgroupFailed()     {}
func (c *containment) started(bool)      {}
func (c *containment) kill()             {}

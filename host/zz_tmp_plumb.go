package host

import (
	"os/exec"
	"syscall"

	"github.com/agentsdk/agentsdk/internal/harness"
)

// TEMPORARY until the plumb branch merges.
func (h *Host) Harness(name string) (harness.Spec, bool) {
	s, ok := h.opts.Harnesses[name]
	return s, ok
}

func (h *Host) startHarnessProcess(cmd *exec.Cmd) (func(), error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	return func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }, nil
}

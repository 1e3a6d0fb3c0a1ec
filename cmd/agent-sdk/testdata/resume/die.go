package tools

import (
	"context"
	"os"
	"syscall"

	"github.com/agentsdk/agentsdk/tool"
)

// die kills the process it runs in, its host, with SIGKILL: a turn that
// calls it kills its host every time it runs.
var _ = tool.Define(tool.Config{
	Description: "Kill this host.",
}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL cannot be caught: the process ends here
})

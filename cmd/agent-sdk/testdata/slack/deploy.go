package tools

import (
	"context"
	"os"
	"path/filepath"

	"github.com/agentsdk/agentsdk/tool"
)

// DeployInput is deploy's input.
type DeployInput struct {
	Service string `json:"service"`
}

// deploy always needs approval. When it runs it appends
// "<callId> <service>" to <state>/deploy-runs, so that a test counts how
// often each approved call ran (and that none ran unapproved).
var _ = tool.Define(tool.Config{
	Description:   "Deploy a service (needs approval).",
	NeedsApproval: tool.Always,
}, func(ctx context.Context, call *tool.Call, in DeployInput) (any, error) {
	f, err := os.OpenFile(filepath.Join(call.StateRoot, "deploy-runs"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteString(call.ID + " " + in.Service + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return map[string]string{"deployed": in.Service}, nil
})

package tools

import (
	"context"
	"path/filepath"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// GatedInput is gated's input: a note, and how long the call takes after
// its side effect.
type GatedInput struct {
	Note    string `json:"note"`
	SleepMs int    `json:"sleepMs,omitempty" jsonschema:"minimum=0"`
}

// gated needs approval. When it runs it appends "<callId> <note>" to
// <state>/gated-runs, so that a test counts how often each approved call
// ran (and that none ran unapproved); then it sleeps for sleepMs.
var _ = tool.Define(tool.Config{
	Description:   "Needs approval; marks that it ran, then takes sleepMs milliseconds.",
	NeedsApproval: tool.Always,
}, func(ctx context.Context, call *tool.Call, in GatedInput) (any, error) {
	if err := appendLine(filepath.Join(call.StateRoot, "gated-runs"), call.ID+" "+in.Note+"\n"); err != nil {
		return nil, err
	}
	select {
	case <-time.After(time.Duration(in.SleepMs) * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return map[string]string{"ran": call.ID}, nil
})

package tools

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// MarkInput is mark's input: a note, and how long the call takes after
// its side effect.
type MarkInput struct {
	Note    string `json:"note"`
	SleepMs int    `json:"sleepMs,omitempty" jsonschema:"minimum=0"`
}

// mark appends "<callId> <note>" to <state>/marks (one write, O_APPEND: a
// line is whole or absent even if the host is killed), so that a test
// counts how often each call ran; then it sleeps for sleepMs.
var _ = tool.Define(tool.Config{
	Description: "Mark that this call ran, then take sleepMs milliseconds.",
}, func(ctx context.Context, call *tool.Call, in MarkInput) (any, error) {
	if err := appendLine(filepath.Join(call.StateRoot, "marks"), call.ID+" "+in.Note+"\n"); err != nil {
		return nil, err
	}
	select {
	case <-time.After(time.Duration(in.SleepMs) * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return map[string]string{"marked": call.ID, "note": in.Note}, nil
})

// appendLine appends line to the file at path in one write.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

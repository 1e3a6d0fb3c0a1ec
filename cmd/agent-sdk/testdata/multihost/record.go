package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// RecordInput is record's input: a note, and how long the call takes after
// recording it.
type RecordInput struct {
	Note    string `json:"note"`
	SleepMs int    `json:"sleepMs,omitempty" jsonschema:"minimum=0"`
}

// record needs approval. When it runs it appends "<callId> <host> <note>"
// to the file named by $MULTIHOST_RUNS ($MULTIHOST_NAME is the host), so
// that a test sharing that file between hosts counts how often it ran and
// where; then it sleeps for sleepMs.
var _ = tool.Define(tool.Config{
	Description:   "Record a note (needs approval), then take sleepMs milliseconds.",
	NeedsApproval: tool.Always,
}, func(ctx context.Context, call *tool.Call, in RecordInput) (any, error) {
	path := os.Getenv("MULTIHOST_RUNS")
	if path == "" {
		return nil, errors.New("MULTIHOST_RUNS is not set")
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	_, err = fmt.Fprintf(f, "%s %s %s\n", call.ID, os.Getenv("MULTIHOST_NAME"), in.Note)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	select {
	case <-time.After(time.Duration(in.SleepMs) * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return map[string]string{"recorded": in.Note, "host": os.Getenv("MULTIHOST_NAME")}, nil
})

package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agentsdk/agentsdk/store"
)

// healthTimeout bounds one health check.
const healthTimeout = 2 * time.Second

// Healthy reports whether the host can do its work: its store answers a
// read, and its state directory takes a new file (a host out of file
// descriptors, or whose disk is gone, cannot run a call). The error says
// which failed. GET /healthz and /readyz answer with it.
func (h *Host) Healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	if _, err := h.log.Store.Session(ctx, "sess_healthcheck"); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("the store does not answer: %w", err)
	}
	err := os.MkdirAll(h.opts.StateRoot, 0o700) // made on first use
	var f *os.File
	if err == nil {
		f, err = os.CreateTemp(h.opts.StateRoot, ".healthcheck-*")
	}
	if err != nil {
		return fmt.Errorf("the state directory takes no new file: %w", err)
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return nil
}

package host

import (
	"context"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/progress"
)

// OutputLimit caps the live output recorded for one call (see
// internal/progress, which coalesces a call's progress and output).
const OutputLimit = progress.OutputLimit

// newReporter returns the reporter of a call: its progress and output go
// on the session's stream (in the call's turn) and to a caller following
// it. Nil when nobody would see them (a call outside any session that
// nobody follows).
func (h *Host) newReporter(ctx context.Context, c callSpec) *progress.Reporter {
	if c.session == nil && c.observe == nil {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	return progress.New(c.id, c.tool.Name(), func(payloads ...api.Payload) {
		if c.session != nil {
			if err := h.emit(ctx, c.session.ID, c.turnID, payloads...); err != nil {
				h.logger.Warn("recording a call's progress", "call", c.id, "err", err)
			}
		}
		if c.observe != nil {
			for _, p := range payloads {
				c.observe(p)
			}
		}
	})
}

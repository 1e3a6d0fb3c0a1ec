package host

import (
	"context"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/turnloop"
)

// history rebuilds a session's conversation from its stored events
// (turnloop.History), with the tags tools put on the session.
func (h *Host) history(ctx context.Context, sessionID string) (*turnloop.History, error) {
	hist := turnloop.NewHistory()
	if err := eachEvent(ctx, h.log, sessionID, func(e api.Event) { hist.Add(e) }); err != nil {
		return nil, err
	}
	return hist, nil
}

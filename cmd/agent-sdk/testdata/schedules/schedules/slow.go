package schedules

import (
	"context"
	"time"

	"github.com/agentsdk/agentsdk/schedule"
)

// slow ticks every second and takes 3 s a run: the ticks that come while
// a run is going are skipped.
var _ = schedule.Define(schedule.Config{
	Description: "Record the tick, then take 3 s.",
	Cron:        "* * * * * *",
	Overlap:     schedule.OverlapSkip,
	Run: func(ctx context.Context, r *schedule.Run) error {
		if err := recordTick(ctx, r, "slow"); err != nil {
			return err
		}
		select {
		case <-time.After(3 * time.Second):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	},
})

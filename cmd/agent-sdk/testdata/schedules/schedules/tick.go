package schedules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agentsdk/agentsdk/schedule"
	"github.com/agentsdk/agentsdk/tool"
)

// tick ticks every second and records each tick in KV, once.
var _ = schedule.Define(schedule.Config{
	Description: "Record every second's tick in KV.",
	Cron:        "* * * * * *",
	Run: func(ctx context.Context, r *schedule.Run) error {
		return recordTick(ctx, r, "tick")
	},
})

// tickRecord is what a run records: which run, on which host
// ($MULTIHOST_NAME), when it began.
type tickRecord struct {
	Run   string    `json:"run"`
	Host  string    `json:"host"`
	Began time.Time `json:"began"`
}

// recordTick records the run in KV under <prefix>/<tick> (a run by hand
// under manual/<prefix>/<id>), only if no run recorded that tick yet: a
// tick that runs twice is recorded again under dup/, and fails.
func recordTick(ctx context.Context, r *schedule.Run, prefix string) error {
	key := prefix + "/" + r.Tick.UTC().Format(time.RFC3339Nano)
	if r.Manual {
		key = "manual/" + prefix + "/" + r.ID
	}
	value, err := json.Marshal(tickRecord{Run: r.ID, Host: os.Getenv("MULTIHOST_NAME"), Began: time.Now()})
	if err != nil {
		return err
	}
	_, err = r.Host.KV.CompareAndSet(ctx, key, 0, value, nil)
	if errors.Is(err, tool.ErrVersionConflict) {
		if _, err := r.Host.KV.Set(ctx, "dup/"+key+"/"+r.ID, value, nil); err != nil {
			return err
		}
		return fmt.Errorf("the tick %s ran twice", key)
	}
	return err
}

package client

import (
	"context"

	"github.com/agentsdk/agentsdk/api"
)

// Schedules returns the agent's schedules (agent/schedules), by name, each
// with its spec and policies, its next tick (NextRun) and its last runs,
// the latest started first (at most 10). A host whose store runs no
// durable jobs (the in-memory store) lists them with no NextRun and no
// runs: they never tick there.
func (c *Client) Schedules(ctx context.Context) ([]api.ScheduleInfo, error) {
	var ans api.ScheduleList
	if err := c.call(ctx, "listSchedules", nil, nil, nil, &ans); err != nil {
		return nil, err
	}
	return ans.Schedules, nil
}

// RunSchedule runs the named schedule now, once, outside its ticks, on the
// host asked, and returns the run as it started (running, Manual set); it
// ends in the background, and [Client.Schedules] shows its end among the
// schedule's last runs. A run triggered by hand does not move the
// schedule's ticks.
//
// The host refuses, as a [*StatusError] whose code errors.Is matches
// against an [api.Error] with that code: [api.CodeScheduleNotFound] (404)
// for a name the agent has no schedule of, [api.CodeScheduleBusy] (409)
// while the schedule's previous run is still going and its overlap policy
// is skip, [api.CodeNoJobs] (503) on a host whose store runs no durable
// jobs.
func (c *Client) RunSchedule(ctx context.Context, name string) (api.ScheduleRun, error) {
	var ans api.ScheduleRunResponse
	if err := c.call(ctx, "runSchedule", []string{name}, nil, nil, &ans); err != nil {
		return api.ScheduleRun{}, err
	}
	return ans.ScheduleRun, nil
}

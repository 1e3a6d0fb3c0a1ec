package api

import "time"

// Reminder is a wake a tool set on its session (call.Host.Reminders): at
// At, Message starts a new turn in the session. A session has at most one
// reminder per Key; setting the key again moves it (and gives it a new ID).
type Reminder struct {
	SessionID string    `json:"sessionId"`
	Key       string    `json:"key"`
	ID        string    `json:"id"`
	At        time.Time `json:"at"`
	Message   string    `json:"message"`
	SetAt     time.Time `json:"setAt"`
}

// ScheduleRunStatus says where a schedule's run stands.
type ScheduleRunStatus string

// The statuses of a schedule's run.
const (
	RunRunning   ScheduleRunStatus = "running"
	RunCompleted ScheduleRunStatus = "completed"
	RunFailed    ScheduleRunStatus = "failed"
	// RunSkipped: the tick came while the previous run was still going
	// (overlap: skip), or after downtime with catch-up: skip.
	RunSkipped ScheduleRunStatus = "skipped"
	// RunInterrupted: the host running it died; it is not run again.
	RunInterrupted ScheduleRunStatus = "interrupted"
)

// ScheduleRun is one run of a schedule: for a tick, or triggered by hand.
type ScheduleRun struct {
	ID       string            `json:"id"`
	Schedule string            `json:"schedule"`
	Tick     time.Time         `json:"tick"` // when it was due
	Manual   bool              `json:"manual,omitempty"`
	Status   ScheduleRunStatus `json:"status"`
	Host     string            `json:"host,omitempty"` // who ran it
	Started  time.Time         `json:"startedAt"`
	Ended    *time.Time        `json:"endedAt,omitempty"`
	Error    string            `json:"error,omitempty"` // a failed run's error; why a run was skipped
}

// ScheduleInfo describes one of the agent's schedules.
type ScheduleInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Cron        string `json:"cron"`
	TimeZone    string `json:"timeZone"`
	// Overlap is "skip" (a tick while a run is going is skipped) or
	// "allow"; CatchUp is "once" (missed ticks run once after downtime)
	// or "skip".
	Overlap string `json:"overlap"`
	CatchUp string `json:"catchUp"`
	// NextRun is when the next tick is due; absent on a host that runs
	// no jobs.
	NextRun  *time.Time    `json:"nextRun,omitempty"`
	LastRuns []ScheduleRun `json:"lastRuns"`
}

// ScheduleList is the body of GET /v1/schedules.
type ScheduleList struct {
	OK        bool           `json:"ok"`
	Schedules []ScheduleInfo `json:"schedules"`
}

// ScheduleRunResponse is the body of POST /v1/schedules/<name>/run: the
// run as it started.
type ScheduleRunResponse struct {
	OK bool `json:"ok"`
	ScheduleRun
}

// ReminderSet says a tool set (or moved) a reminder on the session.
type ReminderSet struct {
	Key     string    `json:"key"`
	At      time.Time `json:"at"`
	Message string    `json:"message"`
}

// ReminderFired says a reminder woke the session: its message follows, as
// the new turn's user message.
type ReminderFired struct {
	Key     string    `json:"key"`
	At      time.Time `json:"at"`
	Message string    `json:"message"`
}

// ChannelStarted says the session's channel's onStart hook ran, before
// the first model call. Context is what it added to the first turn.
type ChannelStarted struct {
	Channel string   `json:"channel"`
	Context []string `json:"context,omitempty"`
}

// EventKind returns [KindReminderSet].
func (ReminderSet) EventKind() Kind { return KindReminderSet }

// EventKind returns [KindReminderFired].
func (ReminderFired) EventKind() Kind { return KindReminderFired }

// EventKind returns [KindChannelStarted].
func (ChannelStarted) EventKind() Kind { return KindChannelStarted }

// Package schedule defines an agent's schedules: code that runs on a cron
// spec, with a handle on the host. A schedule lives in
// agent/schedules/<name>.go, one per file, named after the file:
//
//	var _ = schedule.Define(schedule.Config{
//		Description: "triage new issues every morning",
//		Cron:        "0 9 * * 1-5",
//		TimeZone:    "Europe/Berlin",
//		Run: func(ctx context.Context, r *schedule.Run) error {
//			out, err := r.CallTool(ctx, "list_issues", map[string]any{"state": "open"}, nil)
//			…
//			_, _, err = r.Send(ctx, "triage", "Triage these issues: "+string(out.Result), &tool.SendOptions{Key: "daily"})
//			return err
//		},
//	})
//
// On a host whose store runs durable jobs (SQLite, PostgreSQL), each tick
// runs once across every host and restart: the tick is a job, and the next
// tick's job is inserted in the transaction that starts this one. A run
// whose host dies is recorded as interrupted and not run again. Runs are
// listed with their start, end and error (GET /<slug>/v1/schedules,
// agent-sdk schedules).
package schedule

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // time zones without the system's database

	"github.com/robfig/cron/v3"

	"github.com/agentsdk/agentsdk/internal/define"
	"github.com/agentsdk/agentsdk/tool"
)

// Overlap says what a tick does while the previous run is still going.
type Overlap string

// Overlap policies.
const (
	// OverlapSkip records the tick as skipped (the default).
	OverlapSkip Overlap = "skip"
	// OverlapAllow runs it alongside.
	OverlapAllow Overlap = "allow"
)

// CatchUp says what happens to the ticks missed while no host ran (or the
// store's job worker was stopped).
type CatchUp string

// Catch-up policies.
const (
	// CatchUpOnce runs once for all the missed ticks (the default).
	CatchUpOnce CatchUp = "once"
	// CatchUpSkip skips them, recording the overdue tick as skipped; the
	// next run is the next tick to come.
	CatchUpSkip CatchUp = "skip"
)

// Config declares a schedule.
type Config struct {
	// Description says what the schedule does.
	Description string
	// Cron is when it runs: five fields (minute hour day-of-month month
	// day-of-week), or six with seconds first ("*/10 * * * * *"), or a
	// descriptor (@hourly, @daily, @every 90s).
	Cron string
	// TimeZone is the IANA zone the spec is read in ("Europe/Berlin");
	// "" is UTC.
	TimeZone string
	// Overlap is the policy for a tick while a run is going; "" is skip.
	Overlap Overlap
	// CatchUp is the policy for ticks missed in downtime; "" is once.
	CatchUp CatchUp
	// Timeout bounds a run (its ctx is cancelled after it); zero is
	// TimeoutDefault.
	Timeout time.Duration
	// Run does the work. An error (or a panic) marks the run failed, with
	// the error; the schedule goes on.
	Run func(ctx context.Context, r *Run) error
}

// TimeoutDefault bounds a run unless its schedule says otherwise.
const TimeoutDefault = time.Hour

// Schedule is a defined schedule.
type Schedule struct {
	name  string
	cfg   Config
	every cron.Schedule
}

// Run is what a run is given: a handle on the host, and which run it is.
type Run struct {
	tool.Handle
	// ID identifies the run among the schedule's runs.
	ID string
	// Schedule is the schedule's name.
	Schedule string
	// Tick is when the run was due (for a run triggered by hand, when it
	// was asked for).
	Tick time.Time
	// Manual is set for a run triggered by hand.
	Manual bool
}

var registry = define.New[*Schedule]("schedule", "")

var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Define defines the schedule of the file it is called in: the file's name
// without .go is the schedule's name. Call it once per file, in a
// package-level var; an invalid definition (a spec that does not parse, an
// unknown time zone) is reported when the host starts.
func Define(cfg Config) *Schedule {
	file, line := define.Caller()
	s, err := New(define.NameFromFile(file), cfg)
	registry.Add(s, err, file, line)
	return s
}

// New defines a schedule with an explicit name, for programs that assemble
// their own set (host.Options.Schedules).
func New(name string, cfg Config) (*Schedule, error) {
	if err := tool.CheckName(name); err != nil {
		return nil, fmt.Errorf("schedule %q: %w", name, err)
	}
	if cfg.Run == nil {
		return nil, fmt.Errorf("schedule %s: Run is required", name)
	}
	switch cfg.Overlap {
	case "":
		cfg.Overlap = OverlapSkip
	case OverlapSkip, OverlapAllow:
	default:
		return nil, fmt.Errorf("schedule %s: Overlap %q is not skip or allow", name, cfg.Overlap)
	}
	switch cfg.CatchUp {
	case "":
		cfg.CatchUp = CatchUpOnce
	case CatchUpOnce, CatchUpSkip:
	default:
		return nil, fmt.Errorf("schedule %s: CatchUp %q is not once or skip", name, cfg.CatchUp)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("schedule %s: Timeout cannot be negative", name)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = TimeoutDefault
	}
	spec := strings.TrimSpace(cfg.Cron)
	if spec == "" {
		return nil, fmt.Errorf("schedule %s: Cron is required", name)
	}
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		return nil, fmt.Errorf("schedule %s: give the time zone in TimeZone, not in Cron", name)
	}
	if cfg.TimeZone == "" {
		cfg.TimeZone = "UTC"
	}
	if _, err := time.LoadLocation(cfg.TimeZone); err != nil {
		return nil, fmt.Errorf("schedule %s: time zone %q: %w", name, cfg.TimeZone, err)
	}
	every, err := parser.Parse("CRON_TZ=" + cfg.TimeZone + " " + spec)
	if err != nil {
		return nil, fmt.Errorf("schedule %s: cron %q: %w", name, spec, err)
	}
	if every.Next(time.Now()).IsZero() {
		return nil, fmt.Errorf("schedule %s: cron %q never fires", name, spec)
	}
	cfg.Cron = spec
	return &Schedule{name: name, cfg: cfg, every: every}, nil
}

// Registered returns the schedules defined with [Define] in the packages
// this program imports; the error reports every invalid definition and
// every file that defines two.
func Registered() ([]*Schedule, error) { return registry.All() }

// Name returns the schedule's name.
func (s *Schedule) Name() string { return s.name }

// Config returns the schedule's configuration, with defaults filled in.
func (s *Schedule) Config() Config { return s.cfg }

// Spec identifies when the schedule runs: its cron spec and time zone. A
// host seeing another spec than the stored one starts a new chain of ticks.
func (s *Schedule) Spec() string { return s.cfg.Cron + " in " + s.cfg.TimeZone }

// Next returns the first tick after t.
func (s *Schedule) Next(t time.Time) time.Time { return s.every.Next(t) }

// Do runs the schedule's Run under its timeout, turning a panic into an
// error. Hosts call it.
func (s *Schedule) Do(ctx context.Context, r *Run) (err error) {
	ctx, cancel := context.WithTimeoutCause(ctx, s.cfg.Timeout, fmt.Errorf("the run took longer than its timeout (%s)", s.cfg.Timeout))
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("run panicked: %v", v)
		}
	}()
	if err := s.cfg.Run(ctx, r); err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
			return fmt.Errorf("%w (%w)", err, cause)
		}
		return err
	}
	return nil
}

package schedule_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/schedule"
)

func run(context.Context, *schedule.Run) error { return nil }

func TestNewRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg  schedule.Config
		want string
	}{
		"no run":      {schedule.Config{Cron: "@hourly"}, "Run is required"},
		"no cron":     {schedule.Config{Run: run}, "Cron is required"},
		"bad cron":    {schedule.Config{Cron: "61 * * * *", Run: run}, "cron"},
		"tz in cron":  {schedule.Config{Cron: "TZ=UTC 0 * * * *", Run: run}, "TimeZone"},
		"bad zone":    {schedule.Config{Cron: "@hourly", TimeZone: "Mars/Olympus", Run: run}, "time zone"},
		"bad overlap": {schedule.Config{Cron: "@hourly", Overlap: "queue", Run: run}, "Overlap"},
		"bad catchup": {schedule.Config{Cron: "@hourly", CatchUp: "all", Run: run}, "CatchUp"},
		"never":       {schedule.Config{Cron: "0 0 30 2 *", Run: run}, "never fires"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := schedule.New("s", tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestNextInZone(t *testing.T) {
	s, err := schedule.New("morning", schedule.Config{Cron: "0 9 * * *", TimeZone: "Europe/Berlin", Run: run})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Config()
	if c.Overlap != schedule.OverlapSkip || c.CatchUp != schedule.CatchUpOnce || c.Timeout != schedule.TimeoutDefault {
		t.Fatalf("defaults: %+v", c)
	}
	// 2026-07-01 is summer time: 09:00 in Berlin is 07:00 UTC.
	next := s.Next(time.Date(2026, 7, 1, 6, 0, 0, 0, time.UTC))
	if want := time.Date(2026, 7, 1, 7, 0, 0, 0, time.UTC); !next.Equal(want) {
		t.Fatalf("Next = %s, want %s", next.UTC(), want)
	}
	sec, err := schedule.New("fast", schedule.Config{Cron: "*/2 * * * * *", Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if next := sec.Next(time.Date(2026, 7, 1, 6, 0, 1, 0, time.UTC)); next.Second() != 2 {
		t.Fatalf("six-field spec: Next = %s", next)
	}
	if s.Spec() == sec.Spec() {
		t.Fatal("two definitions share a Spec")
	}
}

func TestDo(t *testing.T) {
	panics, _ := schedule.New("p", schedule.Config{Cron: "@hourly", Run: func(context.Context, *schedule.Run) error { panic("boom") }})
	if err := panics.Do(context.Background(), &schedule.Run{}); err == nil || !strings.Contains(err.Error(), "panicked: boom") {
		t.Fatalf("a panicking run: %v", err)
	}
	slow, _ := schedule.New("slow", schedule.Config{Cron: "@hourly", Timeout: 50 * time.Millisecond, Run: func(ctx context.Context, _ *schedule.Run) error {
		<-ctx.Done()
		return ctx.Err()
	}})
	err := slow.Do(context.Background(), &schedule.Run{})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timeout (50ms)") {
		t.Fatalf("a run past its timeout: %v", err)
	}
}

package host_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/schedule"
)

// The timers' figures: how late a schedule's run starts after its tick,
// and how many due reminders a host fires a second. Run with
//
//	go test ./host -run '^$' -bench 'Timers' -benchtime 1x
//
// (each iteration is a whole measured run; one is enough).

func percentile(d []time.Duration, p float64) time.Duration {
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// BenchmarkTimersScheduleDelay: a schedule ticking every second for 10 s;
// the delay from each tick to its run's start.
func BenchmarkTimersScheduleDelay(b *testing.B) {
	for _, driver := range drivers {
		b.Run(driver, func(b *testing.B) {
			for b.Loop() {
				var mu sync.Mutex
				var delays []time.Duration
				s := mustSchedule(b, "tick", schedule.Config{Cron: "* * * * * *", Run: func(ctx context.Context, r *schedule.Run) error {
					mu.Lock()
					delays = append(delays, time.Since(r.Tick))
					mu.Unlock()
					return nil
				}})
				h, _ := timerHost(b, openStore(b, driver), emptySet(b), host.Options{Schedules: []*schedule.Schedule{s}})
				time.Sleep(10 * time.Second)
				h.Close()
				mu.Lock()
				b.ReportMetric(float64(len(delays)), "runs")
				b.ReportMetric(float64(percentile(delays, 0.5).Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(percentile(delays, 0.99).Microseconds())/1000, "p99-ms")
				mu.Unlock()
			}
		})
	}
}

// BenchmarkTimersReminders: 200 sessions each set a reminder due at the
// same moment; how fast the host fires them (each fired reminder begins a
// model turn), and how late.
func BenchmarkTimersReminders(b *testing.B) {
	const n = 200
	for _, driver := range drivers {
		b.Run(driver, func(b *testing.B) {
			for b.Loop() {
				h, _ := timerHost(b, openStore(b, driver), reminderTools(b), host.Options{})
				ctx := context.Background()
				due := time.Now().Add(3 * time.Second)
				ids := make([]string, n)
				for i := range ids {
					sess, _, err := h.Sessions().Create(ctx, host.SessionOptions{})
					if err != nil {
						b.Fatal(err)
					}
					ids[i] = sess.ID
					in := remindInput{Key: "k", InMs: int(time.Until(due).Milliseconds()), Message: fmt.Sprint("wake ", i)}
					if out, err := h.CallTool(ctx, "remind", in, &host.CallOptions{SessionID: sess.ID}); err != nil || out.IsError {
						b.Fatal(err, out)
					}
				}
				if time.Now().After(due) {
					b.Fatal("setting the reminders took longer than their delay")
				}
				var fired []time.Time
				deadline := time.Now().Add(2 * time.Minute)
				for len(fired) < n && time.Now().Before(deadline) {
					time.Sleep(200 * time.Millisecond)
					fired = fired[:0]
					for _, id := range ids {
						evs, _ := h.Sessions().Events(ctx, id, 0, 100)
						if f := find(evs, api.KindReminderFired); len(f) > 0 {
							fired = append(fired, f[0].Time)
						}
					}
				}
				if len(fired) < n {
					b.Fatalf("%d of %d fired in 2 minutes", len(fired), n)
				}
				slices.SortFunc(fired, func(a, b time.Time) int { return a.Compare(b) })
				span := fired[n-1].Sub(fired[0])
				late := make([]time.Duration, n)
				for i, f := range fired {
					late[i] = f.Sub(due)
				}
				b.ReportMetric(float64(n)/max(span.Seconds(), 0.001), "fired/s")
				b.ReportMetric(float64(percentile(late, 0.5).Microseconds())/1000, "p50-late-ms")
				b.ReportMetric(float64(percentile(late, 0.99).Microseconds())/1000, "p99-late-ms")
				h.Close()
			}
		})
	}
}

package tooltest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// The host's bounds on reminders (host/reminders.go; not imported: the
// kit links no host).
const (
	maxRemindersPerSession = 100
	maxReminderMessage     = 64 << 10
)

var errRemindersOutsideSession = fmt.Errorf("reminders: %w: a reminder wakes a session; call the tool in one (sessionId, --session; tooltest.Options.Session) or from a model turn", tool.ErrNoSession)

// Reminders are the session's reminders (call.Host.Reminders) in memory,
// checked as a host checks them. They never fire: a test reads them with
// List.
type Reminders struct {
	now func() time.Time
	mu  sync.Mutex
	set map[string]tool.Reminder
}

var _ tool.Reminders = (*Reminders)(nil)

func newReminders(now func() time.Time) *Reminders {
	return &Reminders{now: now, set: map[string]tool.Reminder{}}
}

// Set sets the reminder named key, moving it if the key is set already.
func (r *Reminders) Set(ctx context.Context, key string, at time.Time, message string) (tool.Reminder, error) {
	switch err := tool.CheckKey(key); {
	case err != nil:
		return tool.Reminder{}, fmt.Errorf("reminders: %w", err)
	case strings.TrimSpace(message) == "":
		return tool.Reminder{}, errors.New("reminders: the message is empty")
	case len(message) > maxReminderMessage:
		return tool.Reminder{}, fmt.Errorf("reminders: the message is %d bytes; the limit is %d", len(message), maxReminderMessage)
	case at.IsZero():
		return tool.Reminder{}, errors.New("reminders: no time given")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.set[key]; !ok && len(r.set) >= maxRemindersPerSession {
		return tool.Reminder{}, fmt.Errorf("reminders: setting %q: the session has %d reminders, the most it may have; cancel one first", key, len(r.set))
	}
	rem := tool.Reminder{Key: key, At: at.UTC(), Message: message, SetAt: r.now().UTC()}
	r.set[key] = rem
	return rem, nil
}

// List lists the reminders set, the earliest first.
func (r *Reminders) List(ctx context.Context) ([]tool.Reminder, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]tool.Reminder, 0, len(r.set))
	for _, rem := range r.set {
		out = append(out, rem)
	}
	slices.SortFunc(out, func(a, b tool.Reminder) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out, nil
}

// Cancel removes the reminder named key; an absent key is no error.
func (r *Reminders) Cancel(ctx context.Context, key string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.set, key)
	return nil
}

// Otel is call.Host.Otel: it records what handlers count, measure and
// tag, for a test to read.
type Otel struct {
	mu      sync.Mutex
	counts  map[string]int64
	records map[string][]float64
	tags    map[string]string
}

var _ tool.Otel = (*Otel)(nil)

// Count adds n to a counter.
func (o *Otel) Count(ctx context.Context, name string, n int64, attrs map[string]string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.counts == nil {
		o.counts = map[string]int64{}
	}
	o.counts[name] += n
}

// Record records a value of a histogram.
func (o *Otel) Record(ctx context.Context, name string, value float64, attrs map[string]string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.records == nil {
		o.records = map[string][]float64{}
	}
	o.records[name] = append(o.records[name], value)
}

// TagSession records a session's tag. A call outside a session gets
// tool.ErrNoSession instead, as on a host.
func (o *Otel) TagSession(ctx context.Context, key, value string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tags == nil {
		o.tags = map[string]string{}
	}
	o.tags[key] = value
	return nil
}

// otelView is call.Host.Otel: the kit's recorder, refusing session tags
// outside a session.
type otelView struct {
	o         *Otel
	inSession bool
}

func (v otelView) Count(ctx context.Context, name string, n int64, attrs map[string]string) {
	v.o.Count(ctx, name, n, attrs)
}

func (v otelView) Record(ctx context.Context, name string, value float64, attrs map[string]string) {
	v.o.Record(ctx, name, value, attrs)
}

func (v otelView) TagSession(ctx context.Context, key, value string) error {
	if !v.inSession {
		return tool.ErrNoSession
	}
	return v.o.TagSession(ctx, key, value)
}

// Counter returns a counter's total.
func (o *Otel) Counter(name string) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.counts[name]
}

// Values returns the values recorded for a histogram, in order.
func (o *Otel) Values(name string) []float64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.records[name])
}

// Tags returns the session's tags.
func (o *Otel) Tags() map[string]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string]string, len(o.tags))
	for k, v := range o.tags {
		out[k] = v
	}
	return out
}

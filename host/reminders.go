package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// Reminders (call.Host.Reminders) on River: a reminder is a row and a job
// keyed by the reminder's id, both written in one transaction; setting the
// key again gives it a new id, so the old job finds nothing to take. The
// job takes the reminder and begins the session's new turn in the
// transaction that completes it, so the wake happens once; while another
// turn runs it snoozes, which queues it behind that turn. The host that
// set a reminder also fires it on a timer of its own, on time.

// jobFireReminder fires a reminder (Key: its id).
const jobFireReminder = "reminder.fire"

// Limits of reminders.
const (
	maxRemindersPerSession = 100
	maxReminderMessage     = 64 << 10
)

// timers returns the store's jobs and timers, or the error a feature that
// needs them answers with (the in-memory store has neither).
func (h *Host) timers(feature string) (store.Jobs, error) {
	j, ok := h.log.Store.(store.Jobs)
	if _, timers := h.log.Store.(store.Timers); !ok || !timers {
		return nil, api.Errorf(api.CodeNoJobs, "%s: %s", feature, api.CodeNoJobs.Description())
	}
	return j, nil
}

// reminders returns call.Host.Reminders for a call in a session.
func (h *Host) reminders(sessionID string) tool.Reminders {
	j, err := h.timers("reminders")
	if err != nil {
		return tool.NoReminders{Err: fmt.Errorf("%w: %w", tool.ErrNotConfigured, err)}
	}
	return reminders{h: h, jobs: j, sessionID: sessionID}
}

type reminders struct {
	h         *Host
	jobs      store.Jobs
	sessionID string
}

func (r reminders) Set(ctx context.Context, key string, at time.Time, message string) (tool.Reminder, error) {
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
	var set api.Reminder
	err := r.jobs.InTx(ctx, func(tx store.Tx) error {
		list, err := tx.Reminders(ctx, r.sessionID)
		if err != nil {
			return err
		}
		if len(list) >= maxRemindersPerSession && !hasKey(list, key) {
			return fmt.Errorf("the session has %d reminders, the most it may have; cancel one first", len(list))
		}
		set, err = tx.SetReminder(ctx, api.Reminder{SessionID: r.sessionID, Key: key, ID: newID("rem"), At: at.UTC(), Message: message})
		if err != nil {
			return err
		}
		if err := tx.Schedule(ctx, store.JobSpec{Kind: jobFireReminder, Key: set.ID, At: set.At}); err != nil {
			return err
		}
		_, err = txWriter{tx, r.h.log}.Append(ctx, r.sessionID, events("", api.ReminderSet{Key: key, At: set.At, Message: message})...)
		return err
	})
	if err != nil {
		return tool.Reminder{}, fmt.Errorf("reminders: setting %q: %w", key, err)
	}
	r.h.armReminder(r.jobs, set.ID, set.At)
	return toolReminder(set), nil
}

// armReminder fires a reminder set on this host at its time, here, rather
// than when River's scheduler releases its job (every 5 s, so up to 5 s
// late); the job stays, for a reminder whose host stopped or died. Both
// take the reminder in a transaction: whichever comes first fires it.
func (h *Host) armReminder(j store.Jobs, id string, at time.Time) {
	if _, armed := h.armed.LoadOrStore(id, true); armed {
		return
	}
	var fire func()
	fire = func() {
		if h.ctx.Err() != nil {
			return
		}
		err := j.InTx(h.ctx, func(tx store.Tx) error {
			return h.fireReminderJob(h.ctx, tx, store.Job{Kind: jobFireReminder, Key: id})
		})
		if d, snoozed := store.Snoozed(err); snoozed {
			time.AfterFunc(d, fire) // queued behind a running turn
			return
		}
		h.armed.Delete(id)
		if err != nil && h.ctx.Err() == nil {
			h.logger.Warn("firing a reminder", "reminder", id, "err", err)
		}
	}
	time.AfterFunc(time.Until(at), fire)
}

// armDueReminders arms the reminders due within the next LeaseTTL, set
// here or on any host (Start, and every sweep after, every LeaseTTL/2):
// after a restart, or when the host that set one died, they fire on time
// rather than when River's new leader releases their jobs (20 s late after
// a SIGKILL). Every host arms them; the first to take one fires it.
func (h *Host) armDueReminders(ctx context.Context) {
	j, err := h.timers("reminders")
	if err != nil {
		return
	}
	due, err := h.log.Store.(store.Timers).DueReminders(ctx, time.Now().Add(h.opts.LeaseTTL), 1000)
	if err != nil {
		if ctx.Err() == nil {
			h.logger.Warn("listing due reminders", "err", err)
		}
		return
	}
	for _, r := range due {
		h.armReminder(j, r.ID, r.At)
	}
}

func hasKey(list []api.Reminder, key string) bool {
	for _, r := range list {
		if r.Key == key {
			return true
		}
	}
	return false
}

func (r reminders) List(ctx context.Context) ([]tool.Reminder, error) {
	list, err := r.h.log.Store.(store.Timers).Reminders(ctx, r.sessionID)
	if err != nil {
		return nil, fmt.Errorf("reminders: listing: %w", err)
	}
	out := make([]tool.Reminder, len(list))
	for i, rem := range list {
		out[i] = toolReminder(rem)
	}
	return out, nil
}

func (r reminders) Cancel(ctx context.Context, key string) error {
	_, err := r.h.log.Store.(store.Timers).CancelReminder(ctx, r.sessionID, key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("reminders: cancelling %q: %w", key, err)
	}
	return nil
}

func toolReminder(r api.Reminder) tool.Reminder {
	return tool.Reminder{Key: r.Key, At: r.At, Message: r.Message, SetAt: r.SetAt}
}

// fireReminderJob wakes a reminder's session: the reminder is taken and
// the new turn begun (reminder.fired, then the message) in the job's
// transaction; the turn runs here once it has committed.
func (h *Host) fireReminderJob(ctx context.Context, tx store.Tx, job store.Job) error {
	rem, err := tx.TakeReminder(ctx, job.Key)
	if errors.Is(err, store.ErrNotFound) {
		return nil // cancelled, or set again (under another id)
	}
	if err != nil {
		return err
	}
	sess, err := tx.Session(ctx, rem.SessionID)
	if errors.Is(err, store.ErrNotFound) {
		h.logger.Warn("dropped a reminder: its session is gone", "session", rem.SessionID, "key", rem.Key)
		return nil
	}
	if err != nil {
		return err
	}
	turnID := newID("turn")
	hold, stored, err := tx.BeginTurn(ctx, store.BeginTurnParams{
		Turn:  api.Turn{SessionID: sess.ID, ID: turnID, Kind: api.TurnModel},
		Lease: h.leases.lease(),
		Events: events(turnID, api.TurnStarted{Kind: api.TurnModel}, api.ReminderFired{Key: rem.Key, At: rem.At, Message: rem.Message},
			api.Message{Role: api.RoleUser, Text: rem.Message}),
	})
	if errors.Is(err, store.ErrBusy) {
		// Queued behind the running turn: the reminder stays set.
		return store.Snooze(time.Second)
	}
	if err != nil {
		return err
	}
	tx.AfterCommit(func() {
		h.log.publish(sess.ID, stored)
		h.moved(h.ctx, hold)
		h.startTurn(sess, hold)
	})
	return nil
}

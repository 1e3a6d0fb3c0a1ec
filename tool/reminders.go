package tool

import (
	"context"
	"fmt"
	"time"
)

// Reminder is a wake set on a session: at At, Message starts a new turn.
type Reminder struct {
	Key     string    `json:"key"`
	At      time.Time `json:"at"`
	Message string    `json:"message"`
	SetAt   time.Time `json:"setAt"`
}

// Reminders wake the calling session later (call.Host.Reminders): at the
// time given, the message starts a new model turn in the session — queued
// behind a running turn, not refused. A reminder fires once, across hosts
// and restarts; reminder.set and reminder.fired are on the session's
// stream. Outside a session every method answers ErrNoSession.
type Reminders interface {
	// Set sets the session's reminder named key, moving it if the key is
	// set already.
	Set(ctx context.Context, key string, at time.Time, message string) (Reminder, error)
	// List lists the session's reminders still to fire, the earliest first.
	List(ctx context.Context) ([]Reminder, error)
	// Cancel removes the session's reminder named key; an absent key is
	// no error.
	Cancel(ctx context.Context, key string) error
}

// NoReminders answers every call with err: what a host gives a call
// outside a session (ErrNoSession) or without durable jobs.
type NoReminders struct{ Err error }

// Set returns the error.
func (n NoReminders) Set(context.Context, string, time.Time, string) (Reminder, error) {
	return Reminder{}, n.Err
}

// List returns the error.
func (n NoReminders) List(context.Context) ([]Reminder, error) { return nil, n.Err }

// Cancel returns the error.
func (n NoReminders) Cancel(context.Context, string) error { return n.Err }

var errRemindersOutsideSession = fmt.Errorf("reminders: %w: a reminder wakes a session; call the tool in one (sessionId, --session) or from a model turn", ErrNoSession)

// remindersOutsideSession is call.Host.Reminders outside a session, made
// once (an interface value of a struct allocates).
var remindersOutsideSession Reminders = NoReminders{Err: errRemindersOutsideSession}

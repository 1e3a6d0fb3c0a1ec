package tool

import (
	"encoding/json"
	"time"
)

// EventKind names the kind of an [Event] (api.Kind is this type; the kinds
// and their payload types are listed in package api).
type EventKind string

// Event is one entry of a session's stream (api.Event is this type, and
// api.Decode reads its payload). Seq numbers a session's events from 1
// without gaps; the store assigns it, and the time, when the event is
// appended. Data is the JSON of the kind's payload.
type Event struct {
	SessionID string          `json:"sessionId"`
	Seq       int64           `json:"seq"`
	TurnID    string          `json:"turnId,omitempty"`
	Kind      EventKind       `json:"kind"`
	Data      json.RawMessage `json:"data"`
	Time      time.Time       `json:"time"`
}

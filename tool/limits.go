package tool

import (
	"fmt"
	"reflect"
	"time"
)

// Per-tool limits. [Config.MaxConcurrent] bounds how many calls of a tool
// run at once on a host, across model turns, direct calls and sessions;
// [Config.Exclusive] runs calls one at a time per session, or per key taken
// from the input (one deploy per service). A call over a limit waits its
// turn for up to [Config.BusyWait]; then it is refused as busy (a direct
// call with 429 tool_busy, a model's call with an isError result).

// BusyWaitDefault is how long a call waits for a tool at its limit.
const BusyWaitDefault = 10 * time.Second

// Exclusive makes calls of a tool wait for each other: the zero value
// never; [PerSession] within a session; [ExclusiveBy] for equal keys.
type Exclusive struct {
	perSession bool
	in         reflect.Type     // the key function's input type, for ExclusiveBy
	key        func(any) string // over the boxed input
	err        error
}

// PerSession runs a session's calls of the tool one at a time (calls
// outside any session are not held back).
var PerSession = Exclusive{perSession: true}

// ExclusiveBy runs calls whose key is equal one at a time: key reads the
// validated input (its type must be the handler's; [Define] checks it),
// such as the service a deploy is for. A key function that panics runs
// the call under the key "".
func ExclusiveBy[In any](key func(In) string) Exclusive {
	e := Exclusive{in: reflect.TypeFor[In]()}
	if key == nil {
		e.err = fmt.Errorf("Exclusive: tool.ExclusiveBy was given a nil key function")
		return e
	}
	e.key = func(v any) string { return key(*v.(*In)) }
	return e
}

// IsZero reports whether calls are not exclusive.
func (e Exclusive) IsZero() bool { return !e.perSession && e.key == nil && e.err == nil }

// checkType validates the Exclusive against the handler's input type.
func (e Exclusive) checkType(in reflect.Type) error {
	if e.err != nil {
		return e.err
	}
	if e.in != nil && e.in != in {
		return fmt.Errorf("Exclusive: the key function takes %s but the handler's input is %s", e.in, in)
	}
	return nil
}

// ExclusiveKey returns the key a call holds while it runs, and whether it
// holds one: "session:<id>" per session, "key:<k>" by key.
func (t *Tool) ExclusiveKey(in *Input, sessionID string) (key string, ok bool) {
	e := t.exclusive
	switch {
	case e.perSession && sessionID != "":
		return "session:" + sessionID, true
	case e.key != nil && in != nil:
		defer func() {
			if recover() != nil {
				key, ok = "key:", true
			}
		}()
		return "key:" + e.key(in.value), true
	}
	return "", false
}

// MaxConcurrent returns how many calls of the tool may run at once on a
// host; 0 for no limit.
func (t *Tool) MaxConcurrent() int { return t.maxConcurrent }

// BusyWait returns how long a call waits for the tool at its limit.
func (t *Tool) BusyWait() time.Duration { return t.busyWait }

package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// Subsystem is work of another package that runs on the host's
// machinery: durable jobs worked by the host's job worker, a round at
// every one of the host's sweeps, and services for call.Host. It acts
// on the host through the host's exported API (Sessions, CallTool,
// Store, Go). Package evals is one: evals.New registers it. Register a
// subsystem with [Host.Register], before Start.
type Subsystem struct {
	// Name names the subsystem in the host's logs and errors.
	Name string
	// Jobs are the subsystem's job handlers, by kind, worked from Start
	// on when the store runs durable jobs (store.Jobs). A kind is for
	// good: jobs already stored carry it.
	Jobs map[string]store.JobHandler
	// Sweep, if set, runs at every round of the host's sweep (every
	// LeaseTTL/2, from Start to Close), after the host's own round: where
	// a subsystem finds the work of a host that died. Its ctx ends when
	// the host closes; a panic in it is logged and the next round runs.
	Sweep func(ctx context.Context)
	// Services, if set, is given the services of the host's calls
	// (call.Host), once, as the subsystem is registered, to set those the
	// subsystem offers (package evals sets Evals).
	Services func(*tool.Services)
}

// Register adds a subsystem to the host. Call it before Start and before
// the host runs anything (it changes the services of calls); a kind
// another subsystem or the host handles already, or a Register after
// Start, is an error.
func (h *Host) Register(s Subsystem) error {
	h.subsMu.Lock()
	defer h.subsMu.Unlock()
	if h.started {
		return fmt.Errorf("registering %s: the host has started; register subsystems before Start", s.Name)
	}
	if s.Name == "" {
		return errors.New("registering a subsystem: it has no name")
	}
	own := h.jobHandlers()
	for kind := range s.Jobs {
		if _, dup := own[kind]; dup {
			return fmt.Errorf("registering %s: the host handles jobs of kind %q itself", s.Name, kind)
		}
		for _, o := range h.subsystems {
			if _, dup := o.Jobs[kind]; dup {
				return fmt.Errorf("registering %s: %s handles jobs of kind %q already", s.Name, o.Name, kind)
			}
		}
	}
	h.subsystems = append(h.subsystems, s)
	if s.Services != nil {
		s.Services(&h.services)
		h.direct = h.services
		h.direct.Otel = otelService{h: h}
	}
	return nil
}

// allJobHandlers are the host's job handlers and its subsystems', by kind.
func (h *Host) allJobHandlers() map[string]store.JobHandler {
	m := h.jobHandlers()
	for _, s := range h.subsystems {
		for kind, fn := range s.Jobs {
			m[kind] = fn
		}
	}
	return m
}

// sweepSubsystems is the subsystems' round of the host's sweep.
func (h *Host) sweepSubsystems(ctx context.Context) {
	for _, s := range h.subsystems {
		if s.Sweep == nil || ctx.Err() != nil {
			continue
		}
		func() {
			defer guard(h.logger, "sweeping "+s.Name)
			s.Sweep(ctx)
		}()
	}
}

// Go runs fn in the background on the host: its ctx ends when the host
// closes, and Close waits for fn to return; a panic in fn is logged
// (what says what fn does). It is for the work of subsystems (an eval
// case), which outlives the request that started it. It returns false,
// and runs nothing, once the host is closing.
func (h *Host) Go(what string, fn func(ctx context.Context)) bool {
	if h.Closing() {
		return false
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer guard(h.logger, what)
		fn(h.ctx)
	}()
	return true
}

// Closing reports whether the host is closing (Close has begun): a
// subsystem's job handler starts no new work then, and leaves it for
// another host or the next start.
func (h *Host) Closing() bool { return h.ctx.Err() != nil }

// Store returns the host's store, for subsystems' own records and jobs
// (package evals: store.Evals, store.Jobs). A session's events are
// written through Sessions, which tells the session's followers; never
// through the store directly.
func (h *Host) Store() store.Store { return h.log.Store }

// LeaseTTL returns how long the host's work holds a lease without
// renewing it (Options.LeaseTTL, with its default): a subsystem holding
// work of its own by a lease (an eval case) renews it as often, so that
// a dead host's work is found as fast as its turns.
func (h *Host) LeaseTTL() time.Duration { return h.opts.LeaseTTL }

// ModelTool finds a tool the host's model turns may call: one of Tools,
// the built-in read_result (with a model result budget), or, on a host
// with harnesses, a harness's own calls as recorded (harness_execute,
// harness_edit, …). Evals check the tools their called checks name with
// it.
func (h *Host) ModelTool(name string) (*tool.Tool, bool) {
	if t, ok := h.lookupForModel(name); ok {
		return t, true
	}
	if len(h.opts.Harnesses) == 0 {
		return nil, false
	}
	t, ok := harnessTools()[name]
	return t, ok
}

// NewSessionID returns a new session id, for [SessionOptions].ID: a
// subsystem that records a session's id before the session is made
// (an eval case, as it starts) makes it with this.
func NewSessionID() string { return newID("sess") }

// NewID returns a new id of the host's shape, prefix_<16 random
// lower-case letters and digits>, for a subsystem's own records (an eval
// batch: eval_…).
func NewID(prefix string) string { return newID(prefix) }

// StoreError maps an error of the store to the API's as the host does for
// its own calls: a missing record is notFound (when given), a running
// turn session_busy, a foreign cursor bad_cursor, an *api.Error itself;
// anything else internal, with the store's error as its cause. A
// subsystem reading its own records with the host's store maps its
// errors with it.
func StoreError(err error, notFound *api.Error) error { return storeError(err, notFound) }

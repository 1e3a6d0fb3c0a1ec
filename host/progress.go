package host

import (
	"context"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentsdk/agentsdk/api"
)

// Progress and live output of running calls. A tool reports them as fast
// as it likes (call.Progress, call.Output, an agent tool's stderr lines);
// the host records them as action.progress and action.output events on the
// call's session stream, and hands them to a caller following the call
// (CallOptions.Progress: a streaming HTTP call, an MCP client with a
// progress token), coalesced so that a chatty tool can flood neither the
// store nor the subscribers.
const (
	// progressInterval is the least time between two records of a call:
	// at most 10 a second…
	progressInterval = 100 * time.Millisecond
	// …and, after its first progressBurst records, at most one a second.
	progressSlowInterval = time.Second
	progressBurst        = 100
	// OutputLimit caps the live output recorded for one call; what comes
	// after is dropped, and the last record says so (truncated).
	OutputLimit = 64 << 10
)

// reporter coalesces one call's progress and output. It implements
// tool.Reporter; flush records what is pending.
type reporter struct {
	h                 *Host
	ctx               context.Context
	sessionID, turnID string
	callID, tool      string
	observe           func(api.Payload) // a caller following the call; nil for none

	mu        sync.Mutex
	progress  *api.ActionProgress // the latest not yet recorded
	out       []byte              // output not yet recorded
	outTotal  int                 // output taken so far, up to OutputLimit
	truncated bool                // output was dropped, not yet said
	said      bool                // the truncation was recorded
	timer     *time.Timer
	last      time.Time
	records   int
	closed    bool

	emitMu sync.Mutex // one record at a time, in order
}

// newReporter returns the reporter of a call, or nil when nobody would see
// what it reports (a call outside any session that nobody follows).
func (h *Host) newReporter(ctx context.Context, c callSpec) *reporter {
	if c.session == nil && c.observe == nil {
		return nil
	}
	r := &reporter{h: h, ctx: context.WithoutCancel(ctx), turnID: c.turnID, callID: c.id, tool: c.tool.Name(), observe: c.observe}
	if c.session != nil {
		r.sessionID = c.session.ID
	}
	return r
}

// Progress implements tool.Reporter.
func (r *reporter) Progress(done, total float64, message string) {
	if len(message) > 1024 {
		message = truncateUTF8(message, 1024) + "…"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.progress = &api.ActionProgress{CallID: r.callID, Tool: r.tool, Done: done, Total: total, Message: message}
	r.schedule()
}

// Output implements tool.Reporter.
func (r *reporter) Output(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if room := OutputLimit - r.outTotal; len(text) > room {
		text, r.truncated = truncateUTF8(text, room), true
	}
	r.out = append(r.out, text...)
	r.outTotal += len(text)
	r.schedule()
}

// schedule arranges a flush within the interval; r.mu is held.
func (r *reporter) schedule() {
	if r.timer != nil {
		return
	}
	interval := progressInterval
	if r.records >= progressBurst {
		interval = progressSlowInterval
	}
	r.timer = time.AfterFunc(max(0, interval-time.Since(r.last)), r.flush)
}

// flush records what is pending: the output, then the latest progress.
func (r *reporter) flush() {
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	r.mu.Lock()
	var payloads []api.Payload
	if len(r.out) > 0 || (r.truncated && !r.said) {
		payloads = append(payloads, api.ActionOutput{CallID: r.callID, Tool: r.tool, Text: string(r.out), Truncated: r.truncated && !r.said})
		r.said = r.said || r.truncated
		r.out = r.out[:0]
	}
	if r.progress != nil {
		payloads = append(payloads, *r.progress)
		r.progress = nil
	}
	r.timer, r.last = nil, time.Now()
	if len(payloads) > 0 {
		r.records++
	}
	r.mu.Unlock()
	if len(payloads) == 0 {
		return
	}
	if r.sessionID != "" {
		if err := r.h.emit(r.ctx, r.sessionID, r.turnID, payloads...); err != nil {
			r.h.logger.Warn("recording a call's progress", "call", r.callID, "err", err)
		}
	}
	if r.observe != nil {
		for _, p := range payloads {
			r.observe(p)
		}
	}
}

// close records what is pending and stops the reporter: nothing a tool
// reports after its call returned is recorded, and everything before is,
// ahead of the call's result.
func (r *reporter) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
	r.flush()
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

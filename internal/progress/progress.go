// Package progress coalesces a running call's progress and live output.
// A tool reports them as fast as it likes (call.Progress, call.Output, an
// agent tool's stderr lines); a Reporter hands them on as
// api.ActionProgress and api.ActionOutput payloads at a bounded rate, with
// the output capped, so that a chatty tool can flood neither the store nor
// the subscribers. The host records them on the session's stream (and
// passes them to a caller following the call); a runner reports them to
// the host.
package progress

import (
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentsdk/agentsdk/api"
)

const (
	// Interval is the least time between two records of a call: at most
	// 10 a second…
	Interval = 100 * time.Millisecond
	// …and, after its first Burst records, at most one a second.
	SlowInterval = time.Second
	Burst        = 100
	// OutputLimit caps the live output recorded for one call; what comes
	// after is dropped, and the last record says so (truncated).
	OutputLimit = 64 << 10
	// MessageLimit caps a progress message.
	MessageLimit = 1024
)

// Reporter coalesces one call's progress and output and hands them to
// emit, in order, from one goroutine at a time. It implements
// tool.Reporter; Close hands on what is pending and stops it.
type Reporter struct {
	callID, tool string
	emit         func(...api.Payload)

	mu        sync.Mutex
	progress  *api.ActionProgress // the latest not yet handed on
	out       []byte              // output not yet handed on
	outTotal  int                 // output taken so far, up to OutputLimit
	truncated bool                // output was dropped
	said      bool                // the truncation was handed on
	timer     *time.Timer
	last      time.Time
	records   int
	closed    bool

	emitMu sync.Mutex // one record at a time, in order
}

// New returns the reporter of a call.
func New(callID, tool string, emit func(...api.Payload)) *Reporter {
	return &Reporter{callID: callID, tool: tool, emit: emit}
}

// Progress implements tool.Reporter.
func (r *Reporter) Progress(done, total float64, message string) {
	if len(message) > MessageLimit {
		message = TruncateUTF8(message, MessageLimit) + "…"
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
func (r *Reporter) Output(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if room := OutputLimit - r.outTotal; len(text) > room {
		text, r.truncated = TruncateUTF8(text, room), true
	}
	r.out = append(r.out, text...)
	r.outTotal += len(text)
	r.schedule()
}

// schedule arranges a flush within the interval; r.mu is held.
func (r *Reporter) schedule() {
	if r.timer != nil {
		return
	}
	interval := Interval
	if r.records >= Burst {
		interval = SlowInterval
	}
	r.timer = time.AfterFunc(max(0, interval-time.Since(r.last)), r.flush)
}

// flush hands on what is pending: the output, then the latest progress.
func (r *Reporter) flush() {
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
	if len(payloads) > 0 {
		r.emit(payloads...)
	}
}

// Close hands on what is pending and stops the reporter: nothing a tool
// reports after its call returned goes anywhere, and everything before is
// handed on before Close returns (ahead of the call's result).
func (r *Reporter) Close() {
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

// TruncateUTF8 cuts s to at most n bytes without splitting a character.
func TruncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

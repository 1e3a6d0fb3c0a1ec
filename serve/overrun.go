package serve

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// A direct call's handler runs on the request's goroutine
// (host.CallOptions.Overrun). One that ignores its context past its
// timeout (a blocking read, an HTTP call without a deadline) is answered
// on time by the call's watchdog, but its goroutine runs on, and so did
// its connection, counted under --max-conns as a request in progress:
// about as many calls of such a tool as --max-conns wedged the host, every
// later request, /healthz included, refused 503 (issue 26, item 2). Now
// the watchdog's answer closes the connection (the answer is whole and
// says Connection: close), which frees its place and its descriptor, and
// the handlers still running are counted on their own, per tool: at
// Options.MaxOverrun of one tool, that tool's direct calls are refused
// (503 tool_overrun) until one returns, and the other tools are served.

// overrun answers a direct call whose handler runs on the request's own
// goroutine and outlasts its timeout, or its client: the answer is written
// from the watchdog's goroutine while the handler still runs, whole, with
// its length, and flushed, so the client has it on time; then the
// connection is closed (releaseConn), and the handler counted as overrunning
// until it returns.
type overrun struct {
	w     http.ResponseWriter
	r     *http.Request
	tools *overruns
	sent  atomic.Bool
	began time.Time // when the watchdog answered; set before sent is read true
}

// answer writes out's answer; host.CallTool calls it at most once, and
// returns only after it has.
func (o *overrun) answer(out *api.Outcome) {
	o.began = time.Now()
	o.sent.Store(true)
	o.tools.begin(o.r.Context(), out.ToolName)
	body := outcomeBody(out)
	h := o.w.Header()
	h[CallIDHeader] = []string{out.CallID}
	h["Content-Type"] = jsonContentType
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Connection", "close")
	o.w.WriteHeader(http.StatusOK)
	o.w.Write(body)
	http.NewResponseController(o.w).Flush()
	releaseConn(o.r.Context())
}

// overruns counts, per tool, the direct calls' handlers still running
// past their call's end, and refuses a tool's calls at the cap.
type overruns struct {
	max     int64                   // Options.MaxOverrun; 0: no limit
	tools   map[string]*toolOverrun // by tool name; made once, read without a lock
	logger  *slog.Logger
	gauge   metric.Int64UpDownCounter // agent.tool.overrunning
	refused metric.Int64Counter       // agent.tool.overrun_refused
}

func newOverruns(max int, set *tool.Set, logger *slog.Logger, meter metric.Meter) *overruns {
	names := set.Names()
	o := &overruns{max: int64(max), tools: make(map[string]*toolOverrun, len(names)), logger: logger}
	for _, name := range names {
		t, _ := set.Lookup(name)
		o.tools[name] = &toolOverrun{tool: t}
	}
	// The errors are the meter's (an invalid name): the instruments are
	// then no-ops, which the meter returns with them.
	o.gauge, _ = meter.Int64UpDownCounter("agent.tool.overrunning",
		metric.WithDescription("Direct calls' handlers still running after their call was answered (past its timeout, or its client), by tool."))
	o.refused, _ = meter.Int64Counter("agent.tool.overrun_refused",
		metric.WithDescription("Direct calls refused because their tool had as many handlers overrunning as the host allows (--max-overrun), by tool."))
	return o
}

// admits reports whether a direct call of the tool may run: fewer of its
// handlers than the cap run past their end — those of direct calls this
// server answered early, and those the tool counts itself (calls in
// sessions, model turns, streamed calls: tool.Tool.Overrunning). Calls
// that pass together may overshoot it by their number: a bound, not an
// exact limit.
func (o *overruns) admits(name string) bool {
	t, ok := o.tools[name]
	return o.max == 0 || !ok || t.overrunning() < o.max
}

// toolOverrun is one tool's count.
type toolOverrun struct {
	tool    *tool.Tool
	running atomic.Int64 // direct calls' handlers running past their answer
	refused atomic.Int64 // direct calls refused for it
}

// overrunning is how many of the tool's handlers run past their call's
// end, wherever they were called from.
func (t *toolOverrun) overrunning() int64 {
	n := t.running.Load()
	if t.tool != nil {
		n += t.tool.Overrunning()
	}
	return n
}

// begin counts a handler of the tool as running past its call's end. A
// handler that heeds its context returns a moment later; the tool reaching
// the cap is logged.
func (o *overruns) begin(ctx context.Context, name string) {
	n := o.tool(name).running.Add(1)
	o.gauge.Add(context.WithoutCancel(ctx), 1, metric.WithAttributes(attribute.String("tool.name", name)))
	if n == o.max {
		o.logger.Warn("a tool has as many handlers running on past their calls' answers as allowed (they ignore their context): its direct calls are refused until one returns",
			"tool", name, "overrunning", n, "max_overrun", o.max)
	}
}

// end counts the tool's handler whose call was answered at since as
// returned; one that ran on a second or more is logged.
func (o *overruns) end(ctx context.Context, name string, since time.Time) {
	n := o.tool(name).running.Add(-1)
	o.gauge.Add(context.WithoutCancel(ctx), -1, metric.WithAttributes(attribute.String("tool.name", name)))
	if d := time.Since(since); d >= overrunLogged {
		o.logger.Warn("a tool handler returned long after its call was answered (it ignores its context)", "tool", name, "overran", d.Round(time.Millisecond), "overrunning", n)
	}
}

// overrunLogged is how long a handler runs on past its call's answer before
// its return is logged: one that heeds its context returns at once.
const overrunLogged = time.Second

// tool is the tool's count; a name no tool has (the host answers
// unknown_tool before any handler runs) gets one of its own.
func (o *overruns) tool(name string) *toolOverrun {
	if t, ok := o.tools[name]; ok {
		return t
	}
	return new(toolOverrun)
}

// refuse answers a direct call of a tool at the cap: 503 tool_overrun.
func (o *overruns) refuse(w http.ResponseWriter, r *http.Request, name string) {
	o.refused.Add(context.WithoutCancel(r.Context()), 1, metric.WithAttributes(attribute.String("tool.name", name)))
	if n := o.tool(name).refused.Add(1); n == 1 || n%1000 == 0 {
		o.logger.Warn("refusing direct calls of a tool: it has as many handlers overrunning as allowed", "tool", name, "max_overrun", o.max, "refused", n)
	}
	w.Header().Set("Retry-After", "1")
	writeError(w, api.Errorf(api.CodeToolOverrun,
		"%d calls of %s are still running past their timeout (their handlers ignore their context), as many as the host allows (--max-overrun); its direct calls are refused until one returns", o.max, name))
}

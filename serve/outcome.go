package serve

import (
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/agentsdk/agentsdk/api"
)

var jsonContentType = []string{"application/json"}

// writeOutcome writes a direct call's answer,
// {"ok":true,"toolName":…,"callId":…,"isError":…,"result":…,"durationMs":…},
// by hand: it is the hot path, and every part is already JSON or needs no
// escaping (tool names and call ids are letters, digits, '_' and '-').
func writeOutcome(w http.ResponseWriter, out *api.Outcome) {
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(http.StatusOK)
	w.Write(outcomeBody(out))
}

// outcomeBody is a direct call's answer's body.
func outcomeBody(out *api.Outcome) []byte {
	b := make([]byte, 0, 96+len(out.ToolName)+len(out.CallID)+len(out.Result))
	b = append(b, `{"ok":true,"toolName":"`...)
	b = append(b, out.ToolName...)
	b = append(b, `","callId":"`...)
	b = append(b, out.CallID...)
	b = append(b, `","isError":`...)
	b = strconv.AppendBool(b, out.IsError)
	b = append(b, `,"result":`...)
	if len(out.Result) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, out.Result...)
	}
	b = append(b, `,"durationMs":`...)
	b = strconv.AppendInt(b, out.DurationMs, 10)
	return append(b, "}\n"...)
}

// overrun answers a direct call whose handler runs on the request's own
// goroutine (host.CallOptions.Overrun) and outlasts its timeout, or its
// client: the answer is written from the watchdog's goroutine while the
// handler still runs, whole, with its length, and flushed, so the client
// has it on time. The connection stays busy until the handler returns, so
// the answer also closes it (Connection: close).
type overrun struct {
	w    http.ResponseWriter
	sent atomic.Bool
}

// answer writes out's answer; host.CallTool calls it at most once, and
// returns only after it has.
func (o *overrun) answer(out *api.Outcome) {
	o.sent.Store(true)
	body := outcomeBody(out)
	h := o.w.Header()
	h[CallIDHeader] = []string{out.CallID}
	h["Content-Type"] = jsonContentType
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Connection", "close")
	o.w.WriteHeader(http.StatusOK)
	o.w.Write(body)
	http.NewResponseController(o.w).Flush()
}

package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
)

func (s *Server) listTools(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.ToolList{OK: true, Tools: s.host.Tools().Infos()})
}

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	doc, err := s.openAPIDoc()
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(doc)
}

func (s *Server) callTool(w http.ResponseWriter, r *http.Request) {
	name := s.toolName(r)
	if !s.overruns.admits(name) {
		s.overruns.refuse(w, r, name)
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	req, err := parseCallRequest(body)
	if err != nil {
		writeError(w, err)
		return
	}
	p := principalOf(r)
	if err := s.mayCall(p, name); err != nil {
		writeError(w, err)
		return
	}
	if req.SessionID != "" && !p.Can(api.PermReadAll) {
		if err := s.ownSession(r.Context(), p, req.SessionID); err != nil {
			writeError(w, err)
			return
		}
	}
	opts := &host.CallOptions{SessionID: req.SessionID, Wait: s.wait, Principal: p.ID}
	if prefersAsync(r) {
		// A gated call is answered as soon as it is parked (202).
		opts.Wait = 0
	}
	var st *callStream
	if wantsStream(r) {
		st = &callStream{w: w, timeout: s.streamWrite}
		opts.Progress = st.event
	}
	dc := &directCall{input: req.Input}
	var late *overrun
	if st == nil && req.SessionID == "" {
		// The handler runs on this goroutine; if it outlasts its timeout,
		// late answers from the watchdog's.
		late = &dc.late
		late.w, late.r, late.tools = w, r, s.overruns
		opts.Overrun = late.answer
	}
	out, err := s.host.CallTool(r.Context(), name, &dc.input, opts)
	if late != nil && late.sent.Load() {
		s.overruns.end(r.Context(), name, late.began) // answered already; the handler has returned
		return
	}
	if st != nil {
		st.finish(s, out, err)
		return
	}
	if err == nil {
		dc.id[0] = out.CallID
		w.Header()[CallIDHeader] = dc.id[:]
		writeOutcome(w, out)
		return
	}
	s.answerCall(w, out, err)
}

// directCall is what handling a direct call needs beyond its options, in
// one allocation: the overrun answer, the input (boxed as a pointer, which
// takes no allocation of its own), and the call id header's value.
type directCall struct {
	late  overrun
	input json.RawMessage
	id    [1]string
}

// answerCall writes a direct call's answer: its outcome, 202 for a call
// parked for approval, or the error.
func (s *Server) answerCall(w http.ResponseWriter, out *api.Outcome, err error) {
	if err == nil {
		w.Header()[CallIDHeader] = []string{out.CallID}
		writeOutcome(w, out)
		return
	}
	if pending, ok := errors.AsType[*host.ApprovalPendingError](err); ok {
		w.Header()[CallIDHeader] = []string{pending.CallID}
		writeJSON(w, http.StatusAccepted, s.pendingBody(pending.CallID))
		return
	}
	writeError(w, err)
}

// pendingBody is the answer of a call parked for approval.
func (s *Server) pendingBody(callID string) api.CallPending {
	return api.CallPending{OK: true, Status: api.CallAwaitingApproval, CallID: callID,
		Approve: "POST /" + s.slug + "/v1/approvals/" + callID + ` {"approved": true|false, "reason": "…"}`,
		Outcome: "GET /" + s.slug + "/v1/calls/" + callID}
}

// prefersAsync reports whether a direct call asks not to wait for a
// decision on a gated call: Prefer: respond-async (RFC 7240), as
// agent-sdk call sends, so that it can say at once how to decide it.
func prefersAsync(r *http.Request) bool {
	for _, v := range r.Header.Values("Prefer") {
		for part := range strings.SplitSeq(v, ",") {
			if pref, _, _ := strings.Cut(part, ";"); strings.EqualFold(strings.TrimSpace(pref), "respond-async") {
				return true
			}
		}
	}
	return false
}

// wantsStream reports whether a direct call asks to follow its progress:
// Accept: text/event-stream.
func wantsStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			if baseType(part) == "text/event-stream" {
				return true
			}
		}
	}
	return false
}

// callStream answers a direct call that follows its progress as Server-
// Sent Events: action.progress and action.output events while it runs,
// then the answer it would have had as JSON as the last event, outcome.
// A call refused before it ran (unknown tool, invalid input, …) gets its
// error as plain JSON with its status, as without the header.
type callStream struct {
	w       http.ResponseWriter
	timeout time.Duration // bounds each write: a client that stops reading does not hold the call
	mu      sync.Mutex
	started bool
	done    bool
	failed  bool // a write failed: the client is gone, nothing more is sent
}

// start writes the stream's headers; mu is held.
func (c *callStream) start() {
	if c.started {
		return
	}
	c.started = true
	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	c.w.WriteHeader(http.StatusOK)
}

// send writes one event and flushes it; mu is held.
func (c *callStream) send(kind string, v any) {
	if c.failed {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(api.ErrorResponse{Error: api.Errorf(api.CodeInternal, "encoding an event: %v", err)})
	}
	rc := http.NewResponseController(c.w)
	if c.timeout > 0 {
		rc.SetWriteDeadline(time.Now().Add(c.timeout))
	}
	if _, err := fmt.Fprintf(c.w, "event: %s\ndata: %s\n\n", kind, b); err != nil {
		c.failed = true
		return
	}
	if rc.Flush() != nil {
		c.failed = true
	}
}

// event is CallOptions.Progress.
func (c *callStream) event(p api.Payload) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return
	}
	c.start()
	c.send(string(p.EventKind()), p)
}

// finish writes the call's answer as the last event.
func (c *callStream) finish(s *Server, out *api.Outcome, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	var pending *host.ApprovalPendingError
	switch {
	case errors.As(err, &pending):
		c.w.Header()[CallIDHeader] = []string{pending.CallID}
		c.start()
		c.send("outcome", s.pendingBody(pending.CallID))
	case err != nil && !c.started:
		writeError(c.w, err)
	case err != nil:
		c.send("outcome", api.ErrorResponse{Error: api.AsError(err)})
	default:
		if !c.started {
			c.w.Header()[CallIDHeader] = []string{out.CallID}
		}
		c.start()
		c.send("outcome", api.CallResponse{OK: true, Outcome: *out})
	}
}

package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// heartbeat keeps idle event streams open through proxies.
const heartbeat = 15 * time.Second

// events serves a session's stream: Server-Sent Events with each event's
// seq as its id, resuming after Last-Event-ID or ?after=N; or, with
// ?follow=false, the stored events as JSON.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.host.Sessions().Get(r.Context(), id); err != nil {
		writeError(w, err)
		return
	}
	after, err := resumeAfter(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if r.URL.Query().Get("follow") == "false" {
		s.storedEvents(w, r, id, after)
		return
	}
	if !s.takeStream() {
		w.Header().Set("Retry-After", streamRetryAfter)
		writeError(w, api.Errorf(api.CodeOverCapacity, "the host follows %d event streams, its limit (--max-streams); retry later, or read the stored events with ?follow=false", s.maxStreams))
		return
	}
	defer s.streams.Add(-1)
	s.stream(w, r, id, after)
}

// streamRetryAfter is the Retry-After of a stream refused at the limit, in
// seconds.
const streamRetryAfter = "5"

// takeStream counts one more event stream, unless the server follows
// Options.MaxStreams already.
func (s *Server) takeStream() bool {
	if s.streams.Add(1) > s.maxStreams && s.maxStreams > 0 {
		s.streams.Add(-1)
		return false
	}
	return true
}

// resumeAfter is the seq a stream starts after: Last-Event-ID (a
// reconnecting EventSource), else ?after=N, else 0.
func resumeAfter(r *http.Request) (int64, error) {
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return 0, api.Errorf(api.CodeBadQuery, "Last-Event-ID must be an event's seq")
		}
		return n, nil
	}
	return queryInt(r, "after", 0, 0, 1<<62)
}

// storedEvents answers ?follow=false: the stored events after a seq, as
// JSON.
func (s *Server) storedEvents(w http.ResponseWriter, r *http.Request, id string, after int64) {
	limit, err := queryInt(r, "limit", 1000, 1, 10000)
	if err != nil {
		writeError(w, err)
		return
	}
	evs, err := s.host.Sessions().Events(r.Context(), id, after, int(limit))
	if err != nil {
		writeError(w, err)
		return
	}
	if evs == nil {
		evs = []api.Event{}
	}
	writeJSON(w, http.StatusOK, api.EventList{OK: true, Events: evs})
}

// sseWriter writes events to a stream once each, in seq order.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController // reaches the Flusher through wrappers
	cursor  int64                    // the last seq written
	timeout time.Duration            // bounds each write; 0: none
}

// deadline bounds the next write: a client that stopped reading fails it.
func (sw *sseWriter) deadline() {
	if sw.timeout > 0 {
		sw.rc.SetWriteDeadline(time.Now().Add(sw.timeout))
	}
}

func (sw *sseWriter) write(evs []api.Event) error {
	sw.deadline()
	for _, e := range evs {
		if e.Seq <= sw.cursor {
			continue
		}
		b, _ := json.Marshal(e)
		if _, err := fmt.Fprintf(sw.w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Kind, b); err != nil {
			return err
		}
		sw.cursor = e.Seq
	}
	return nil
}

func (sw *sseWriter) flush() error {
	sw.deadline()
	return sw.rc.Flush()
}

// stream follows a session's events live (host.Sessions.Follow) until
// the client goes, the server shuts down or a write fails. Events are
// written as they come and flushed whenever none is waiting, so that a
// catch-up of thousands is one flush and a live event is sent at once.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, id string, after int64) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	sw := &sseWriter{w: w, rc: http.NewResponseController(w), cursor: after, timeout: s.streamWrite}
	if sw.flush() != nil {
		return
	}
	evs := make(chan api.Event, followBuffer)
	go func() {
		defer close(evs)
		for e, err := range s.host.Sessions().Follow(ctx, id, after) {
			if err != nil {
				return // the stream ends; the client resumes after the last id it has
			}
			select {
			case evs <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		case e, ok := <-evs:
			if !ok {
				return
			}
			batch := []api.Event{e}
			for len(evs) > 0 && len(batch) < followBuffer {
				batch = append(batch, <-evs)
			}
			if err = sw.write(batch); err == nil && (len(evs) == 0 || len(batch) == followBuffer) {
				err = sw.flush()
			}
		case <-tick.C:
			sw.deadline()
			if _, err = fmt.Fprint(w, ": ping\n\n"); err == nil {
				err = sw.flush()
			}
		}
		if err != nil {
			return
		}
	}
}

// followBuffer is how many followed events wait for the stream's writer.
const followBuffer = 256

// Shutdown ends the open event streams, so that a server shutting down does
// not wait for them; ListenAndServe calls it.
func (s *Server) Shutdown() {
	s.closeOnce.Do(func() { close(s.closing) })
}

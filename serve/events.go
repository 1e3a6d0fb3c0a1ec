package serve

import (
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
	ctx := r.Context()
	if _, err := s.host.Session(ctx, id); err != nil {
		writeError(w, err)
		return
	}
	after := int64(0)
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			writeError(w, api.Errorf(api.CodeBadQuery, "Last-Event-ID must be an event's seq"))
			return
		}
		after = n
	} else if v := r.URL.Query().Get("after"); v != "" {
		n, err := queryInt(r, "after", 0, 0, 1<<62)
		if err != nil {
			writeError(w, err)
			return
		}
		after = n
	}
	if r.URL.Query().Get("follow") == "false" {
		limit, err := queryInt(r, "limit", 1000, 1, 10000)
		if err != nil {
			writeError(w, err)
			return
		}
		evs, err := s.host.Events(ctx, id, after, int(limit))
		if err != nil {
			writeError(w, err)
			return
		}
		if evs == nil {
			evs = []api.Event{}
		}
		writeJSON(w, http.StatusOK, api.EventList{OK: true, Events: evs})
		return
	}
	rc := http.NewResponseController(w) // reaches the Flusher through wrappers
	flusher := flushFunc(func() { rc.Flush() })
	// Subscribe before reading the store, so nothing falls in between.
	sub := s.host.Subscribe(id)
	defer sub.Close()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()

	cursor := after
	write := func(evs []api.Event) error {
		for _, e := range evs {
			if e.Seq <= cursor {
				continue
			}
			b, _ := json.Marshal(e)
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Kind, b); err != nil {
				return err
			}
			cursor = e.Seq
		}
		return nil
	}
	catchUp := func() error {
		for {
			evs, err := s.host.Events(ctx, id, cursor, 1000)
			if err != nil {
				return err
			}
			if err := write(evs); err != nil {
				return err
			}
			if len(evs) < 1000 {
				flusher.Flush()
				return nil
			}
		}
	}
	if catchUp() != nil {
		return
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		case batch := <-sub.C:
			if batch[0].Seq > cursor+1 {
				err = catchUp() // something came in between: read it from the store
			} else if err = write(batch); err == nil {
				flusher.Flush()
			}
		case <-sub.Poke:
			err = catchUp()
		case <-tick.C:
			_, err = fmt.Fprint(w, ": ping\n\n")
			flusher.Flush()
		}
		if err != nil {
			return
		}
	}
}

type flushFunc func()

func (f flushFunc) Flush() { f() }

// Shutdown ends the open event streams, so that a server shutting down does
// not wait for them; ListenAndServe calls it.
func (s *Server) Shutdown() {
	s.closeOnce.Do(func() { close(s.closing) })
}

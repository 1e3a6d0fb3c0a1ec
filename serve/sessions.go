package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/store"
)

// decodeJSON decodes a small JSON object body strictly: no unknown fields,
// nothing after the object.
func decodeJSON(body []byte, v any) *apiError {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &apiError{Status: http.StatusBadRequest, Code: "malformed_json", Message: "request body: " + err.Error()}
	}
	if dec.More() {
		return &apiError{Status: http.StatusBadRequest, Code: "malformed_json", Message: "request body: unexpected data after the JSON object"}
	}
	return nil
}

// sessionError maps session errors to the API's.
func sessionError(err error) *apiError {
	switch {
	case errors.Is(err, host.ErrSessionBusy):
		return &apiError{Status: http.StatusConflict, Code: "session_busy", Message: err.Error()}
	case errors.Is(err, host.ErrSessionNotFound):
		return &apiError{Status: http.StatusNotFound, Code: "session_not_found", Message: err.Error()}
	case errors.Is(err, host.ErrNoRunningTurn):
		return &apiError{Status: http.StatusConflict, Code: "no_running_turn", Message: err.Error()}
	case errors.Is(err, host.ErrNoSessions):
		return &apiError{Status: http.StatusBadRequest, Code: "sessions_unavailable", Message: err.Error()}
	case errors.Is(err, host.ErrEmptyMessage):
		return &apiError{Status: http.StatusBadRequest, Code: "empty_message", Message: `send {"message": "…"} with some text`}
	case errors.Is(err, host.ErrInvalidChannel):
		return &apiError{Status: http.StatusBadRequest, Code: "invalid_channel", Message: err.Error()}
	case errors.Is(err, store.ErrBadCursor):
		return &apiError{Status: http.StatusBadRequest, Code: "bad_cursor", Message: err.Error()}
	}
	return &apiError{Status: http.StatusInternalServerError, Code: "internal", Message: err.Error()}
}

// principal is who the bearer token stands for. There is one token per
// host today, so one principal.
const principal = "bearer-token"

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	body, apiErr := s.readBody(w, r)
	var req struct {
		Channel string `json:"channel"`
		Message string `json:"message"`
	}
	if apiErr == nil && len(strings.TrimSpace(string(body))) > 0 {
		apiErr = decodeJSON(body, &req)
	}
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	sess, turnID, err := s.host.CreateSession(r.Context(), host.SessionOptions{Channel: req.Channel, Message: req.Message, Principal: principal})
	if err != nil {
		writeError(w, sessionError(err))
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"ok": true, "sessionId": sess.ID, "turnId": turnID})
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request) {
	body, apiErr := s.readBody(w, r)
	var req struct {
		Message string `json:"message"`
	}
	if apiErr == nil {
		apiErr = decodeJSON(body, &req)
	}
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	turnID, err := s.host.Send(r.Context(), r.PathValue("id"), req.Message)
	if err != nil {
		writeError(w, sessionError(err))
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"ok": true, "sessionId": r.PathValue("id"), "turnId": turnID})
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	sess, err := s.host.Session(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, sessionError(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "session": sess})
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	limit, err := queryInt(r, "limit", 50, 1, 1000)
	if err != nil {
		writeError(w, err)
		return
	}
	page, next, serr := s.host.Sessions(r.Context(), store.Page{Limit: limit, Cursor: r.URL.Query().Get("cursor")})
	if serr != nil {
		writeError(w, sessionError(serr))
		return
	}
	if page == nil {
		page = []store.Session{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "sessions": page, "next": next})
}

func (s *Server) cancelTurn(w http.ResponseWriter, r *http.Request) {
	if err := s.host.Cancel(r.Context(), r.PathValue("id")); err != nil {
		writeError(w, sessionError(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

func queryInt(r *http.Request, name string, def, lo, hi int64) (int, *apiError) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return int(def), nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, &apiError{Status: http.StatusBadRequest, Code: "bad_query", Message: fmt.Sprintf("%s must be a whole number from %d to %d", name, lo, hi)}
	}
	return int(n), nil
}

// heartbeat keeps idle event streams open through proxies.
const heartbeat = 15 * time.Second

// events serves a session's stream: Server-Sent Events with each event's
// seq as its id, resuming after Last-Event-ID or ?after=N; or, with
// ?follow=false, the stored events as JSON.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ctx := r.Context()
	if _, err := s.host.Session(ctx, id); err != nil {
		writeError(w, sessionError(err))
		return
	}
	after := int64(0)
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			writeError(w, &apiError{Status: http.StatusBadRequest, Code: "bad_query", Message: "Last-Event-ID must be an event's seq"})
			return
		}
		after = n
	} else if v := r.URL.Query().Get("after"); v != "" {
		n, apiErr := queryInt(r, "after", 0, 0, 1<<62)
		if apiErr != nil {
			writeError(w, apiErr)
			return
		}
		after = int64(n)
	}
	if r.URL.Query().Get("follow") == "false" {
		limit, apiErr := queryInt(r, "limit", 1000, 1, 10000)
		if apiErr != nil {
			writeError(w, apiErr)
			return
		}
		evs, err := s.host.Events(ctx, id, after, limit)
		if err != nil {
			writeError(w, sessionError(err))
			return
		}
		if evs == nil {
			evs = []store.Event{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "events": evs})
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
	write := func(evs []store.Event) error {
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

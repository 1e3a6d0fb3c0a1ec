package serve

import (
	"bytes"
	"net/http"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/store"
)

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	var req api.CreateSessionRequest
	if err == nil && len(bytes.TrimSpace(body)) > 0 {
		err = decodeJSON(body, &req)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	sess, turnID, err := s.host.Sessions().Create(r.Context(), host.SessionOptions{Channel: req.Channel, Message: req.Message, Principal: principalOf(r).ID, Mode: req.Mode, Runtime: req.Runtime})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, api.TurnStartedResponse{OK: true, SessionID: sess.ID, TurnID: turnID})
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	var req api.SendRequest
	if err == nil {
		err = decodeJSON(body, &req)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	turnID, err := s.host.Sessions().Send(r.Context(), r.PathValue("id"), req.Message)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, api.TurnStartedResponse{OK: true, SessionID: r.PathValue("id"), TurnID: turnID})
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	sess, err := s.host.Sessions().Get(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.SessionResponse{OK: true, Session: sess})
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	limit, err := queryInt(r, "limit", 50, 1, 1000)
	if err != nil {
		writeError(w, err)
		return
	}
	p := store.ListSessionsParams{Page: store.Page{Limit: int(limit), Cursor: r.URL.Query().Get("cursor")}}
	if pr := principalOf(r); !pr.Can(api.PermReadAll) {
		p.Principal = pr.ID // its own sessions only
	}
	page, next, err := s.host.Sessions().ListBy(r.Context(), p)
	if err != nil {
		writeError(w, err)
		return
	}
	if page == nil {
		page = []api.Session{}
	}
	writeJSON(w, http.StatusOK, api.SessionList{OK: true, Sessions: page, Next: next})
}

func (s *Server) cancelTurn(w http.ResponseWriter, r *http.Request) {
	if err := s.host.Sessions().Cancel(r.Context(), r.PathValue("id")); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.OKResponse{OK: true})
}

// compactSession summarises the session's older turns now (a compact
// turn); a session with too little to summarise answers compacted false
// and why.
func (s *Server) compactSession(w http.ResponseWriter, r *http.Request) {
	ans, err := s.host.Sessions().Compact(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

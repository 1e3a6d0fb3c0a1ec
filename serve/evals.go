package serve

import (
	"net/http"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

func (s *Server) runEval(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	var req api.EvalRunRequest
	if err == nil {
		err = decodeJSON(body, &req)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	b, err := s.host.RunEval(r.Context(), req, principal)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, api.EvalBatchResponse{OK: true, EvalBatch: b})
}

func (s *Server) listEvals(w http.ResponseWriter, r *http.Request) {
	limit, err := queryInt(r, "limit", 50, 1, 1000)
	if err != nil {
		writeError(w, err)
		return
	}
	page, next, err := s.host.ListEvals(r.Context(), store.Page{Limit: int(limit), Cursor: r.URL.Query().Get("cursor")})
	if err != nil {
		writeError(w, err)
		return
	}
	if page == nil {
		page = []api.EvalBatch{}
	}
	writeJSON(w, http.StatusOK, api.EvalList{OK: true, Batches: page, Next: next})
}

func (s *Server) getEval(w http.ResponseWriter, r *http.Request) {
	b, err := s.host.GetEval(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.EvalBatchResponse{OK: true, EvalBatch: b})
}

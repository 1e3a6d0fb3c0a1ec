package serve

import (
	"errors"
	"net/http"

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

func (s *Server) callTool(w http.ResponseWriter, r *http.Request) { s.idempotent(w, r, s.callToolOnce) }

func (s *Server) callToolOnce(w http.ResponseWriter, r *http.Request) {
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
	out, err := s.host.CallTool(r.Context(), r.PathValue("name"), req.Input, &host.CallOptions{SessionID: req.SessionID, Wait: s.wait, Principal: principal})
	var pending *host.ApprovalPendingError
	switch {
	case errors.As(err, &pending):
		w.Header()[CallIDHeader] = []string{pending.CallID}
		writeJSON(w, http.StatusAccepted, api.CallPending{OK: true, Status: api.CallAwaitingApproval, CallID: pending.CallID,
			Approve: "POST /" + s.slug + "/v1/approvals/" + pending.CallID + ` {"approved": true|false, "reason": "…"}`,
			Outcome: "GET /" + s.slug + "/v1/calls/" + pending.CallID})
	case err != nil:
		writeError(w, err)
	default:
		w.Header()[CallIDHeader] = []string{out.CallID}
		writeOutcome(w, out)
	}
}

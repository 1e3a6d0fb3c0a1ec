package serve

import (
	"net/http"
	"strings"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/store"
)

// resolve answers POST …/approvals/<callId> {"approved": true|false, "reason": "…", "by": "…"}.
func (s *Server) resolve(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	var req api.ResolveRequest
	if err == nil {
		err = decodeJSON(body, &req)
	}
	if err == nil && req.Approved == nil {
		err = malformed(`send {"approved": true} or {"approved": false, "reason": "…"}`)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	by := principal
	if b := strings.TrimSpace(req.By); b != "" {
		by = principal + ":" + b // a label the token's holder vouches for
	}
	a, err := s.host.Approvals().Resolve(r.Context(), r.PathValue("callId"), host.Decision{
		Approved: *req.Approved, Reason: req.Reason, By: by, SessionID: r.PathValue("id"),
		Via: s.via(r), UserAgent: r.UserAgent(),
	})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ApprovalResponse{OK: true, Approval: a})
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	limit, err := queryInt(r, "limit", 100, 1, 1000)
	if err != nil {
		writeError(w, err)
		return
	}
	status := api.ApprovalStatus(r.URL.Query().Get("status"))
	if status != "" && !status.Valid() {
		writeError(w, api.Errorf(api.CodeBadQuery, "status must be pending, approved, denied, expired or cancelled"))
		return
	}
	list, next, err := s.host.Approvals().List(r.Context(), status, store.Page{Limit: int(limit), Cursor: r.URL.Query().Get("cursor")})
	if err != nil {
		writeError(w, err)
		return
	}
	if list == nil {
		list = []api.Approval{}
	}
	writeJSON(w, http.StatusOK, api.ApprovalList{OK: true, Approvals: list, Next: next})
}

// callStatus answers GET /calls/<callId>: the outcome of a gated direct
// call once decided and run, or that it is still pending.
func (s *Server) callStatus(w http.ResponseWriter, r *http.Request) {
	a, err := s.host.Approvals().Get(r.Context(), r.PathValue("callId"))
	if err != nil {
		writeError(w, err)
		return
	}
	if out := a.Outcome; out != nil {
		writeJSON(w, http.StatusOK, api.CallDone{OK: true, Status: api.CallState(a.Status), ToolName: out.ToolName, CallID: out.CallID,
			IsError: out.IsError, Result: out.Result, DurationMs: out.DurationMs})
		return
	}
	state := api.CallRunning
	if a.Status == api.ApprovalPending {
		state = api.CallAwaitingApproval
	}
	writeJSON(w, http.StatusOK, api.CallStatus{OK: true, Status: state, CallID: a.CallID, Approval: a})
}

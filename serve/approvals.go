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
	by := principalOf(r).ID
	if b := strings.TrimSpace(req.By); b != "" {
		by += ":" + b // a label the principal vouches for
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
	p := store.ListApprovalsParams{Status: status, Page: store.Page{Limit: int(limit), Cursor: r.URL.Query().Get("cursor")}}
	if pr := principalOf(r); !pr.Can(api.PermApprove) && !pr.Can(api.PermReadAll) {
		p.RequestedBy = pr.ID // its own calls only
	}
	list, next, err := s.host.Approvals().ListBy(r.Context(), p)
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
	if err == nil && !seesApproval(principalOf(r), a) {
		err = api.Errorf(api.CodeApprovalNotFound, "%s: %s", api.ErrApprovalNotFound.Message, a.CallID) // as if there were none
	}
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

package serve

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/store"
)

// ApprovalWaitDefault is how long a direct call of a gated tool waits for a
// decision before answering 202.
const ApprovalWaitDefault = 30 * time.Second

func approvalError(err error) *apiError {
	var already *host.AlreadyResolvedError
	switch {
	case errors.As(err, &already):
		a := already.Approval
		return &apiError{Status: http.StatusConflict, Code: "already_resolved", Message: err.Error(), Approval: &a}
	case errors.Is(err, host.ErrApprovalNotFound):
		return &apiError{Status: http.StatusNotFound, Code: "approval_not_found", Message: err.Error()}
	case errors.Is(err, host.ErrApprovalExpired):
		return &apiError{Status: http.StatusGone, Code: "approval_expired", Message: err.Error()}
	}
	return sessionError(err)
}

// resolve answers POST …/approvals/<callId> {"approved": true|false, "reason": "…", "by": "…"}.
func (s *Server) resolve(w http.ResponseWriter, r *http.Request) {
	body, apiErr := s.readBody(w, r)
	var req struct {
		Approved *bool  `json:"approved"`
		Reason   string `json:"reason"`
		By       string `json:"by"`
	}
	if apiErr == nil {
		apiErr = decodeJSON(body, &req)
	}
	if apiErr == nil && req.Approved == nil {
		apiErr = &apiError{Status: http.StatusBadRequest, Code: "malformed_json", Message: `request body: send {"approved": true} or {"approved": false, "reason": "…"}`}
	}
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	by := principal
	if b := strings.TrimSpace(req.By); b != "" {
		by = principal + ":" + b // a label the token's holder vouches for
	}
	a, err := s.host.Resolve(r.Context(), r.PathValue("callId"), host.Decision{
		Approved: *req.Approved, Reason: req.Reason, By: by, SessionID: r.PathValue("id"),
	})
	if err != nil {
		writeError(w, approvalError(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "approval": a})
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	limit, apiErr := queryInt(r, "limit", 100, 1, 1000)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	status := r.URL.Query().Get("status")
	switch status {
	case "", store.ApprovalPending, store.ApprovalApproved, store.ApprovalDenied, store.ApprovalExpired:
	default:
		writeError(w, &apiError{Status: http.StatusBadRequest, Code: "bad_query", Message: "status must be pending, approved, denied or expired"})
		return
	}
	list, next, err := s.host.Approvals(r.Context(), status, store.Page{Limit: limit, Cursor: r.URL.Query().Get("cursor")})
	if err != nil {
		writeError(w, sessionError(err))
		return
	}
	if list == nil {
		list = []store.Approval{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "approvals": list, "next": next})
}

// callStatus answers GET /calls/<callId>: the outcome of a gated direct
// call once decided and run, or that it is still pending.
func (s *Server) callStatus(w http.ResponseWriter, r *http.Request) {
	a, err := s.host.CallOutcome(r.Context(), r.PathValue("callId"))
	if err != nil {
		writeError(w, approvalError(err))
		return
	}
	writePending := func(status string) {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "status": status, "callId": a.CallID, "approval": a})
	}
	if a.Outcome == nil {
		if a.Status == store.ApprovalPending {
			writePending("approval_pending")
		} else {
			writePending("running")
		}
		return
	}
	var out host.Outcome
	if err := decodeOutcome(a.Outcome, &out); err != nil {
		writeError(w, &apiError{Status: http.StatusInternalServerError, Code: "internal", Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "status": a.Status, "toolName": out.ToolName, "callId": out.CallID,
		"isError": out.IsError, "result": out.Result, "durationMs": out.DurationMs})
}

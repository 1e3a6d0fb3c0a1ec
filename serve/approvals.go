package serve

import (
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/store"
)

// resolve answers POST …/approvals/<callId> {"approved": true|false,
// "reason": "…", "onBehalfOf": "…", "input": {…}}. The decider is the
// request's principal; only an admin may say whom it decides for
// (onBehalfOf), recorded as "<principal>:<name>". A by is refused.
func (s *Server) resolve(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	var req api.ResolveRequest
	if err == nil {
		err = decodeJSON(body, &req)
	}
	if err == nil && req.Approved == nil {
		err = malformed(`send {"approved": true} or {"approved": false, "reason": "…"}`)
	}
	pr := principalOf(r)
	var by string
	if err == nil {
		by, err = decider(pr, req)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	input := req.Input
	if len(input) == 0 || string(input) == "null" {
		input = nil
	}
	a, err := s.host.Approvals().Resolve(r.Context(), r.PathValue("callId"), host.Decision{
		Approved: *req.Approved, Reason: req.Reason, By: by, SessionID: r.PathValue("id"),
		Via: s.via(r), UserAgent: r.UserAgent(),
		Principal: pr.ID, Roles: pr.Roles, Admin: pr.Can(api.PermAdmin), Email: pr.Email, Input: input,
	})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ApprovalResponse{OK: true, Approval: a})
}

// maxOnBehalf is the longest name onBehalfOf takes.
const maxOnBehalf = 200

// decider is whom a decision is recorded as: the principal, or an
// admin's "<principal>:<onBehalfOf>". A non-admin naming anyone, by
// either field, is refused (on_behalf_not_allowed): the decider is who
// authenticated. An admin's by is refused too (malformed_json): by was
// once read as onBehalfOf, and only onBehalfOf names another now.
func decider(pr Principal, req api.ResolveRequest) (string, error) {
	name := strings.TrimSpace(req.OnBehalfOf)
	by := strings.TrimSpace(req.By)
	if name == "" && by == "" {
		return pr.ID, nil
	}
	if !pr.Can(api.PermAdmin) {
		field := "onBehalfOf"
		if name == "" {
			name, field = by, "by"
		}
		return "", api.Errorf(api.CodeOnBehalfNotAllowed, "on_behalf_not_allowed: %s may not decide on behalf of %q (%s): a decision is recorded as the principal that makes it (send neither by nor onBehalfOf), and only an admin may name another, with onBehalfOf",
			pr.Name, truncateText(name, 64), field)
	}
	if by != "" {
		return "", api.Errorf(api.CodeMalformedJSON, "by is not read: a decision is recorded as the principal that makes it, and an admin names whom it decides for with onBehalfOf (send {\"onBehalfOf\": %q})",
			truncateText(by, 64))
	}
	if len(name) > maxOnBehalf || strings.IndexFunc(name, func(r rune) bool { return unicode.IsControl(r) || r == utf8.RuneError }) >= 0 {
		return "", api.Errorf(api.CodeBadRequest, "onBehalfOf must be 1 to %d bytes of UTF-8 without control characters", maxOnBehalf)
	}
	return pr.ID + ":" + name, nil
}

// truncateText cuts s to at most n bytes at a rune boundary.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
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

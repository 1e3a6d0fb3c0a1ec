package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/agentsdk/agentsdk/api"
)

// listAudit answers GET /audit?after=N&limit=M: a page of the audit log
// and its head.
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) {
	after, err := queryInt(r, "after", 0, 0, 1<<62)
	if err != nil {
		writeError(w, err)
		return
	}
	limit, err := queryInt(r, "limit", 1000, 1, 1000)
	if err != nil {
		writeError(w, err)
		return
	}
	entries, head, err := s.host.AuditLog(r.Context(), after, int(limit))
	if err != nil {
		writeError(w, err)
		return
	}
	list := api.AuditList{OK: true, Entries: entries, Head: head}
	if list.Entries == nil {
		list.Entries = []api.AuditEntry{}
	}
	if n := len(entries); n == int(limit) && entries[n-1].Seq < head.Seq {
		list.Next = entries[n-1].Seq
	}
	writeJSON(w, http.StatusOK, list)
}

// via says how a request reached the host, for the audit log: with the
// playground's cookie (admitted without an Authorization header: see
// cookieAdmits), or with a bearer credential from the CLI (as its
// User-Agent says) or any other client.
func (s *Server) via(r *http.Request) string {
	switch {
	case r.Header["Authorization"] == nil && s.pg != nil && len(r.CookiesNamed(PlaygroundCookie)) > 0:
		return "playground"
	case strings.HasPrefix(r.UserAgent(), api.CLIUserAgent):
		return "cli"
	}
	return "http"
}

// auditSignIn records a playground sign-in or sign-out (kind) of the
// session sid, right after it took effect. The entry names the session
// by a hash of its id, never the id, which is the cookie's secret half. A
// failure to record is logged: the sign-in stands.
func (s *Server) auditSignIn(r *http.Request, kind api.AuditKind, sid string, p Principal) {
	detail, _ := json.Marshal(api.AuditSignInDetail{Via: "playground", Remote: r.RemoteAddr, UserAgent: r.UserAgent(), Email: p.Email})
	sum := sha256.Sum256([]byte(sid))
	if _, err := s.host.Audit(r.Context(), api.AuditRecord{Kind: kind, Principal: p.ID,
		Subject: "playground:" + hex.EncodeToString(sum[:8]), Detail: detail}); err != nil {
		s.logger.Error("recording a playground sign-in in the audit log", "kind", kind, "err", err)
	}
}

// keyAudit is the audit record of a key created or revoked (kind) by r's
// principal, which the store appends in the transaction of the change.
func keyAudit(r *http.Request, kind api.AuditKind, k api.Key) api.AuditRecord {
	detail, _ := json.Marshal(map[string]any{"name": k.Name, "roles": k.Roles, "expiresAt": k.ExpiresAt})
	return api.AuditRecord{Kind: kind, Principal: principalOf(r).ID, Subject: k.ID, Detail: detail}
}

package serve

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// The runner routes (api.Routes runnerClaim, runnerReport) take the host's
// token: a runner is trusted with the agent's turns. What it gets in a
// claim is a runner token, good only on the MCP endpoint and only for
// calls in that session's running turn.

// claimWaitMax bounds how long a claim waits for a turn.
const claimWaitMax = 30 * time.Second

func (s *Server) runnerClaim(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	var req api.RunnerClaimRequest
	if err == nil {
		err = decodeJSON(body, &req)
	}
	if err == nil && (req.WaitMs < 0 || time.Duration(req.WaitMs)*time.Millisecond > claimWaitMax) {
		err = api.Errorf(api.CodeBadRequest, "waitMs %d: want 0 to %d", req.WaitMs, claimWaitMax.Milliseconds())
	}
	if err != nil {
		writeError(w, err)
		return
	}
	c, err := s.host.Runners().Claim(r.Context(), req.Runner, time.Duration(req.WaitMs)*time.Millisecond)
	switch {
	case err != nil:
		writeError(w, err)
	case c == nil:
		w.WriteHeader(http.StatusNoContent)
	default:
		// A harness's MCP calls are announced and recorded by the host.
		c.RunnerToken = s.runnerToken(runnerScope{Session: c.SessionID, Turn: c.TurnID, Token: c.Token, Harness: c.Harness != nil})
		writeJSON(w, http.StatusOK, c)
	}
}

func (s *Server) runnerReport(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	var rep api.RunnerReport
	if err == nil {
		err = decodeJSON(body, &rep)
	}
	if err == nil {
		err = s.host.Runners().Report(r.Context(), r.PathValue("sessionId"), r.PathValue("turnId"), rep)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.OKResponse{OK: true})
}

// runnerAdmit answers POST /runner/turns/{sessionId}/{turnId}/admit: may
// the cloud turn's next model call be made, within the usage limits.
func (s *Server) runnerAdmit(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	var req api.RunnerAdmit
	if err == nil {
		err = decodeJSON(body, &req)
	}
	var ans api.RunnerAdmitted
	if err == nil {
		ans, err = s.host.Runners().Admit(r.Context(), r.PathValue("sessionId"), r.PathValue("turnId"), req)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

// runnerTokenPrefix starts every runner token.
const runnerTokenPrefix = "agrt_"

// runnerScope is what a runner token allows: calls in one turn.
type runnerScope struct {
	Session string `json:"s"`
	Turn    string `json:"t"`
	Token   int64  `json:"k"` // the claim's fence: a later claim of the turn voids it
	// Harness says the token is a harness turn's (harness.go): a local
	// one's (no Token) is good while this host runs the turn, a runner's
	// while its claim holds it.
	Harness bool `json:"h,omitempty"`
}

// runnerToken mints a token for the MCP endpoint scoped to a claim of a
// turn: agrt_<base64url scope>.<base64url HMAC-SHA256>, keyed with a key
// derived from the host's token, so that any host serving the agent with
// that token accepts it and none accepts it for anything else. It is good
// while the claim holds (runnerAuthorized): once the turn has ended or
// another claim has taken it, the MCP endpoint refuses it.
func (s *Server) runnerToken(sc runnerScope) string {
	scope, _ := json.Marshal(sc)
	payload := base64.RawURLEncoding.EncodeToString(scope)
	return runnerTokenPrefix + payload + "." + base64.RawURLEncoding.EncodeToString(s.runnerMAC(payload))
}

func (s *Server) runnerMAC(payload string) []byte {
	key := sha256.Sum256(append([]byte("agent-sdk runner token\x00"), s.token...))
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// runnerTokenScope verifies a runner token and returns its scope.
func (s *Server) runnerTokenScope(token string) (runnerScope, bool) {
	rest, ok := strings.CutPrefix(token, runnerTokenPrefix)
	if !ok {
		return runnerScope{}, false
	}
	payload, sig, ok := strings.Cut(rest, ".")
	if !ok {
		return runnerScope{}, false
	}
	// Strict: a signature's last character has two spare bits, which a
	// lax decoding ignores; only the one canonical text is the token.
	mac, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil || !hmac.Equal(mac, s.runnerMAC(payload)) {
		return runnerScope{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	var sc runnerScope
	if err != nil || json.Unmarshal(raw, &sc) != nil || sc.Session == "" || sc.Turn == "" {
		return runnerScope{}, false
	}
	return sc, true
}

// runnerAuthorized reports whether r carries a valid runner token whose
// claim still holds its turn; only the MCP endpoint takes one. Once the
// turn has ended, parked, or been claimed again, the token opens nothing
// there either (no tools/list, no tools/call): it is refused as a wrong
// token is.
func (s *Server) runnerAuthorized(r *http.Request) bool {
	if r.URL.Path != "/"+s.slug+mcpPath {
		return false // no HMAC for a path a runner token cannot open
	}
	sc, ok := s.bearerScope(r.Header)
	if ok && sc.Harness && sc.Token == 0 {
		return s.host.RunsHarnessTurn(sc.Session, sc.Turn)
	}
	return ok && s.host.Runners().Holds(r.Context(), sc.Session, sc.Turn, sc.Token)
}

// bearerScope returns the scope of the runner token in a request's
// Authorization header, if it carries one.
func (s *Server) bearerScope(h http.Header) (runnerScope, bool) {
	cred, ok := bearerCredential(h)
	if !ok {
		return runnerScope{}, false
	}
	return s.runnerTokenScope(cred)
}

// Headers a runner's MCP tools/call carries: the call's ids as the runner
// announced it in actions.requested.
const (
	CallIDRequestHeader      = "X-Agent-Call-Id"
	ModelCallIDRequestHeader = "X-Agent-Model-Call-Id"
)

// runnerPermission answers POST
// /runner/turns/{sessionId}/{turnId}/permission: a runner's harness asks
// to run one of its calls; the host parks it and waits for the decision.
func (s *Server) runnerPermission(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	var req api.RunnerPermission
	if err == nil {
		err = decodeJSON(body, &req)
	}
	if err == nil && (req.WaitMs < 0 || time.Duration(req.WaitMs)*time.Millisecond > claimWaitMax) {
		err = api.Errorf(api.CodeBadRequest, "waitMs %d: want 0 to %d", req.WaitMs, claimWaitMax.Milliseconds())
	}
	var ans api.RunnerDecision
	if err == nil {
		ans, err = s.host.Runners().Permission(r.Context(), r.PathValue("sessionId"), r.PathValue("turnId"), req)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

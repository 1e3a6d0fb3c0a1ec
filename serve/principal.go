package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// Principal is who a request acts for: the host token's holder (the
// bootstrap admin, ID "bearer-token"), the holder of an API key (ID
// "key:<id>", its name and roles), or the subject of an OIDC token (ID
// "oidc:<sub>", its name, email and the roles of its roles claim:
// [OIDCOptions]). Sessions record it, idempotency keys and quotas are
// counted per ID, and decisions are made as it.
type Principal struct {
	ID    string
	Name  string
	Email string // an OIDC token's email claim; empty otherwise
	Roles []string
	perms perms
}

// Can reports whether the principal's roles grant perm (admin grants
// every permission).
func (p Principal) Can(perm api.Permission) bool { return p.perms.has(perm) }

// tokenPrincipalID is the principal of the host token, as it has always
// been recorded.
const tokenPrincipalID = "bearer-token"

// tokenPrincipal is the host token's holder: the bootstrap admin. The
// playground signed in with the token and runner tokens act as it too.
var tokenPrincipal = Principal{ID: tokenPrincipalID, Name: "host token", Roles: []string{"admin"}, perms: allPerms}

// perms is a set of permissions, a bit per api.Permissions entry.
type perms uint16

const allPerms perms = 1<<16 - 1

func permBit(p api.Permission) perms {
	if i := slices.Index(api.Permissions, p); i >= 0 {
		return 1 << i
	}
	return 0
}

func (ps perms) has(p api.Permission) bool {
	b := permBit(p)
	return b != 0 && (ps&b != 0 || ps&permBit(api.PermAdmin) != 0)
}

// roleTable is a host's roles: api.DefaultRoles with Options.Roles over
// them.
type roleTable map[string]perms

func newRoleTable(extra map[string][]api.Permission) (roleTable, error) {
	t := roleTable{}
	for _, src := range []map[string][]api.Permission{api.DefaultRoles, extra} {
		for name, list := range src {
			if err := api.CheckRoleName(name); err != nil {
				return nil, err
			}
			var ps perms
			for _, p := range list {
				if !p.Valid() {
					return nil, fmt.Errorf("role %s: unknown permission %q (permissions: %v)", name, p, api.Permissions)
				}
				ps |= permBit(p)
			}
			t[name] = ps
		}
	}
	return t, nil
}

// of is what roles grant together; a role the host does not know (one
// agent.yaml no longer has) grants nothing.
func (t roleTable) of(roles []string) perms {
	var ps perms
	for _, r := range roles {
		ps |= t[r]
	}
	return ps
}

// unknown returns the first of roles the host does not know, or "".
func (t roleTable) unknown(roles []string) string {
	for _, r := range roles {
		if _, ok := t[r]; !ok {
			return r
		}
	}
	return ""
}

// names lists the host's roles, sorted.
func (t roleTable) names() []string {
	out := make([]string, 0, len(t))
	for name := range t {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

type principalKey struct{}

// withPrincipal returns r acting for p. The host token's requests carry
// none (principalOf's default), so that its hot path allocates nothing
// more than before.
func withPrincipal(r *http.Request, p Principal) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
}

// principalOf returns whom an admitted request acts for: an API key's
// holder, or else the host token's (the token, the playground's cookie, a
// runner token). Only requests [Server.admit] let through with a
// credential are ever asked.
func principalOf(r *http.Request) Principal { return principalIn(r.Context()) }

func principalIn(ctx context.Context) Principal {
	if p, ok := ctx.Value(principalKey{}).(Principal); ok {
		return p
	}
	return tokenPrincipal
}

// forbidden is the 403 of a principal whose roles lack perm.
func forbidden(p Principal, perm api.Permission, what string) *api.Error {
	return api.Errorf(api.CodeForbidden, "%s needs the permission %s, which the roles of %s (%s) do not grant", what, perm, p.Name, strings.Join(p.Roles, ", "))
}

// permit wraps a route's handler: its permission, and for a route of one
// session ({id} under /session/), that the session is the principal's own
// unless its roles read all — another principal's session is
// session_not_found, as a session that does not exist, so that ids do not
// leak.
func (s *Server) permit(rt api.Route, fn http.HandlerFunc) http.HandlerFunc {
	ownSession := strings.HasPrefix(rt.Path, "/session/{id}")
	what := rt.Method + " " + rt.Path
	return func(w http.ResponseWriter, r *http.Request) {
		p := principalOf(r)
		if !p.Can(rt.Permission) {
			writeError(w, forbidden(p, rt.Permission, what))
			return
		}
		if ownSession && !p.Can(api.PermReadAll) {
			if err := s.ownSession(r.Context(), p, r.PathValue("id")); err != nil {
				writeError(w, err)
				return
			}
		}
		fn(w, r)
	}
}

// ownSession returns nil if the session is p's, else the error of a
// session that does not exist.
func (s *Server) ownSession(ctx context.Context, p Principal, id string) error {
	sess, err := s.host.Store().Session(ctx, id)
	if err == nil && sess.Principal == p.ID {
		return nil
	}
	if err != nil && !isNotFound(err) {
		return err
	}
	return api.Errorf(api.CodeSessionNotFound, "session not found: %s", id)
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

// seesApproval reports whether p may see a parked or decided call: one of
// its own calls, or any when its roles approve or read all.
func seesApproval(p Principal, a api.Approval) bool {
	return p.Can(api.PermApprove) || p.Can(api.PermReadAll) || a.RequestedBy == p.ID
}

// mayCall reports whether p may call the tool directly: its Callers
// (roles) when it names some, else anyone with the call permission.
func (s *Server) mayCall(p Principal, name string) error {
	if !p.Can(api.PermCall) {
		return forbidden(p, api.PermCall, "calling a tool")
	}
	t, ok := s.host.Tools().Lookup(name)
	if !ok || len(t.Callers()) == 0 || p.Can(api.PermAdmin) {
		return nil
	}
	for _, r := range p.Roles {
		if slices.Contains(t.Callers(), r) {
			return nil
		}
	}
	return api.Errorf(api.CodeForbidden, "tool %s may be called directly by the roles %s only; the roles of %s are %s",
		name, strings.Join(t.Callers(), ", "), p.Name, strings.Join(p.Roles, ", "))
}

// principalFor returns whom an MCP request with header acts for, from
// its credential again: the MCP SDK hands a tool's handler the request's
// header, not its context. The request was admitted, so its credential
// was checked once already; an API key is looked up again (revoked in
// between, it is refused now), a JWT found in the verified-token cache
// (oidc_cache.go) or verified again.
func (s *Server) principalFor(ctx context.Context, h http.Header) (Principal, error) {
	p, isKey, err := s.keyPrincipal(ctx, h)
	switch {
	case err != nil:
		return Principal{}, err
	case isKey:
		return p, nil
	}
	if p, isJWT, err := s.jwtPrincipalFor(ctx, h, true); isJWT {
		return p, err
	}
	return tokenPrincipal, nil
}

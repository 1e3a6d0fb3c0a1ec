package serve

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/agentsdk/agentsdk/api"
)

// The MCP endpoint as an OAuth 2.1 resource server (the MCP authorization
// spec, 2025-06-18 and later). With [Options.OIDC] and [Options.PublicURL]
// both set, the endpoint's resource URL is <public-url>/<slug>/mcp and:
//
//   - its protected-resource metadata (RFC 9728) is public at
//     /.well-known/oauth-protected-resource/<slug>/mcp (the path of the
//     resource inserted after the well-known prefix, where the spec and
//     the MCP SDKs look first): the resource, the issuer as its one
//     authorization server, the scope tools:call, bearer tokens in the
//     header;
//   - a 401 from the endpoint carries WWW-Authenticate: Bearer
//     resource_metadata="<that URL>", so that a client (Claude Desktop,
//     the Go SDK's AuthorizationCodeHandler) finds the issuer and signs
//     its user in;
//   - a bearer JWT there must carry the resource URL in its aud (RFC 8707:
//     the client asks for it with resource=), not the API's audience — a
//     token minted for another service does not open it — and the scope
//     tools:call (403 insufficient_scope otherwise, which a client answers
//     by asking for it). Its permissions are its roles' limited to what
//     its scopes grant: tools:call grants call, nothing more, so a token
//     from an MCP client can call tools its roles may call (and a tool's
//     Callers allow), and never approve or administer.
//
// API keys and the host token open the endpoint as before.

// ScopeToolsCall is the OAuth scope an access token for the MCP endpoint
// needs: it grants the call permission (its roles still decide which
// tools).
const ScopeToolsCall = "tools:call"

// scopeGrants maps OAuth scopes to the permissions they grant on the MCP
// endpoint.
var scopeGrants = map[string]api.Permission{ScopeToolsCall: api.PermCall}

// scopedPerms limits ps (admin expanded to every permission) to what the
// scopes grant.
func scopedPerms(ps perms, scopes []string) perms {
	if ps.has(api.PermAdmin) {
		ps = allPerms
	}
	var mask perms
	for _, sc := range scopes {
		if p, ok := scopeGrants[sc]; ok {
			mask |= permBit(p)
		}
	}
	return ps & mask &^ permBit(api.PermAdmin)
}

// errInsufficientScope is the 403 of an MCP access token without the
// scope tools:call.
var errInsufficientScope = &api.Error{Code: api.CodeForbidden, Message: "the access token lacks the scope " + ScopeToolsCall + ", which the MCP endpoint needs"}

// mcpOAuth is the MCP endpoint's resource server.
type mcpOAuth struct {
	resource     string // <public-url>/<slug>/mcp
	metadataPath string // /.well-known/oauth-protected-resource/<slug>/mcp
	metadataURL  string // <public-url> + metadataPath
}

// newMCPOAuth returns the endpoint's resource server for the public URL,
// or nil without one.
func newMCPOAuth(publicURL, slug string) (*mcpOAuth, error) {
	if publicURL == "" {
		return nil, nil
	}
	u, err := url.Parse(publicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("public URL %q: want an http(s) URL such as https://agents.example.com", publicURL)
	}
	base := strings.TrimSuffix(u.Scheme+"://"+u.Host+u.Path, "/")
	prefix := strings.TrimSuffix(u.Path, "/")
	o := &mcpOAuth{resource: base + "/" + slug + mcpPath}
	// RFC 9728, 3.1: the well-known prefix goes between the host and the
	// resource's path (a public URL's own path, a proxy's prefix, included:
	// the host expects the request with the path the client sent).
	o.metadataPath = "/.well-known/oauth-protected-resource" + prefix + "/" + slug + mcpPath
	o.metadataURL = u.Scheme + "://" + u.Host + o.metadataPath
	return o, nil
}

// mcpResource is the MCP endpoint's resource URL, or "" when it is not a
// resource server.
func (s *Server) mcpResource() string {
	if s.oauth == nil {
		return ""
	}
	return s.oauth.resource
}

// mountOAuthMetadata mounts the protected-resource metadata document, a
// public route, served by the MCP SDK's handler (CORS for any origin: it
// is public information).
func (s *Server) mountOAuthMetadata(known *http.ServeMux) {
	if s.oauth == nil || s.oidc == nil {
		return
	}
	meta := &oauthex.ProtectedResourceMetadata{
		Resource:               s.oauth.resource,
		AuthorizationServers:   []string{s.oidc.o.Issuer},
		ScopesSupported:        []string{ScopeToolsCall},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "agent-sdk: " + s.slug,
	}
	h := auth.ProtectedResourceMetadataHandler(meta)
	for _, m := range []string{http.MethodGet, http.MethodOptions} {
		pattern := m + " " + s.oauth.metadataPath
		s.mux.Handle(pattern, h)
		known.Handle(pattern, h)
		s.patterns = append(s.patterns, pattern)
		s.public[s.oauth.metadataPath] = append(s.public[s.oauth.metadataPath], pattern)
		s.unauth.limit(pattern, 0)
	}
}

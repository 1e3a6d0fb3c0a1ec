package agentconfig

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/agentsdk/agentsdk/api"
)

// Auth configures who may do what on the host. Its roles are named sets
// of permissions (api.Permissions: read, message, call, approve, read:all,
// admin), over the defaults (api.DefaultRoles: admin, operator, reader,
// approver, auditor); a role named like a default replaces it. API keys
// (agent-sdk keys create --roles …) carry role names.
//
//	auth:
//	  roles:
//	    deployer: [read, message, call]
//	    oncall: [read, read:all, approve]
//	  oidc:
//	    issuer: https://login.example.com
//	    audience: agent-api
//	    rolesClaim: roles
type Auth struct {
	Roles map[string][]string `yaml:"roles"`
	// OIDC admits bearer JWTs from an OpenID Connect issuer (serve's
	// OIDCOptions). Nil: none.
	OIDC *OIDC `yaml:"oidc"`
	// Slack maps Slack users to principals and roles for approver
	// policies ([SlackUser]).
	Slack map[string]SlackUser `yaml:"slack"`
}

// OIDC configures bearer JWTs from an OpenID Connect issuer: tokens are
// checked against its discovery document and keys (RS256 or ES256; exp,
// nbf, iss and aud), and act as oidc:<sub> with the roles of RolesClaim.
// With serve --public-url, the MCP endpoint also takes the issuer's
// access tokens for <public-url>/<slug>/mcp (OAuth, scope tools:call).
type OIDC struct {
	// Issuer is the issuer's URL, as its tokens' iss says it. Required.
	Issuer string `yaml:"issuer"`
	// Audience is the aud the API's tokens carry. Required.
	Audience string `yaml:"audience"`
	// RolesClaim names the claim roles are read from (a string or an
	// array; dotted for a nested one: realm_access.roles). Empty: tokens
	// carry no roles.
	RolesClaim string `yaml:"rolesClaim"`
	// ClientID is the playground's (public) client at the issuer, for
	// signing in with it. Empty: the playground signs in with the token or
	// a key only.
	ClientID string `yaml:"clientId"`
}

// validate checks role names and their permissions, and the OIDC
// section.
func (a Auth) validate() error {
	if a.OIDC != nil {
		if err := a.OIDC.validate(); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(a.Roles)) {
		if err := api.CheckRoleName(name); err != nil {
			return fmt.Errorf("auth.roles: %w", err)
		}
		if len(a.Roles[name]) == 0 {
			return fmt.Errorf("auth.roles.%s: no permissions (want some of %s)", name, permList())
		}
		for _, p := range a.Roles[name] {
			if !api.Permission(p).Valid() {
				return fmt.Errorf("auth.roles.%s: unknown permission %q (want some of %s)", name, p, permList())
			}
		}
	}
	return a.validateSlack()
}

// Permissions returns the roles as serve.Options.Roles takes them; nil
// without any.
func (a Auth) Permissions() map[string][]api.Permission {
	if len(a.Roles) == 0 {
		return nil
	}
	out := make(map[string][]api.Permission, len(a.Roles))
	for name, list := range a.Roles {
		for _, p := range list {
			out[name] = append(out[name], api.Permission(p))
		}
	}
	return out
}

func permList() string {
	names := make([]string, len(api.Permissions))
	for i, p := range api.Permissions {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

func (o OIDC) validate() error {
	u, err := url.Parse(o.Issuer)
	if o.Issuer == "" || err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname()))) {
		return fmt.Errorf("auth.oidc.issuer: %q: want the issuer's https URL (http only on loopback), as its tokens' iss says it", o.Issuer)
	}
	if strings.TrimSpace(o.Audience) == "" {
		return fmt.Errorf("auth.oidc.audience: required: the aud the API's tokens carry (the API's identifier at the issuer)")
	}
	return nil
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

package agentconfig

import (
	"fmt"
	"maps"
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
type Auth struct {
	Roles map[string][]string `yaml:"roles"`
	// Slack maps Slack users to principals and roles for approver
	// policies ([SlackUser]).
	Slack map[string]SlackUser `yaml:"slack"`
}

// validate checks role names and their permissions.
func (a Auth) validate() error {
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

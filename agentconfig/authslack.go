package agentconfig

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/agentsdk/agentsdk/api"
)

// SlackUser is the principal and roles a Slack user decides approvals
// as (auth.slack): the roles a tool's approver policy asks for
// (tool.Config.Approval.Roles), and the principal four-eyes and a quorum
// know them by. Naming a user's API key principal ("key:<id>") makes the
// person one principal whether they click in Slack or use their key.
//
//	auth:
//	  slack:
//	    U0123ABCD: {principal: "key:k7f3a9", roles: [deployer]}
type SlackUser struct {
	Principal string   `yaml:"principal"`
	Roles     []string `yaml:"roles"`
}

var slackUserID = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`)

// validateSlack checks auth.slack: Slack user ids, a principal without
// spaces, and roles the host has (the defaults and auth.roles).
func (a Auth) validateSlack() error {
	for _, id := range slices.Sorted(maps.Keys(a.Slack)) {
		u := a.Slack[id]
		if !slackUserID.MatchString(id) {
			return fmt.Errorf("auth.slack: %q is not a Slack user id (U… or W…, as Slack shows it in a profile's ⋮ menu)", id)
		}
		if u.Principal == "" || len(u.Principal) > 200 || strings.ContainsFunc(u.Principal, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return fmt.Errorf("auth.slack.%s.principal: want 1 to 200 characters without spaces (a key's principal is key:<id>)", id)
		}
		for _, r := range u.Roles {
			_, isDefault := api.DefaultRoles[r]
			if _, isOwn := a.Roles[r]; !isDefault && !isOwn {
				return fmt.Errorf("auth.slack.%s.roles: unknown role %q (roles: the defaults and auth.roles)", id, r)
			}
		}
	}
	return nil
}

// ChannelUsers returns auth.slack keyed as decisions record a Slack user,
// "slack:<id>"; nil without any.
func (a Auth) ChannelUsers() map[string]SlackUser {
	if len(a.Slack) == 0 {
		return nil
	}
	out := make(map[string]SlackUser, len(a.Slack))
	for id, u := range a.Slack {
		out["slack:"+id] = SlackUser{Principal: u.Principal, Roles: slices.Clone(u.Roles)}
	}
	return out
}

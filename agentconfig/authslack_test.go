package agentconfig

import (
	"slices"
	"strings"
	"testing"
)

// auth.slack maps Slack users to principals and roles, keyed as decisions
// record them; a bad user id, an empty principal, an unknown role or an
// unknown key is refused, naming it.
func TestAuthSlack(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, wantErr string
	}{
		{"mapped", "auth:\n  roles:\n    deployer: [read, approve]\n  slack:\n    U0ALICE: {principal: \"key:k1\", roles: [deployer]}\n    W0BOB: {principal: bob, roles: [approver]}\n", ""},
		{"bad id", "auth:\n  slack:\n    alice: {principal: a}\n", `auth.slack: "alice" is not a Slack user id`},
		{"no principal", "auth:\n  slack:\n    U0ALICE: {roles: [approver]}\n", "auth.slack.U0ALICE.principal"},
		{"space in principal", "auth:\n  slack:\n    U0ALICE: {principal: \"a b\"}\n", "auth.slack.U0ALICE.principal"},
		{"unknown role", "auth:\n  slack:\n    U0ALICE: {principal: a, roles: [deployer]}\n", `auth.slack.U0ALICE.roles: unknown role "deployer"`},
		{"unknown key", "auth:\n  slack:\n    U0ALICE: {principal: a, role: [approver]}\n", `unknown key "role"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadYAML(t, tc.yaml)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load = %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := c.Auth.ChannelUsers()
			if len(got) != 2 || got["slack:U0ALICE"].Principal != "key:k1" || !slices.Equal(got["slack:U0ALICE"].Roles, []string{"deployer"}) || got["slack:W0BOB"].Principal != "bob" {
				t.Errorf("ChannelUsers = %+v", got)
			}
		})
	}
}

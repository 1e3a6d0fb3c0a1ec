package agentconfig

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
)

// auth.roles is read into named sets of permissions; a bad role name, an
// unknown permission or an empty role is refused, naming it.
func TestAuthRoles(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, wantErr string
		want                map[string][]api.Permission
	}{
		{"none", "", "", nil},
		{"roles", "auth:\n  roles:\n    deployer: [read, message, call]\n    oncall: [read, read:all, approve]\n", "",
			map[string][]api.Permission{"deployer": {api.PermRead, api.PermMessage, api.PermCall}, "oncall": {api.PermRead, api.PermReadAll, api.PermApprove}}},
		{"unknown permission", "auth:\n  roles:\n    deployer: [read, deploy]\n", `auth.roles.deployer: unknown permission "deploy"`, nil},
		{"bad name", "auth:\n  roles:\n    Deployer: [read]\n", `invalid role name "Deployer"`, nil},
		{"empty role", "auth:\n  roles:\n    nobody: []\n", "auth.roles.nobody: no permissions", nil},
		{"unknown key", "auth:\n  rolez: {}\n", `unknown key "rolez"`, nil},
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
			got := c.Auth.Permissions()
			if len(got) != len(tc.want) {
				t.Fatalf("roles %v, want %v", got, tc.want)
			}
			for name, perms := range tc.want {
				if !slices.Equal(got[name], perms) {
					t.Errorf("role %s: %v, want %v", name, got[name], perms)
				}
			}
		})
	}
}

// auth.oidc: the issuer (https, or http on loopback) and the audience
// are required; the rest is read as given.
func TestAuthOIDC(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, wantErr string
		want                *OIDC
	}{
		{"full", "auth:\n  oidc:\n    issuer: https://login.example.com\n    audience: agent-api\n    rolesClaim: realm_access.roles\n    clientId: pg\n", "",
			&OIDC{Issuer: "https://login.example.com", Audience: "agent-api", RolesClaim: "realm_access.roles", ClientID: "pg"}},
		{"loopback http", "auth:\n  oidc:\n    issuer: http://127.0.0.1:5556\n    audience: a\n", "", &OIDC{Issuer: "http://127.0.0.1:5556", Audience: "a"}},
		{"plain http", "auth:\n  oidc:\n    issuer: http://login.example.com\n    audience: a\n", "auth.oidc.issuer", nil},
		{"no issuer", "auth:\n  oidc:\n    audience: a\n", "auth.oidc.issuer", nil},
		{"no audience", "auth:\n  oidc:\n    issuer: https://login.example.com\n", "auth.oidc.audience: required", nil},
		{"unknown key", "auth:\n  oidc:\n    issuer: https://login.example.com\n    audience: a\n    roleClaim: roles\n", `unknown key "roleClaim"`, nil},
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
			if c.Auth.OIDC == nil || *c.Auth.OIDC != *tc.want {
				t.Errorf("auth.oidc = %+v, want %+v", c.Auth.OIDC, tc.want)
			}
		})
	}
}

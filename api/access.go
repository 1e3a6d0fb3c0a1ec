package api

import (
	"fmt"
	"regexp"
	"slices"
	"time"
)

// Permission is what a route needs of its caller's roles ([Route.Permission]).
// The set is small and fixed; roles (agent.yaml's auth.roles, [DefaultRoles])
// are named sets of them.
type Permission string

// Permissions.
const (
	// PermRead reads: tools, sessions and their events, approvals, usage,
	// schedules, evals. Without PermReadAll, only the caller's own
	// sessions and the approvals of its calls.
	PermRead Permission = "read"
	// PermMessage opens sessions and sends messages, cancels and compacts
	// turns.
	PermMessage Permission = "message"
	// PermCall calls tools directly (HTTP and MCP); a tool's
	// tool.Config.Callers narrows it to some roles.
	PermCall Permission = "call"
	// PermApprove decides parked calls: any principal's, until approver
	// policies narrow it. A principal with it sees every approval.
	PermApprove Permission = "approve"
	// PermReadAll sees and acts on every principal's sessions, not only
	// its own (the other permissions still apply).
	PermReadAll Permission = "read:all"
	// PermAdmin is every permission, and what keys, schedules run now,
	// evals and runners need.
	PermAdmin Permission = "admin"
)

// Permissions lists every permission, in the order above.
var Permissions = []Permission{PermRead, PermMessage, PermCall, PermApprove, PermReadAll, PermAdmin}

// Valid reports whether p is one of [Permissions].
func (p Permission) Valid() bool { return slices.Contains(Permissions, p) }

// DefaultRoles are the roles every host has; agent.yaml's auth.roles adds
// roles and may redefine these. The host token and the playground signed
// in with it are role admin.
var DefaultRoles = map[string][]Permission{
	"admin":    {PermAdmin},
	"operator": {PermRead, PermMessage, PermCall, PermApprove},
	"reader":   {PermRead},
	"approver": {PermRead, PermApprove},
	"auditor":  {PermRead, PermReadAll},
}

var validRole = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// CheckRoleName reports whether name can name a role: 1 to 32 lower-case
// letters, digits, '_' or '-', starting with a letter.
func CheckRoleName(name string) error {
	if !validRole.MatchString(name) {
		return fmt.Errorf("invalid role name %q: use 1 to 32 lower-case letters, digits, '_' or '-', starting with a letter", name)
	}
	return nil
}

// KeyPrefix begins every API key: ask_<id>_<secret>.
const KeyPrefix = "ask_"

// Key is an API key's record, as `agent-sdk keys list` and GET /v1/keys
// show it: never its secret, which only the answer that created it
// carries.
type Key struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Roles      []string   `json:"roles"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt,omitempty"`
	ExpiresAt  *time.Time `json:"expiresAt,omitempty"`
	RevokedAt  *time.Time `json:"revokedAt,omitempty"`
}

// Usable reports whether the key admits requests at now: not revoked and
// not expired (a key expiring at now no longer does).
func (k Key) Usable(now time.Time) bool {
	return k.RevokedAt == nil && (k.ExpiresAt == nil || now.Before(*k.ExpiresAt))
}

// CreateKeyRequest is the body of POST /<slug>/v1/keys.
type CreateKeyRequest struct {
	Name  string   `json:"name"`
	Roles []string `json:"roles"`
	// ExpiresIn is how long the key lasts: a Go duration or a number of
	// days ("90d"); "" for a key that does not expire.
	ExpiresIn string `json:"expiresIn,omitempty"`
}

// KeyCreated is the answer of POST /<slug>/v1/keys: the record and the
// key itself, shown this once.
type KeyCreated struct {
	OK     bool   `json:"ok"`
	Key    Key    `json:"key"`
	Secret string `json:"secret"`
}

// KeyResponse is the answer of POST /<slug>/v1/keys/{id}/revoke.
type KeyResponse struct {
	OK  bool `json:"ok"`
	Key Key  `json:"key"`
}

// KeyList is the body of GET /<slug>/v1/keys, oldest first.
type KeyList struct {
	OK   bool  `json:"ok"`
	Keys []Key `json:"keys"`
}

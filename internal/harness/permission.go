package harness

import (
	"slices"
	"strings"

	acp "github.com/coder/acp-go-sdk"
)

// Verdict is what a Permissions policy says about a permission request.
type Verdict int

// Verdicts.
const (
	Ask Verdict = iota
	Allow
	Deny
)

// Decide is the policy's verdict on a request of kind with title: Deny's
// rules first, then Allow's, then Ask's; none matching is Ask.
func (ps Permissions) Decide(kind, title string) Verdict {
	switch {
	case matchAny(ps.Deny, kind, title):
		return Deny
	case matchAny(ps.Allow, kind, title):
		return Allow
	}
	return Ask
}

// Remembers reports whether the policy's Always rules name a request of
// kind with title: allowed (by the policy or by a person), it is answered
// "allow always", so the harness does not ask again in its session for
// what it takes to be the same.
func (ps Permissions) Remembers(kind, title string) bool {
	return matchAny(ps.Always, kind, title)
}

// matchAny reports whether a rule (kind, or kind:pattern) matches.
func matchAny(rules []string, kind, title string) bool {
	return slices.ContainsFunc(rules, func(r string) bool {
		k, pattern, has := strings.Cut(r, ":")
		if k != kind {
			return false
		}
		if !has {
			return true
		}
		return Glob(pattern, title)
	})
}

// Glob reports whether s matches pattern, in which * stands for any run
// of characters (slashes and spaces too: a title is a shell command or a
// path) and every other character for itself.
func Glob(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}

// option is the first of r's options of one of kinds, in that order of
// preference.
func option(r acp.RequestPermissionRequest, kinds ...acp.PermissionOptionKind) (acp.PermissionOptionId, bool) {
	for _, k := range kinds {
		for _, o := range r.Options {
			if o.Kind == k {
				return o.OptionId, true
			}
		}
	}
	return "", false
}

// AllowOnce answers r with its allow-once option, or with a rejection if
// it offers none: allowing always is a grant the policy must make (Grant).
func AllowOnce(r acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	resp, _ := Grant(r, false)
	return resp
}

// Grant answers r allowing it: with its allow-always option when always
// (the policy's Always rules name the request) and r offers one, else
// with its allow-once option. ok is false when r offers no option that
// fits (only "always" where always is false, say): the answer is then a
// rejection.
func Grant(r acp.RequestPermissionRequest, always bool) (resp acp.RequestPermissionResponse, ok bool) {
	kinds := []acp.PermissionOptionKind{acp.PermissionOptionKindAllowOnce}
	if always {
		kinds = []acp.PermissionOptionKind{acp.PermissionOptionKindAllowAlways, acp.PermissionOptionKindAllowOnce}
	}
	if id, ok := option(r, kinds...); ok {
		return selected(id), true
	}
	return Reject(r), false
}

// Reject answers r with its reject-once option (or cancelled, if it has
// none).
func Reject(r acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	if id, ok := option(r, acp.PermissionOptionKindRejectOnce, acp.PermissionOptionKindRejectAlways); ok {
		return selected(id)
	}
	return Cancelled()
}

// Cancelled is the answer to every request pending when a prompt is
// cancelled.
func Cancelled() acp.RequestPermissionResponse {
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}
}

func selected(id acp.PermissionOptionId) acp.RequestPermissionResponse {
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.RequestPermissionOutcomeSelected{OptionId: id}}}
}

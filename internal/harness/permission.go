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

// AllowOnce answers r with its allow-once option (allow-always if it has
// no other allowing one).
func AllowOnce(r acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	if id, ok := option(r, acp.PermissionOptionKindAllowOnce, acp.PermissionOptionKindAllowAlways); ok {
		return selected(id)
	}
	return Cancelled()
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

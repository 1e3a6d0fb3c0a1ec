package harness

import (
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

func TestDecide(t *testing.T) {
	ps := Permissions{Allow: []string{"read", "search", "execute:go test*", "execute:*.agent-serve/tools/*"}, Ask: []string{"edit"}, Deny: []string{"execute:rm -rf*", "fetch"}}
	for _, c := range []struct {
		kind, title string
		want        Verdict
	}{
		{"read", "README.md", Allow},
		{"search", "grep foo", Allow},
		{"execute", "go test ./...", Allow},
		{"execute", "echo '{}' | .agent-serve/tools/greet", Allow},
		{"execute", "rm -rf /", Deny},
		{"execute", "go build", Ask},
		{"edit", "main.go", Ask},
		{"fetch", "https://example.com", Deny},
		{"delete", "x", Ask},
	} {
		if got := ps.Decide(c.kind, c.title); got != c.want {
			t.Errorf("%s %q: %v, want %v", c.kind, c.title, got, c.want)
		}
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{{"a*", "abc", true}, {"*c", "abc", true}, {"a*c", "ac", true}, {"a*b*c", "axbyc", true}, {"a*b*c", "axcyb", false}, {"abc", "abc", true}, {"abc", "abd", false}, {"*", "", true}, {"a*a", "a", false}} {
		if got := Glob(c.p, c.s); got != c.want {
			t.Errorf("Glob(%q, %q) = %v", c.p, c.s, got)
		}
	}
}

// An allowed request is answered "allow once" unless the policy's always
// rules name it; a harness that offers only "always" for a request they
// do not name is rejected, never granted more than the policy says.
func TestGrant(t *testing.T) {
	ps := Permissions{Always: []string{"execute:go test*"}}
	all := []acp.PermissionOption{
		{OptionId: "once", Kind: acp.PermissionOptionKindAllowOnce, Name: "Allow"},
		{OptionId: "always", Kind: acp.PermissionOptionKindAllowAlways, Name: "Always allow"},
		{OptionId: "no", Kind: acp.PermissionOptionKindRejectOnce, Name: "Reject"},
	}
	onlyAlways := []acp.PermissionOption{all[1], all[2]}
	for _, c := range []struct {
		title   string
		options []acp.PermissionOption
		want    string
		ok      bool
	}{
		{"go test ./...", all, "always", true},
		{"go build", all, "once", true},
		{"go build", onlyAlways, "no", false},
		{"go test ./...", onlyAlways, "always", true},
	} {
		r := acp.RequestPermissionRequest{Options: c.options}
		resp, ok := Grant(r, ps.Remembers("execute", c.title))
		if resp.Outcome.Selected == nil || string(resp.Outcome.Selected.OptionId) != c.want || ok != c.ok {
			t.Errorf("%q with %d options: %+v, %v; want %s, %v", c.title, len(c.options), resp.Outcome, ok, c.want, c.ok)
		}
	}
	if resp := AllowOnce(acp.RequestPermissionRequest{Options: onlyAlways}); resp.Outcome.Selected == nil || resp.Outcome.Selected.OptionId != "no" {
		t.Errorf("AllowOnce granted always: %+v", resp.Outcome)
	}
	if err := (Spec{Name: "x", Command: "x", Permissions: Permissions{Always: []string{"shell:ls"}}}).Check(); err == nil || !strings.Contains(err.Error(), `"shell" is not an ACP tool kind`) {
		t.Errorf("an always rule naming no kind: %v", err)
	}
}

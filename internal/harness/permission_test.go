package harness

import "testing"

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

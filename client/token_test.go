package client_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/client"
)

// A token read from a host's token file, newline and all, works as it is;
// one with a control character inside is refused when the client is made,
// saying so, rather than by every request with net/http's header error.
func TestTokenFromFile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(testToken+"\n"), 0o600); err != nil { // as the host writes <state>/token
		t.Fatal(err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{string(raw), testToken + "\r\n", "  " + testToken + "\t"} {
		c, err := client.New(b.url, tok, nil)
		if err != nil {
			t.Fatalf("New with token %q: %v", tok, err)
		}
		if _, err := c.Tools(context.Background()); err != nil {
			t.Errorf("Tools with token %q: %v", tok, err)
		}
	}
	for _, tc := range []struct{ tok, char string }{
		{"client-test\n-token", "U+000A"},
		{"client-test\x00token", "U+0000"},
		{"client-test\x7ftoken", "U+007F"},
	} {
		_, err := client.New(b.url, tc.tok, nil)
		if err == nil || !strings.Contains(err.Error(), "the token has a control character ("+tc.char+")") {
			t.Errorf("New with token %q = %v, want an error naming the control character %s", tc.tok, err, tc.char)
		}
	}
}

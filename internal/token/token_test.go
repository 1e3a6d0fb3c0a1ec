package token

import (
	"os"
	"strings"
	"sync"
	"testing"
)

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvVar, "")
	tok, src, err := Ensure("", dir)
	if err != nil || src != FromGenerated || !strings.HasPrefix(tok, "asdk_") || len(tok) < 30 {
		t.Fatalf("Ensure = %q, %s, %v", tok, src, err)
	}
	fi, err := os.Stat(File(dir))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v, mode %v", err, fi.Mode().Perm())
	}
	if again, src, _ := Ensure("", dir); again != tok || src != FromFile {
		t.Errorf("second Ensure = %q (%s), want the stored %q", again, src, tok)
	}
	t.Setenv(EnvVar, "from-env")
	if got, src, _ := Find("", dir); got != "from-env" || src != FromEnv {
		t.Errorf("env: %q %s", got, src)
	}
	if got, src, _ := Find("explicit", dir); got != "explicit" || src != FromFlag {
		t.Errorf("flag: %q %s", got, src)
	}
	t.Setenv(EnvVar, "")
	if got, _, err := Find("", t.TempDir()); got != "" || err != nil {
		t.Errorf("no token anywhere: %q, %v", got, err)
	}
	empty := t.TempDir()
	os.WriteFile(File(empty), []byte("\n"), 0o600)
	if _, _, err := Find("", empty); err == nil {
		t.Error("an empty token file should be an error")
	}
}

// Processes starting at once agree on one token.
func TestConcurrentEnsure(t *testing.T) {
	t.Setenv(EnvVar, "")
	dir := t.TempDir()
	var wg sync.WaitGroup
	got := make([]string, 16)
	for i := range got {
		wg.Go(func() { got[i], _, _ = Ensure("", dir) })
	}
	wg.Wait()
	stored, _ := os.ReadFile(File(dir))
	for _, g := range got {
		if g != strings.TrimSpace(string(stored)) {
			t.Errorf("tokens differ: %q vs stored %q", g, stored)
		}
	}
}

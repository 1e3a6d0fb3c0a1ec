//go:build linux

package agenttool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/tool"
)

// peek tries to read another session's workspace and the store and to
// write outside its workspace ($OUTSIDE, set on its second line), printing
// a line for each attempt that worked; then it does what ordinary scripts
// do, printing a line for each that failed.
const peek = `#!/bin/sh
cat ../../theirs/workspace/secret.txt 2>/dev/null && echo "READ their workspace"
ls ../../theirs/workspace 2>/dev/null && echo "LISTED their workspace"
head -c 1 ../../../agent.db >/dev/null 2>&1 && echo "READ the store"
(echo x > ../../../planted) 2>/dev/null && echo "WROTE in the state directory"
(echo x > ../../theirs/workspace/planted) 2>/dev/null && echo "WROTE in their workspace"
(echo x > "$OUTSIDE") 2>/dev/null && echo "WROTE $OUTSIDE"
echo mine > mine.txt && [ "$(cat mine.txt)" = mine ] || echo "FAILED to write its workspace"
mkdir -p sub/dir && mv mine.txt sub/dir/ && rm -r sub || echo "FAILED to move files in its workspace"
t=$(mktemp) && echo tmp > "$t" && [ "$(cat "$t")" = tmp ] && rm "$t" || echo "FAILED to use a temp file"
grep -q root /etc/passwd || echo "FAILED to read /etc"
ls /usr/bin >/dev/null || echo "FAILED to list /usr/bin"
echo to-null > /dev/null || echo "FAILED to write /dev/null"
echo to-stderr > /dev/stderr 2>/dev/null || echo "FAILED to write /dev/stderr"
head -c 8 /dev/urandom | wc -c | grep -q 8 || echo "FAILED to read /dev/urandom"
grep -q . /proc/self/status || echo "FAILED to read /proc/self"
sh ./.agent-serve/tools/peek-helper || echo "FAILED to run its own tool files"
if command -v python3 >/dev/null; then python3 -c 'import json, tempfile; tempfile.TemporaryFile()' || echo "FAILED to run python3"; fi
echo end
`

// A script sees only its own session: it can neither read another
// session's workspace or the store nor write anywhere but its workspace
// and a temp dir, and it still runs ordinary programs.
func TestScriptSeesOnlyItsSession(t *testing.T) {
	if why := Isolation(); isolating() == (why != "") {
		t.Fatalf("Isolation() = %q, but isolating() = %v", why, isolating())
	} else if why != "" {
		t.Skipf("NOT CHECKED: scripts run unconfined here, as README says: %s", why)
	}
	t.Parallel()
	state := t.TempDir()
	ws := filepath.Join(state, "sessions", "mine", "workspace")
	theirs := filepath.Join(state, "sessions", "theirs", "workspace")
	for _, d := range []string{ws, theirs} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(theirs, "secret.txt"), []byte("their secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "agent.db"), []byte("SQLite format 3\x00"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(os.TempDir(), "agent-sdk-escape-"+filepath.Base(filepath.Dir(state)))
	t.Cleanup(func() { os.Remove(outside) })
	tl, err := tool.NewScript("peek", tool.Config{Description: "d"}, strings.Replace(peek, "\n", "\nOUTSIDE="+outside+"\n", 1))
	if err != nil {
		t.Fatal(err)
	}
	helper, _ := tool.NewScript("peek-helper", tool.Config{Description: "d"}, "#!/bin/sh\ntrue\n")
	set, _ := tool.NewSet(tl, helper)
	if err := Materialize(ws, set); err != nil {
		t.Fatal(err)
	}
	in, _ := tl.Validate(json.RawMessage(`{}`))
	out := Run(context.Background(), tl, in, RunOptions{Workspace: ws})
	var got string
	json.Unmarshal(out.Result, &got)
	if out.IsError || !strings.HasSuffix(got, "end") {
		t.Fatalf("Output = %s (isError %v)", out.Result, out.IsError)
	}
	for line := range strings.Lines(got) {
		if strings.HasPrefix(line, "FAILED") {
			t.Errorf("the script could not do what ordinary scripts do: %s", strings.TrimSpace(line))
		}
	}
	if strings.Contains(got, "READ") || strings.Contains(got, "LISTED") || strings.Contains(got, "WROTE") {
		t.Errorf("the script reached outside its session's workspace:\n%s", got)
	}
}

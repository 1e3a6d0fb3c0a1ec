package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// session export writes a session as an eval file that eval run replays:
// the model (told to answer otherwise) is not asked, the tool runs, and
// the file's checks hold; a result the tool does not give fails the
// case. An unknown session is refused.
func TestSessionExportCLI(t *testing.T) {
	dir, bin := evalsAgent(t)
	m := newEvalFakes(t)
	state := t.TempDir()
	h := evalHostProc(t, dir, bin, state, filepath.Join(state, "agent.db"), m)
	remote := []string{"--url", h.url(), "--token", chaosToken}
	cli := func(args ...string) result {
		t.Helper()
		return run(t, t.TempDir(), "", append(args, remote...)...)
	}

	m.Route("[exp]",
		fakemodel.Reply{Text: []string{"Let me look."}, Calls: []fakemodel.Call{{ID: "c1", Name: "lookup", Input: `{"city":"Paris"}`}}},
		fakemodel.Reply{Text: []string{"It is sunny in Paris."}})
	r := cli("send", "new", "[exp] Weather in Paris?", "--follow")
	id := regexp.MustCompile(`session (sess_\w+), turn`).FindStringSubmatch(r.stderr)
	if r.code != 0 || id == nil {
		t.Fatalf("send: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	file := filepath.Join(t.TempDir(), "exported.yaml")
	r = cli("session", "export", id[1], "-o", file)
	if r.code != 0 || !strings.Contains(r.stderr, "wrote "+file+" (1 message, 2 recorded answers, 2 checks); agent-sdk eval run "+file) {
		t.Fatalf("session export -o: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := `name: ` + id[1] + `
cases:
  - name: ` + id[1] + `
    message: '[exp] Weather in Paris?'
    replay:
      - text: Let me look.
        calls:
          - tool: lookup
            input:
              city: Paris
      - text: It is sunny in Paris.
    checks:
      - called: lookup
        args:
          city: Paris
        result:
          city: Paris
          sky: sunny
      - noError: true
`
	if got := string(data[strings.Index(string(data), "name:"):]); got != want {
		t.Errorf("the exported file:\n%s\nwant:\n%s", data, want)
	}
	if r := cli("session", "export", id[1]); r.code != 0 || r.stdout != string(data) {
		t.Errorf("session export to stdout: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The model would answer otherwise now: the replay does not ask it.
	asked := m.Requests("[exp]")
	m.Route("[exp]", fakemodel.Reply{Text: []string{"I refuse."}}, fakemodel.Reply{Text: []string{"I refuse."}})
	r = cli("eval", "run", file)
	if r.code != 0 || !strings.Contains(r.stdout, "score 1.00, 1 of 1 cases passed") {
		t.Errorf("eval run of the exported file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := m.Requests("[exp]"); n != asked {
		t.Errorf("the replay asked the model %d times", n-asked)
	}

	// A result the tool does not give fails.
	rainy := filepath.Join(t.TempDir(), "rainy.yaml")
	os.WriteFile(rainy, []byte(strings.Replace(string(data), "sky: sunny", "sky: rainy", 1)), 0o644)
	r = cli("eval", "run", rainy)
	if r.code != 1 || !strings.Contains(r.stdout, `never with the result; last result: {"city":"Paris","sky":"sunny"}`) {
		t.Errorf("eval run expecting rain: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	if r := cli("session", "export", "sess_nope"); r.code != 2 || !strings.Contains(r.stderr, "session not found: sess_nope") {
		t.Errorf("session export of no session: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

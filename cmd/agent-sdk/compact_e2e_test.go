package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// agent-sdk compact on the real binary: agent.yaml's compaction: (one
// turn kept, the summaries by another model with a prompt of its own)
// and --max-message-bytes reach the host; a session with nothing to
// summarise says why; unknown sessions and large messages are refused.
func TestCompactCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "long")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	yaml := "model: {provider: anthropic, name: fake-model}\ncompaction: {keepTurns: 1, model: fake-summarizer, prompt: Summarise tersely.}\n"
	if err := os.WriteFile(filepath.Join(dir, "agent", "agent.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := fakemodel.New(
		fakemodel.Reply{Text: []string{strings.Repeat("A long first answer. ", 200)}},
		fakemodel.Reply{Text: []string{"Second answer."}},
		fakemodel.Reply{Text: []string{"The user asked twice."}},
		fakemodel.Reply{Text: []string{"Only answer."}},
	)
	defer fake.Close()
	env := []string{"ANTHROPIC_BASE_URL=" + fake.AnthropicURL(), "ANTHROPIC_API_KEY=k"}
	s := startServerEnv(t, dir, env, "--max-message-bytes", "1000")
	u := strings.TrimSuffix(s.base, "/v1")
	turn := func(path, message string) string {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"message": message})
		_, v, _ := s.request(t, "POST", path, s.token, string(body))
		id, turnID := v["sessionId"].(string), v["turnId"].(string)
		if turnID == "" {
			t.Fatalf("POST %s: %v", path, v)
		}
		waitEvent(t, s, id, func(kind, data string) bool { return kind == "turn.completed" && strings.Contains(data, turnID) })
		return id
	}
	id := turn("/session", "The first question")
	turn("/session/"+id+"/messages", "The second question")

	r := run(t, dir, "", "compact", id, "--url", u)
	if r.code != 0 || !regexp.MustCompile(`^compacted session `+id+`: [0-9,]+ → [0-9,]+ tokens \(through event [0-9]+\)\n$`).MatchString(r.stdout) {
		t.Fatalf("compact: %+v", r)
	}
	if reqs := fake.Requests(); len(reqs) != 3 || !fake.Contains(2, `"model":"fake-summarizer"`) || !fake.Contains(2, `Summarise tersely.`) ||
		!fake.Contains(2, "The first question") || fake.Contains(2, "The second question") {
		t.Errorf("the summary request: %d requests, the last %s", len(reqs), reqs[len(reqs)-1])
	}
	if kinds := strings.Join(storedKinds(t, s, id), " "); !strings.HasSuffix(kinds, "turn.started model.usage context.compacted turn.completed") {
		t.Errorf("the session's events: %s", kinds)
	}

	solo := turn("/session", "A single question")
	r = run(t, dir, "", "compact", solo, "--url", u, "--json")
	var ans struct {
		OK        bool   `json:"ok"`
		Compacted bool   `json:"compacted"`
		Reason    string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &ans); err != nil || r.code != 0 || !ans.OK || ans.Compacted || !strings.Contains(ans.Reason, "nothing to summarise") {
		t.Errorf("compact --json of one turn: %+v (%v)", r, err)
	}

	for _, c := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"an unknown session", []string{"compact", "sess_nope"}, "(HTTP 404)"},
		{"a message over --max-message-bytes", []string{"send", id, strings.Repeat("x", 1500)},
			"the message is 1500 bytes, over the host's limit of 1000 (--max-message-bytes) (HTTP 413)"},
	} {
		r := run(t, dir, "", append(c.args, "--url", u)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.stderr) {
			t.Errorf("%s: %+v, want exit 2 with %q", c.name, r, c.stderr)
		}
	}
	if r := run(t, repoRoot, "", "compact", "--help"); r.code != 0 || !strings.Contains(r.stdout, "Examples:") || !strings.Contains(r.stdout, "--json") {
		t.Errorf("compact --help: %+v", r)
	}
}

package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// agent-sdk serve --record on the real binary records a session's model
// calls against the fake Anthropic API; --replay, with the fake gone and
// no key, answers the same session the same way, and fails a turn it has
// no cassette for with a diff naming the message that changed.
func TestRecordReplayCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "taped")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	yaml := "model: {provider: anthropic, name: fake-model}\nsystem: Be brief.\n"
	if err := os.WriteFile(filepath.Join(dir, "agent", "agent.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := fakemodel.New(
		fakemodel.Reply{Text: []string{"Greeting."}, Calls: []fakemodel.Call{{ID: "t1", Name: "hello", Input: `{"name":"Ada"}`}}},
		fakemodel.Reply{Text: []string{"Said ", "hello."}},
	)
	cassettes := filepath.Join(t.TempDir(), "cassettes")
	rec := startServerEnv(t, dir, []string{"ANTHROPIC_BASE_URL=" + fake.AnthropicURL(), "ANTHROPIC_API_KEY=k"}, "--record", cassettes)
	if !strings.Contains(rec.logs(), "recording model calls into "+cassettes) {
		t.Errorf("serve --record does not say where it records:\n%s", rec.logs())
	}
	recorded := sessionTurn(t, rec, "Greet Ada")
	if !strings.Contains(recorded, `action.result hello`) || !strings.Contains(recorded, "message assistant Said hello.") {
		t.Fatalf("the recorded session:\n%s", recorded)
	}
	rec.cmd.Process.Kill()
	rec.cmd.Wait()
	fake.Close()
	if files, _ := filepath.Glob(filepath.Join(cassettes, "*.json")); len(files) != 2 {
		t.Fatalf("cassettes %q, want one per model call: 2", files)
	}

	rep := startServerEnv(t, dir, []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:9", "ANTHROPIC_API_KEY="}, "--replay", cassettes)
	if !strings.Contains(rep.logs(), "model calls are answered from the cassettes in "+cassettes) {
		t.Errorf("serve --replay does not say what it replays:\n%s", rep.logs())
	}
	if replayed := sessionTurn(t, rep, "Greet Ada"); replayed != recorded {
		t.Errorf("the replayed session:\n%s\nwant, as recorded:\n%s", replayed, recorded)
	}
	missed := sessionTurn(t, rep, "Greet Grace")
	for _, want := range []string{"turn.failed invalid_request", `- messages[0] user: "Greet Ada"`, `+ messages[0] user: "Greet Grace"`} {
		if !strings.Contains(missed, want) {
			t.Errorf("a turn with no cassette ended\n%s\nwhich lacks %q", missed, want)
		}
	}

	r := run(t, dir, "", "serve", "--dir", dir, "--record", cassettes, "--replay", cassettes)
	if r.code != 2 || !strings.Contains(r.stderr, "--record and --replay cannot be used together") {
		t.Errorf("serve --record --replay: %+v", r)
	}
}

// sessionTurn starts a session with message, waits for its turn to end
// and returns what the session's stored events say, a line each, without
// ids, times or durations.
func sessionTurn(t *testing.T, s *server, message string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"message": message})
	_, v, _ := s.request(t, "POST", "/session", s.token, string(body))
	id, _ := v["sessionId"].(string)
	if id == "" {
		t.Fatalf("POST /session: %v", v)
	}
	waitEvent(t, s, id, func(kind, data string) bool { return kind == "turn.completed" || kind == "turn.failed" })
	_, v, _ = s.request(t, "GET", "/session/"+id+"/events?follow=false", s.token, "")
	raw, _ := json.Marshal(v["events"])
	var events []api.Event
	if err := json.Unmarshal(raw, &events); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range events {
		line := string(e.Kind)
		var err error
		switch e.Kind {
		case api.KindMessage:
			var p api.Message
			p, err = api.Decode[api.Message](e)
			line += fmt.Sprintf(" %s %s", p.Role, p.Text)
		case api.KindMessageDelta:
			var p api.MessageDelta
			p, err = api.Decode[api.MessageDelta](e)
			line += " " + p.Text
		case api.KindActionResult:
			var p api.ActionResult
			p, err = api.Decode[api.ActionResult](e)
			line += fmt.Sprintf(" %s %s", p.Tool, p.Result)
		case api.KindTurnFailed:
			var p api.TurnFailed
			p, err = api.Decode[api.TurnFailed](e)
			line += fmt.Sprintf(" %s %s", p.Code, p.Reason)
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

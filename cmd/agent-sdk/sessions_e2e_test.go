package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// waitEvent follows a session's stream until an event satisfies match.
func waitEvent(t *testing.T, s *server, sessionID string, match func(kind, data string) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.base+"/session/"+sessionID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	kind := ""
	for sc.Scan() {
		line := sc.Text()
		if k, ok := strings.CutPrefix(line, "event: "); ok {
			kind = k
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok && match(kind, d) {
			return
		}
	}
	t.Fatalf("the awaited event never came on %s (%v)", sessionID, sc.Err())
}

func storedKinds(t *testing.T, s *server, sessionID string) []string {
	t.Helper()
	_, v, _ := s.request(t, "GET", "/session/"+sessionID+"/events?follow=false", s.token, "")
	var kinds []string
	for _, e := range v["events"].([]any) {
		kinds = append(kinds, e.(map[string]any)["kind"].(string))
	}
	return kinds
}

// Sessions and model turns on the real binary, with the model configured in
// agent.yaml and served by a fake Anthropic API; then a SIGKILL in the middle
// of a turn and a restart, which resumes the turn.
func TestSessionsAndRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "chat")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "agent", "agent.yaml"), []byte("model:\n  provider: anthropic\n  name: fake-model\nsystem: Be brief.\nmaxSteps: 4\n"), 0o644)
	fake := fakemodel.New(
		fakemodel.Reply{Text: []string{"Greeting."}, Calls: []fakemodel.Call{{ID: "t1", Name: "hello", Input: `{"name":"Ada"}`}, {ID: "t2", Name: "echo", Input: `{"message":"hi"}`}}},
		fakemodel.Reply{Text: []string{"Said ", "hello."}},
		fakemodel.Reply{Hang: 5 * time.Minute},
	)
	defer fake.Close()
	env := []string{"ANTHROPIC_BASE_URL=" + fake.AnthropicURL(), "ANTHROPIC_API_KEY=test-key"}
	s := startServerEnv(t, dir, env, "--lease-ttl", "1s")
	url := strings.TrimSuffix(s.base, "/v1")

	// A turn, followed from the CLI: both tools run, the model answers.
	r := run(t, dir, "", "send", "new", "Say hello to Ada", "--url", url, "--follow")
	if r.code != 0 || !strings.Contains(r.stdout, "\n✓ hello ") || !strings.Contains(r.stdout, "\n✓ echo ") ||
		!strings.Contains(r.stdout, "\nSaid hello.\n") || !strings.Contains(r.stdout, "── turn completed") {
		t.Fatalf("send --follow: %+v", r)
	}
	if !fake.Contains(0, `"system":[{"text":"Be brief."`) || !fake.Contains(1, "Hello, Ada!") || !fake.Contains(1, `{\"message\":\"hi\"}`) {
		t.Errorf("the model did not get the system prompt or the tool results:\n%s", fake.Requests()[1])
	}
	first := strings.TrimSpace(strings.Split(run(t, dir, "", "sessions", "--url", url, "--json").stdout, "\n")[0])
	var list struct {
		Sessions []struct {
			ID string `json:"id"`
		} `json:"sessions"`
	}
	json.Unmarshal([]byte(run(t, dir, "", "sessions", "--url", url, "--json").stdout), &list)
	if len(list.Sessions) != 1 {
		t.Fatalf("sessions: %s %+v", first, list)
	}
	done := list.Sessions[0].ID
	before := storedKinds(t, s, done)

	// A direct call bound to the session, from the CLI on an ephemeral host
	// sharing the store.
	r = run(t, dir, "", "call", "hello", "--dir", ".", "--session", done, "--input", `{"name":"Bob"}`)
	if r.code != 0 || !strings.Contains(r.stdout, "Hello, Bob!") {
		t.Fatalf("call --session: %+v", r)
	}
	after := storedKinds(t, s, done)
	if got := strings.Join(after[len(before):], " "); got != "turn.started action.result turn.completed" {
		t.Errorf("the session call's events: %s", got)
	}

	// A turn that hangs on the model, killed with SIGKILL.
	_, v, _ := s.request(t, "POST", "/session", s.token, `{"message":"think hard"}`)
	hung := v["sessionId"].(string)
	waitEvent(t, s, hung, func(kind, data string) bool { return kind == "message" })
	// Kill it only once the model has the request (and hangs on it), so that
	// the hanging answer is not left for the next turn.
	for deadline := time.Now().Add(30 * time.Second); len(fake.Requests()) < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the model got %d requests, want 3", len(fake.Requests()))
		}
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.cmd.Wait()

	fake.SetDefault(fakemodel.Reply{Text: []string{"Resumed."}})
	s2 := startServerEnv(t, dir, env, "--lease-ttl", "1s")
	// The interrupted turn is resumed by the restarted host, which asks the
	// model again, on the same stream.
	waitEvent(t, s2, hung, func(kind, data string) bool { return kind == "turn.completed" })
	// Everything from before the kill is still there.
	if got := storedKinds(t, s2, done); strings.Join(got, " ") != strings.Join(after, " ") {
		t.Errorf("after the restart:\n%v\nbefore:\n%v", got, after)
	}
	if got := storedKinds(t, s2, hung); strings.Join(got, " ") != "session.created turn.started message turn.resumed message.delta message model.usage turn.completed" {
		t.Errorf("the interrupted session: %v", got)
	}
	if reqs := fake.Requests(); len(reqs) != 4 || !strings.Contains(string(reqs[3]), "think hard") {
		t.Errorf("the resumed turn should ask the model again with its history: %d requests", len(reqs))
	}
	// The session takes new turns.
	fake.SetDefault(fakemodel.Reply{Text: []string{"Back."}})
	r = run(t, dir, "", "send", hung, "still there?", "--url", strings.TrimSuffix(s2.base, "/v1"), "--follow")
	if r.code != 0 || !strings.Contains(r.stdout, "\nBack.\n") {
		t.Errorf("a turn after the restart: %+v", r)
	}
	r = run(t, dir, "", "events", hung, "--url", strings.TrimSuffix(s2.base, "/v1"), "--no-follow", "--json")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); r.code != 0 || len(lines) < 8 || !strings.Contains(lines[0], `"kind":"session.created"`) {
		t.Errorf("events --json: %+v", r)
	}
}

// Without a model, a turn fails and says how to configure one.
func TestNoModel(t *testing.T) {
	s := startServer(t, shared)
	r := run(t, shared, "", "send", "new", "hello", "--url", strings.TrimSuffix(s.base, "/v1"), "--follow")
	if r.code != 1 || !strings.Contains(r.stdout, "no model is configured: set model.provider") {
		t.Errorf("send without a model: %+v", r)
	}
}

package main_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// resumeAgent makes an agent with the tools of testdata/resume (tally,
// die) whose model is the fake's, and the environment to serve it with.
func resumeAgent(t *testing.T, fake *fakemodel.Server) (dir string, env []string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "resume")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	if err := addFixtures(dir, "resume", "model:\n  provider: anthropic\n  name: fake-model\nmaxResumes: 1\n"); err != nil {
		t.Fatal(err)
	}
	return dir, []string{"ANTHROPIC_BASE_URL=" + fake.AnthropicURL(), "ANTHROPIC_API_KEY=test-key"}
}

// storedEvents are a session's stored events, decoded.
func storedEvents(t *testing.T, s *server, sessionID string) []map[string]any {
	t.Helper()
	_, v, _ := s.request(t, "GET", "/session/"+sessionID+"/events?follow=false", s.token, "")
	var out []map[string]any
	for _, e := range v["events"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}

func kindsOfStored(evs []map[string]any) string {
	var k []string
	for _, e := range evs {
		k = append(k, e["kind"].(string))
	}
	return strings.Join(k, " ")
}

func ofStoredKind(evs []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, e := range evs {
		if e["kind"] == kind {
			out = append(out, e["data"].(map[string]any))
		}
	}
	return out
}

// sigkill kills the server with SIGKILL and waits until it is gone.
func (s *server) sigkill(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.cmd.Wait()
}

// A host SIGKILLed while the model's answer streams, restarted: the turn is
// resumed (turn.resumed), the lost answer's deltas stay on the stream, and
// the model is asked again, without them.
func TestResumeAfterSIGKILLDuringModelStream(t *testing.T) {
	t.Parallel()
	fake := fakemodel.New(fakemodel.Reply{Text: []string{"Half ", "an ", "answer"}, Every: time.Minute})
	defer fake.Close()
	fake.SetDefault(fakemodel.Reply{Text: []string{"A whole answer."}})
	dir, env := resumeAgent(t, fake)
	s := startServerEnv(t, dir, env, "--lease-ttl", "1s")
	_, v, _ := s.request(t, "POST", "/session", s.token, `{"message":"tell me"}`)
	sid := v["sessionId"].(string)
	waitEvent(t, s, sid, func(kind, data string) bool { return kind == "message.delta" })
	s.sigkill(t)
	killed := time.Now()

	s2 := startServerEnv(t, dir, env, "--lease-ttl", "1s")
	waitEvent(t, s2, sid, func(kind, data string) bool { return kind == "turn.completed" })
	t.Logf("the turn completed %v after the SIGKILL (--lease-ttl 1s; the restart included)", time.Since(killed).Round(time.Millisecond))
	evs := storedEvents(t, s2, sid)
	if got := kindsOfStored(evs); got != "session.created turn.started message message.delta turn.resumed message.delta message model.usage turn.completed" {
		t.Errorf("stream: %s", got)
	}
	if r := ofStoredKind(evs, "turn.resumed"); len(r) != 1 || r[0]["attempt"] != 1.0 || r[0]["from"] == "" {
		t.Errorf("turn.resumed: %v", r)
	}
	if m := ofStoredKind(evs, "message"); len(m) != 2 || m[1]["text"] != "A whole answer." {
		t.Errorf("the messages: %v", m)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 || strings.Contains(string(reqs[1]), "Half") || !strings.Contains(string(reqs[1]), "tell me") {
		t.Errorf("%d model requests; the second should hold the conversation, not the lost answer: %.500s", len(reqs), reqs[len(reqs)-1])
	}
}

// A host SIGKILLed while a tool runs, restarted: the turn is resumed, the
// tool's result is the interrupted one (the tool ran once: its count in KV
// is 1), the model reads it, and the turn completes.
func TestResumeAfterSIGKILLDuringTool(t *testing.T) {
	t.Parallel()
	fake := fakemodel.New(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "m1", Name: "tally", Input: `{"ms":60000}`}}})
	defer fake.Close()
	fake.SetDefault(fakemodel.Reply{Text: []string{"Noted: it was interrupted."}})
	dir, env := resumeAgent(t, fake)
	s := startServerEnv(t, dir, env, "--lease-ttl", "1s")
	_, v, _ := s.request(t, "POST", "/session", s.token, `{"message":"count"}`)
	sid := v["sessionId"].(string)
	started := filepath.Join(dir, ".agent-sdk", "tally-started")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tally did not start:\n%s", s.logs())
		}
	}
	s.sigkill(t)

	s2 := startServerEnv(t, dir, env, "--lease-ttl", "1s")
	waitEvent(t, s2, sid, func(kind, data string) bool { return kind == "turn.completed" })
	evs := storedEvents(t, s2, sid)
	if got := kindsOfStored(evs); !strings.HasSuffix(got, "actions.requested action.result turn.resumed message.delta message model.usage turn.completed") {
		t.Errorf("stream: %s", got)
	}
	if r := ofStoredKind(evs, "action.result"); len(r) != 1 || r[0]["isError"] != true || r[0]["result"] != "interrupted by host restart; not retried" {
		t.Errorf("the running call's result: %v", r)
	}
	if reqs := fake.Requests(); len(reqs) != 2 || !strings.Contains(string(reqs[1]), "interrupted by host restart; not retried") {
		t.Errorf("the model should read the interruption: %d requests", len(reqs))
	}
	status, v, _ := s2.request(t, "POST", "/tools/tally", s2.token, `{"input":{"read":true}}`)
	if res, _ := v["result"].(map[string]any); status != 200 || res["runs"] != 1.0 {
		t.Errorf("tally's count in KV: %d %v; want 1 run", status, v)
	}
}

// A turn whose tool kills its host every time: resumed once (maxResumes:
// 1), it kills the restarted host too, and the next host fails it with
// resume_limit instead of running it a third time.
func TestResumeLimitAfterAHostKilledTwice(t *testing.T) {
	t.Parallel()
	fake := fakemodel.New()
	defer fake.Close()
	fake.SetDefault(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "d1", Name: "die", Input: `{}`}}})
	dir, env := resumeAgent(t, fake)
	s := startServerEnv(t, dir, env, "--lease-ttl", "1s")
	_, v, _ := s.request(t, "POST", "/session", s.token, `{}`)
	sid := v["sessionId"].(string)
	// The tool may kill the host before it answers: no answer is expected.
	_, _, _ = doJSON(context.Background(), http.DefaultClient, s.token, s.base, "POST", "/session/"+sid+"/messages", `{"message":"die"}`)
	s.cmd.Wait() // killed by its own tool
	// The restarted host resumes the turn, and dies the same way.
	second := exec.Command(cliBin, "serve", "--dir", dir, "--addr", "127.0.0.1:0", "--lease-ttl", "1s")
	second.Env = append(os.Environ(), env...)
	done := make(chan error, 1)
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- second.Wait() }()
	select {
	case err := <-done:
		if st, ok := second.ProcessState.Sys().(syscall.WaitStatus); !ok || st.Signal() != syscall.SIGKILL {
			t.Fatalf("the second host ended with %v, want SIGKILL from its tool", err)
		}
	case <-time.After(60 * time.Second):
		second.Process.Kill()
		t.Fatal("the second host did not resume the turn (and die of it)")
	}

	s3 := startServerEnv(t, dir, env, "--lease-ttl", "1s")
	waitEvent(t, s3, sid, func(kind, data string) bool { return kind == "turn.failed" })
	evs := storedEvents(t, s3, sid)
	if got := kindsOfStored(evs); got != "session.created turn.started message model.usage actions.requested action.result turn.resumed model.usage actions.requested action.result turn.failed" {
		t.Errorf("stream: %s", got)
	}
	if f := ofStoredKind(evs, "turn.failed"); len(f) != 1 || f[0]["code"] != "resume_limit" || f[0]["reason"] != "its host died 2 times while it ran; maxResumes is 1" {
		t.Errorf("turn.failed: %v", f)
	}
	if n := len(fake.Requests()); n != 2 {
		t.Errorf("%d model requests, want 2: the turn is not run a third time", n)
	}
	// The session takes turns again.
	fake.SetDefault(fakemodel.Reply{Text: []string{"Alive."}})
	_, v, _ = s3.request(t, "POST", "/session/"+sid+"/messages", s3.token, `{"message":"still there?"}`)
	if v["turnId"] == nil {
		t.Fatalf("a new turn: %v", v)
	}
	waitEvent(t, s3, sid, func(kind, data string) bool { return kind == "turn.completed" })
}

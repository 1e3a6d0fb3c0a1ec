package main_test

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/client"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// versionTool answers with its version: the test edits it.
const versionTool = `package tools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

var _ = tool.Define(tool.Config{Description: "Say which build answers."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
	return "VERSION", nil
})
`

// holdTool runs until the file "release" is in the state directory.
const holdTool = `package tools

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

var _ = tool.Define(tool.Config{Description: "Hold until released."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
	os.WriteFile(filepath.Join(call.StateRoot, "held"), []byte(call.ID), 0o644)
	for {
		if _, err := os.Stat(filepath.Join(call.StateRoot, "release")); err == nil {
			return "released", nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
})
`

// beatSchedule runs every 2 s and does nothing: the test watches its runs.
const beatSchedule = `package schedules

import (
	"context"

	"github.com/agentsdk/agentsdk/schedule"
)

var _ = schedule.Define(schedule.Config{
	Description: "Beat every 2 s.",
	Cron:        "*/2 * * * * *",
	Run:         func(ctx context.Context, r *schedule.Run) error { return nil },
})
`

// serve --watch: an edit of a tool while a session exists and a call is
// parked swaps in a host of the new build on the same port; the session
// and the parked call are there, and the new host runs the call once it
// is approved; a model turn running on the old host finishes there
// (its events reach a stream on the new host); a schedule that fired on
// the old host is listed by the new one with its runs so far, fires
// there, and runs there by hand. A broken edit is reported and the host keeps serving the
// last build; a change that leaves the binary the same swaps nothing,
// unless it is of a file the host reads (agent.yaml).
// SIGTERM stops the watcher and its host.
func TestServeWatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "watched")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	tools := filepath.Join(dir, "agent", "tools")
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(tools, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("promote.go", gatedTools["promote.go"])
	write("version.go", strings.Replace(versionTool, "VERSION", "v1", 1))
	write("hold.go", holdTool)
	if err := os.MkdirAll(filepath.Join(dir, "agent", "schedules"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent", "schedules", "beat.go"), []byte(beatSchedule), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent", "agent.yaml"), []byte("model:\n  provider: anthropic\n  name: fake\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := fakemodel.New(
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "m1", Name: "hold", Input: `{}`}}},
		fakemodel.Reply{Text: []string{"Held, then released."}},
	)
	defer fake.Close()
	env := []string{"ANTHROPIC_BASE_URL=" + fake.AnthropicURL(), "ANTHROPIC_API_KEY=k"}
	s := startServerEnv(t, dir, env, "--watch", "--approval-wait", "0", "--drain-timeout", "60s")
	state := filepath.Join(dir, ".agent-sdk")
	// version calls the tool. A POST that meets a keep-alive connection as
	// the old host closes it fails (EOF), as in any graceful restart, and
	// is not retried by Go's client (it would be with an Idempotency-Key):
	// that is "", like a host that does not answer.
	version := func() string {
		req, _ := http.NewRequest("POST", s.base+"/tools/version", strings.NewReader(`{"input":{}}`))
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		var v struct {
			Result string `json:"result"`
		}
		if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&v) != nil {
			return ""
		}
		return v.Result
	}
	if got := version(); got != "v1" {
		t.Fatalf("version before the edit: %q\n%s", got, s.logs())
	}
	c, err := client.New(strings.TrimSuffix(s.base, "/v1"), s.token, nil)
	if err != nil {
		t.Fatal(err)
	}
	// beatRuns are the schedule's runs the host lists, by whom they were
	// run (a host's lease holder); nil when it lists no beat.
	beatRuns := func() []api.ScheduleRun {
		list, err := c.Schedules(t.Context())
		if err != nil {
			return nil
		}
		for _, sc := range list {
			if sc.Name == "beat" && sc.NextRun != nil {
				return sc.LastRuns
			}
		}
		return nil
	}
	// ranBy finds a completed run of beat, by hand or not, by a host
	// other than notBy.
	ranBy := func(runs []api.ScheduleRun, manual bool, notBy string) *api.ScheduleRun {
		for i, r := range runs {
			if r.Status == api.RunCompleted && r.Manual == manual && r.Host != notBy {
				return &runs[i]
			}
		}
		return nil
	}
	var fired *api.ScheduleRun // a run of beat on the first host
	watchWait(t, s, func() bool { fired = ranBy(beatRuns(), false, ""); return fired != nil })
	_, v, _ := s.request(t, "POST", "/session", s.token, `{"message":"hold on"}`)
	sess, _ := v["sessionId"].(string)
	watchWait(t, s, func() bool { _, err := os.Stat(filepath.Join(state, "held")); return err == nil }) // the turn runs on the first host
	status, v, _ := s.request(t, "POST", "/tools/promote", s.token, `{"input":{"service":"api","environment":"production"}}`)
	parked, _ := v["callId"].(string)
	if status != 202 || parked == "" {
		t.Fatalf("the gated call: %d %v", status, v)
	}

	edited := time.Now()
	write("version.go", strings.Replace(versionTool, "VERSION", "v2", 1))
	watchWait(t, s, func() bool { return version() == "v2" })
	t.Logf("a changed file to the new code answering: %.1fs", time.Since(edited).Seconds())
	if !strings.Contains(s.logs(), "agent-sdk: changed: agent/tools/version.go; rebuilding") || !strings.Contains(s.logs(), "the new host serves") {
		t.Errorf("the swap is not reported:\n%s", s.logs())
	}
	if status, v, _ := s.request(t, "GET", "/session/"+sess, s.token, ""); status != 200 {
		t.Errorf("the session after the swap: %d %v", status, v)
	}
	_, v, _ = s.request(t, "GET", "/approvals?status=pending", s.token, "")
	if !strings.Contains(toJSON(v), parked) {
		t.Fatalf("the parked call after the swap: %v", v)
	}

	// The turn the old host runs is not interrupted: it finishes there.
	if err := os.WriteFile(filepath.Join(state, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, s, sess, func(kind, data string) bool { return kind == "turn.completed" || kind == "turn.failed" })
	if kinds := storedKinds(t, s, sess); kinds[len(kinds)-1] != "turn.completed" {
		t.Fatalf("the turn across the swap: %v\n%s", kinds, s.logs())
	}
	if !strings.Contains(s.logs(), "waiting for the running turns to end before exiting") {
		t.Errorf("the old host did not say it waits for its turn:\n%s", s.logs())
	}

	// The schedule: listed by the new host with the run it had before the
	// edit (or, past the runs listed, runs since), it fires there, and
	// runs there by hand (once no tick's run holds it).
	if runs := beatRuns(); runs == nil || ranBy(runs, false, "") == nil {
		t.Fatalf("beat after the swap: %+v", runs)
	}
	watchWait(t, s, func() bool { return ranBy(beatRuns(), false, fired.Host) != nil })
	var byHand api.ScheduleRun
	watchWait(t, s, func() bool {
		byHand, err = c.RunSchedule(t.Context(), "beat")
		return err == nil
	})
	if byHand.Host == fired.Host {
		t.Errorf("beat run by hand after the swap on the old host %s", byHand.Host)
	}
	watchWait(t, s, func() bool { r := ranBy(beatRuns(), true, fired.Host); return r != nil && r.ID == byHand.ID })

	// A broken edit: the build error, and the last build keeps answering.
	write("version.go", strings.Replace(versionTool, `"VERSION", nil`, `"v3" nil`, 1))
	watchWait(t, s, func() bool { return strings.Contains(s.logs(), "the running host keeps serving the last build") })
	if !strings.Contains(s.logs(), "the agent's files do not parse:\n  agent/tools/version.go:10:14: expected ';', found nil") {
		t.Errorf("the build error does not name the file:\n%s", s.logs())
	}
	if got := version(); got != "v2" {
		t.Errorf("version after a broken edit: %q", got)
	}
	// The new host decides and runs the call parked on the old one.
	if status, v, _ := s.request(t, "POST", "/approvals/"+parked, s.token, `{"approved":true}`); status != 200 {
		t.Fatalf("approving after the swap: %d %v", status, v)
	}
	waitFile(t, filepath.Join(state, "promote-runs"), 1)

	// A test file changes nothing the host runs.
	before := strings.Count(s.logs(), "the new host serves")
	write("version_test.go", "package tools\n")
	write("version.go", strings.Replace(versionTool, "VERSION", "v2", 1)) // fixed again: the v2 binary, cached
	watchWait(t, s, func() bool {
		return strings.Count(s.logs(), "rebuilding") >= 3 && strings.Contains(s.logs(), "binary is the same")
	})
	if n := strings.Count(s.logs(), "the new host serves"); n != before {
		t.Errorf("a swap with the binary unchanged:\n%s", s.logs())
	}
	// agent.yaml is read by the host as it starts: a new host, the same binary.
	yaml := filepath.Join(dir, "agent", "agent.yaml")
	data, err := os.ReadFile(yaml)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(yaml, append(data, "\n# edited\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	watchWait(t, s, func() bool { return strings.Count(s.logs(), "the new host serves") == before+1 })

	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("serve --watch after SIGTERM: %v\n%s", err, s.logs())
	}
	if c, err := net.Dial("tcp", strings.SplitN(s.base, "/", 4)[2]); err == nil {
		c.Close()
		t.Errorf("the port is still open after the watcher stopped")
	}
}

// watchWait waits for cond, failing with the watcher's log after a build's
// time.
func watchWait(t *testing.T, s *server, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(watchTimeout); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s:\n%s", watchTimeout, s.logs())
		}
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// watchTimeout bounds each wait of TestServeWatch: a build's time on a
// loaded machine.
var watchTimeout = 5 * time.Minute

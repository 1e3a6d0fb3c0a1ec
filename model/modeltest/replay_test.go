package modeltest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/model/modeltest"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// weatherSet is the tools of the tests' sessions: weather.
func weatherSet(t testing.TB) *tool.Set {
	t.Helper()
	weather, err := tool.New("weather", tool.Config{Description: "Weather in a city."},
		func(ctx context.Context, call *tool.Call, in weatherInput) (any, error) {
			return map[string]string{"city": in.City, "sky": "clear"}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(weather)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// system is the tests' system prompt.
const system = "You are a weather agent.\nBe brief.\nAnswer in English."

// startHost starts a host of weatherSet on SQLite with model p and the
// system prompt, closed when the test ends.
func startHost(t *testing.T, p model.Provider, system string) *host.Host {
	t.Helper()
	state := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(state, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(weatherSet(t), &host.Options{StateRoot: state, Store: st, Model: p, System: system,
		ModelConfig: model.Config{Provider: "anthropic", Name: "fake"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(); st.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return h
}

// converse sends messages to a new session of h, each once the turn
// before ended, and returns the session's stream as lines a user would
// compare: each event's kind and what it says, without ids, times or
// durations.
func converse(t *testing.T, h *host.Host, messages ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sess, _, err := h.Sessions().Create(ctx, host.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	after := int64(0)
	for _, msg := range messages {
		if _, err := h.Sessions().Send(ctx, sess.ID, msg); err != nil {
			t.Fatal(err)
		}
	follow:
		for e, err := range h.Sessions().Follow(ctx, sess.ID, after) {
			if err != nil {
				t.Fatal(err)
			}
			after = e.Seq
			lines = append(lines, describe(t, e))
			switch e.Kind {
			case api.KindTurnCompleted, api.KindTurnFailed:
				break follow
			}
		}
	}
	return lines
}

// describe is what an event says, without ids, times or durations.
func describe(t *testing.T, e api.Event) string {
	t.Helper()
	var what any
	var err error
	switch e.Kind {
	case api.KindMessage:
		what, err = api.Decode[api.Message](e)
	case api.KindMessageDelta:
		what, err = api.Decode[api.MessageDelta](e)
	case api.KindActionsRequested:
		var p api.ActionsRequested
		p, err = api.Decode[api.ActionsRequested](e)
		var calls []string
		for _, a := range p.Actions {
			calls = append(calls, fmt.Sprintf("%s %s %s%s", a.ModelCallID, a.Tool, a.Input, a.InputText))
		}
		what = calls
	case api.KindActionResult:
		var p api.ActionResult
		p, err = api.Decode[api.ActionResult](e)
		what = fmt.Sprintf("%s %s isError=%v", p.Tool, p.Result, p.IsError)
	case api.KindModelUsage:
		var p api.ModelUsage
		p, err = api.Decode[api.ModelUsage](e)
		what = fmt.Sprintf("%s in=%d out=%d cacheRead=%d cacheWrite=%d", p.Model, p.InputTokens, p.OutputTokens, p.CacheReadTokens, p.CacheWriteTokens)
	case api.KindTurnFailed:
		var p api.TurnFailed
		p, err = api.Decode[api.TurnFailed](e)
		what = fmt.Sprintf("%s: %s", p.Code, p.Reason)
	}
	if err != nil {
		t.Fatal(err)
	}
	if what == nil {
		return string(e.Kind)
	}
	return fmt.Sprintf("%s %v", e.Kind, what)
}

// recordedSession records a session of two turns against the fake
// model, through the Anthropic client, into a directory it returns with
// the session's stream; the fake is gone when it returns.
func recordedSession(t *testing.T) (string, []string) {
	t.Helper()
	fake := fakemodel.New(
		fakemodel.Reply{Text: []string{"Let me ", "check."}, Calls: []fakemodel.Call{{ID: "toolu_1", Name: "weather", Input: `{"city": "Paris"}`}}},
		fakemodel.Reply{Text: []string{"Clear ", "skies ", "in Paris."}},
		fakemodel.Reply{Text: []string{"You are ", "welcome."}},
	)
	p, err := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: fake.AnthropicURL()})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "cassettes")
	rec, err := modeltest.Record(p, dir)
	if err != nil {
		t.Fatal(err)
	}
	recorded := converse(t, startHost(t, rec, system), "What is the weather in Paris?", "Thanks!")
	if n := len(fake.Requests()); n != 3 {
		t.Fatalf("the fake was asked %d times, want 3", n)
	}
	fake.Close()
	return dir, recorded
}

// A session's model calls recorded against a real provider client (the
// Anthropic client and the fake model over loopback) replay with the
// fake gone: the same session gets the same stream, deltas, tool calls
// and usage included.
func TestRecordReplaySession(t *testing.T) {
	dir, recorded := recordedSession(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) != 3 {
		t.Fatalf("cassettes %q (%v), want one per model call: 3", files, err)
	}
	if !contains(recorded, `actions.requested [toolu_1 weather {"city":"Paris"}]`) || !contains(recorded, "message.delta {skies }") {
		t.Fatalf("the recorded session did not stream as the fake answered:\n%s", strings.Join(recorded, "\n"))
	}

	r, err := modeltest.Replay(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.ReportTo(t)
	replayed := converse(t, startHost(t, r, system), "What is the weather in Paris?", "Thanks!")
	if got, want := strings.Join(replayed, "\n"), strings.Join(recorded, "\n"); got != want {
		t.Errorf("the replayed session streamed\n%s\nwant, as recorded,\n%s", got, want)
	}
}

// A replay whose system prompt changed fails the turn loudly, with a diff
// against the closest cassette naming the line that changed; the test
// is told too.
func TestReplayChangedPromptFails(t *testing.T) {
	dir, _ := recordedSession(t)
	r, err := modeltest.Replay(dir)
	if err != nil {
		t.Fatal(err)
	}
	var rep reports
	r.ReportTo(&rep)
	changed := strings.Replace(system, "Be brief.", "Be very brief.", 1)
	lines := converse(t, startHost(t, r, changed), "What is the weather in Paris?")
	last := lines[len(lines)-1]
	for _, want := range []string{
		"turn.failed invalid_request",
		"no cassette in " + dir,
		`the last message is the user's: "What is the weather in Paris?"`,
		"(- recorded, + asked):",
		`  system: "You are a weather agent."`,
		`- system: "Be brief."`,
		`+ system: "Be very brief."`,
		`  system: "Answer in English."`,
	} {
		if !strings.Contains(last, want) {
			t.Errorf("the turn ended with\n%s\nwhich lacks %q", last, want)
		}
	}
	if strings.Contains(last, "messages[0]") {
		t.Errorf("the diff shows lines that did not change:\n%s", last)
	}
	if got := rep.all(); len(got) != 1 || !strings.Contains(got[0], `+ system: "Be very brief."`) {
		t.Errorf("reported %q, want the one miss with its diff", got)
	}
}

// reports is a Reporter keeping what it was told.
type reports struct {
	mu   sync.Mutex
	msgs []string
}

func (r *reports) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

func (r *reports) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

// Replay refuses a directory it cannot serve from, saying why.
func TestReplayRefuses(t *testing.T) {
	empty := t.TempDir()
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "x.json"), []byte(`{"request":{"messages":[]},"answers":[{"chunks":[{"text":"hi"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, want string
	}{
		{"missing", filepath.Join(empty, "nope"), "no such file or directory"},
		{"empty", empty, "has no cassettes (*.json): record some with agent-sdk serve --record"},
		{"unended answer", bad, `x.json: answer 1 neither ends (a last chunk with "end") nor fails ("error")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := modeltest.Replay(tt.dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Replay(%s) = %v, want an error saying %q", tt.dir, err, tt.want)
			}
		})
	}
}

package main_test

import (
	"context"
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

// spendYAML is the agent.yaml of the usage tests: the fake model, priced
// at $3, $15, $0.30 and $3.75 per million input, output, cache-read and
// cache-write tokens.
const spendYAML = `model:
  provider: anthropic
  name: fake-model
pricing:
  fake-model: {input: 3, output: 15, cacheRead: 0.30, cacheWrite: 3.75}
`

// bigCall is a model call's usage that costs 3000+7500+600+375 = 11,475
// micro-dollars at spendYAML's prices.
var bigCall = fakemodel.Usage{Input: 1000, Output: 500, CacheRead: 2000, CacheWrite: 100}

// runnerTurn plays a runner: it claims the cloud turn waiting on the host
// at base and reports events for it (what a runner's model did — here
// reasoning, retries and usage the fake providers do not stream yet),
// then ends it as end says (failed with code).
func runnerTurn(t *testing.T, base, token string, end string, code api.FailureCode, reason string, events ...api.Payload) {
	t.Helper()
	c, err := client.New(base, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	claim, err := c.RunnerClaim(ctx, api.RunnerClaimRequest{Runner: "scripted", WaitMs: 10_000})
	if err != nil || claim == nil {
		t.Fatalf("claiming the cloud turn: %+v %v", claim, err)
	}
	rep := api.RunnerReport{Token: claim.Token}
	for _, p := range events {
		rep.Events = append(rep.Events, api.NewEvent(p))
	}
	if err := c.RunnerReport(ctx, claim.SessionID, claim.TurnID, rep); err != nil {
		t.Fatalf("reporting the turn's events: %v", err)
	}
	steps := 1
	if err := c.RunnerReport(ctx, claim.SessionID, claim.TurnID, api.RunnerReport{Token: claim.Token, End: end, Code: code, Reason: reason, Steps: &steps}); err != nil {
		t.Fatalf("ending the turn: %v", err)
	}
}

// totalLine is the TOTAL line of agent-sdk usage's table, its columns one
// space apart.
func totalLine(table string) string {
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "TOTAL ") {
			return strings.Join(strings.Fields(line), " ")
		}
	}
	return ""
}

// stopServer stops agent-sdk serve as a person would (SIGTERM) and waits.
func stopServer(t *testing.T, s *server) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	<-s.done
	s.cmd.Wait()
}

// What model turns cost, as the CLI shows it against a real host whose
// fake model reports usage as Anthropic's API does: under each turn of
// send --follow and events, in the session header and the session list,
// and in agent-sdk usage's table, in total and by principal, channel,
// model and session; a cloud turn's reasoning, retries and failure code;
// then, with the model's price gone, a cost of — (never $0) that makes
// every total it is part of — too. The outputs are testdata/remote/usage-*.golden
// (go test -run TestUsageCLI -update rewrites them).
func TestUsageCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spend")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	yaml := filepath.Join(dir, "agent", "agent.yaml")
	if err := os.WriteFile(yaml, []byte(spendYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := fakemodel.New(
		fakemodel.Reply{Text: []string{"Greeting."}, Calls: []fakemodel.Call{{ID: "m1", Name: "hello", Input: `{"name":"Ada"}`}}, Usage: &bigCall},
		fakemodel.Reply{Text: []string{"Said hello."}, Usage: &bigCall},
		fakemodel.Reply{Text: []string{"Hi."}, Usage: &fakemodel.Usage{Input: 10, Output: 2}}, // 30+30 = 60 µ$
		fakemodel.Reply{Text: []string{"Unpriced."}, Usage: &fakemodel.Usage{Input: 7, Output: 3}},
	)
	defer fake.Close()
	env := []string{"ANTHROPIC_BASE_URL=" + fake.AnthropicURL(), "ANTHROPIC_API_KEY=k"}
	s := startServerEnv(t, dir, env)
	u := strings.TrimSuffix(s.base, "/v1")
	step := func(name string, args ...string) result {
		t.Helper()
		r := run(t, dir, "", args...)
		checkGolden(t, "usage-"+name, args, r)
		return r
	}

	// Two model calls of $0.011475 each: the turn's line says $0.02295.
	r := step("send-follow", "send", "new", "Say hello to Ada", "--url", u, "--follow")
	if !strings.Contains(r.stdout, "── turn completed after 2 steps ──\n  2 model calls · tokens 2,000 in, 1,000 out, 4,000 cache read, 200 cache write · cost $0.02295\n") {
		t.Errorf("send --follow does not show the turn's usage:\n%s", r.stdout)
	}
	first := strings.TrimSpace(strings.TrimPrefix(strings.Split(r.stderr, ",")[0], "session "))
	step("send-ops", "send", "new", "Hi", "--channel", "ops", "--url", u, "--follow")

	// A cloud turn whose runner's model reasoned, was retried twice, and
	// failed overloaded.
	_, v, _ := s.request(t, "POST", "/session", s.token, `{"message":"Think it over","mode":"cloud"}`)
	cloud, _ := v["sessionId"].(string)
	runnerTurn(t, u, s.token, api.RunnerEndFailed, api.FailureOverloaded, "model provider: 529 overloaded_error: Overloaded",
		api.ReasoningDelta{Text: "The user wants "}, api.ReasoningDelta{Text: "me to think."},
		api.Reasoning{Text: "The user wants me to think.", Signature: "sig"},
		api.ModelRetry{Attempt: 1, Code: api.FailureOverloaded, Status: 529, WaitMs: 1000, Message: "Overloaded"},
		api.ModelRetry{Attempt: 2, Code: api.FailureOverloaded, Status: 529, WaitMs: 2000, Message: "Overloaded"},
		api.MessageDelta{Text: "Thinking"},
		api.ModelUsage{Provider: "anthropic", Model: "fake-model", InputTokens: 100, OutputTokens: 50, ReasoningTokens: 20, Reported: true}, // 300+750 = 1,050 µ$
	)
	r = step("events-cloud", "events", cloud, "--url", u, "--no-follow")
	for _, want := range []string{
		"Σ session " + cloud + ": 1 model call · tokens 100 in, 50 out (20 reasoning) · cost $0.00105\n",
		"∴ thinking… (27 chars)\n",
		"↻ model call retry 2 in 2.0s (overloaded, HTTP 529: Overloaded)\n",
		"✗ turn failed after 1 step: model provider: 529 overloaded_error: Overloaded\n  code overloaded · 1 model call · tokens 100 in, 50 out (20 reasoning) · cost $0.00105\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("events of the cloud session lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "wants me to think") {
		t.Errorf("events shows the reasoning's text:\n%s", r.stdout)
	}
	step("events", "events", first, "--url", u, "--no-follow")
	step("sessions", "sessions", "--url", u)

	// The aggregate: 4 calls, $0.02295 + $0.00006 + $0.00105.
	r = step("total", "usage", "--url", u)
	if total := totalLine(r.stdout); total != "TOTAL 4 2,110 1,052 4,000 200 20 $0.02406" {
		t.Errorf("usage's total:\n%s", r.stdout)
	}
	step("by-channel", "usage", "--url", u, "--by", "channel")
	step("by-model", "usage", "--url", u, "--by", "model", "--from", "2026-01-01")
	step("by-session", "usage", "--url", u, "--by", "session")
	step("by-principal-json", "usage", "--url", u, "--by", "principal", "--json")
	step("future", "usage", "--url", u, "--from", "2999-01-01", "--to", "2999-01-02T00:00:00Z")
	for _, c := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"bad-from", []string{"--from", "yesterday"}, `agent-sdk: --from "yesterday": want a date (2026-03-01) or an RFC 3339 time (2026-03-01T09:00:00Z)`},
		{"bad-by", []string{"--by", "tool"}, "by=tool: group usage by principal, channel, model or session (HTTP 400)"},
		{"backwards", []string{"--from", "2026-03-02", "--to", "2026-03-01"}, "must come before to"},
	} {
		r := step(c.name, append([]string{"usage", "--url", u}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.stderr) || r.stdout != "" {
			t.Errorf("usage %v: %+v, want exit 2 with %q", c.args, r, c.stderr)
		}
	}

	// The model's price removed: the next call has no cost, and every
	// total it is part of has none, never $0.
	stopServer(t, s)
	if err := os.WriteFile(yaml, []byte("model:\n  provider: anthropic\n  name: fake-model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s = startServerEnv(t, dir, env)
	u = strings.TrimSuffix(s.base, "/v1")
	r = step("send-unpriced", "send", "new", "Hi again", "--url", u, "--follow")
	if !strings.Contains(r.stdout, "  1 model call · tokens 7 in, 3 out · cost — (no price for the model)\n") {
		t.Errorf("an unpriced turn:\n%s", r.stdout)
	}
	r = step("unpriced-by-session", "usage", "--url", u, "--by", "session")
	if total := totalLine(r.stdout); total != "TOTAL 5 2,117 1,055 4,000 200 20 —" ||
		!strings.Contains(r.stdout, "— no price for a model of these calls") || strings.Contains(r.stdout, "$0.00\n") {
		t.Errorf("usage with an unpriced call:\n%s", r.stdout)
	}
	step("unpriced-sessions", "sessions", "--url", u)
}

// agent-sdk usage documents itself: the columns, the dates, — for no
// price, the exit statuses; --url is required.
func TestUsageHelp(t *testing.T) {
	r := run(t, repoRoot, "", "usage", "--help")
	for _, want := range []string{"Usage:", "Examples:", "Exit status:", "--from", "--to", "--by", "--json", "CACHE READ", "REASONING", "— when a call's model has no price"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("usage --help lacks %q: exit %d\n%s", want, r.code, r.stdout)
		}
	}
	if r := run(t, repoRoot, "", "usage"); r.code != 2 || !strings.Contains(r.stderr, `required flag(s) "url" not set`) {
		t.Errorf("usage without --url: %+v", r)
	}
	if r := run(t, repoRoot, "", "--help"); !strings.Contains(r.stdout, "usage ") {
		t.Errorf("agent-sdk --help does not list usage:\n%s", r.stdout)
	}
}

package main_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// pgSpendYAML is the agent.yaml of the playground's usage test: the fake
// model priced as spendYAML prices it.
const pgSpendYAML = "model:\n  provider: anthropic\n  name: fake-model\nmaxSteps: 4\n" +
	"pricing:\n  fake-model: {input: 3, output: 15, cacheRead: 0.30, cacheWrite: 3.75}\n"

// pgSpend is the served agent of the usage test: the playground's
// fixtures, a model routed by marker (eval cases run at once), and what
// it takes to serve the agent again.
type pgSpend struct {
	*pgEnv
	dir    string
	router *fakemodel.Router
	env    []string
}

func pgStartSpend(t *testing.T) *pgSpend {
	t.Helper()
	m := fakemodel.NewRouter()
	t.Cleanup(m.Close)
	dir := filepath.Join(t.TempDir(), pgSlug)
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	if err := addFixtures(dir, "playground", pgSpendYAML); err != nil {
		t.Fatal(err)
	}
	e := &pgSpend{dir: dir, router: m, env: []string{"ANTHROPIC_BASE_URL=" + m.URL, "ANTHROPIC_API_KEY=test-key"}}
	e.serve(t)
	return e
}

// serve starts agent-sdk serve on the agent (again).
func (e *pgSpend) serve(t *testing.T) {
	t.Helper()
	s := startServerEnv(t, e.dir, e.env)
	e.pgEnv = &pgEnv{s: s, fake: e.router.Default, base: strings.TrimSuffix(s.base, "/v1")}
}

// signIn signs the tab in with the host's token.
func (p *pgPage) signIn() {
	p.t.Helper()
	p.do("the sign-in page", chromedp.Navigate(p.env.base+"/"), chromedp.WaitVisible(chromedp.ID("signin-form")))
	p.do("typing the token", chromedp.SendKeys(chromedp.ID("token"), p.env.s.token))
	if resp := p.load("signing in", chromedp.Click(chromedp.ID("signin-submit"))); resp.Status != http.StatusOK {
		p.fail("signing in: HTTP %d", resp.Status)
	}
	p.do("the sessions page", chromedp.WaitVisible(chromedp.ID("new-session-form")))
}

// Usage and cost in the playground, in a real browser against a host
// whose fake model reports usage as Anthropic's API does: each turn's
// tokens and cost under its end, the session's total in its header, both
// in the session list; a cloud turn's reasoning folded in a <details>,
// its retries as notices, its failure code; each eval case's and batch's
// cost, and Compare's score, token and cost deltas; then, the price
// removed, — for a cost, never $0.
func TestPlaygroundUsage(t *testing.T) {
	browser := playgroundBrowser(t)
	env := pgStartSpend(t)
	shots := pgScreenshots(t)
	p := pgOpen(t, browser, "usage", env.pgEnv, shots, chromedp.WithNewBrowserContext())
	ok := true
	step := func(name string, f func(t *testing.T)) {
		if !ok {
			return
		}
		ok = t.Run(name, func(t *testing.T) {
			p.t = t
			f(t)
			p.shot("usage-" + name)
		})
		p.t = t
	}
	p.signIn()
	var local, cloud string

	// Two turns of a session started here: each says what it spent, and
	// the header the session's total, read again as each turn ends.
	step("turns", func(t *testing.T) {
		env.router.Route("[ui]",
			fakemodel.Reply{Text: []string{"Hello."}, Usage: &bigCall},                               // 11,475 µ$
			fakemodel.Reply{Text: []string{"Again."}, Usage: &fakemodel.Usage{Input: 10, Output: 2}}) // 60 µ$
		p.do("starting a session",
			chromedp.SendKeys(chromedp.ID("new-session-message"), "[ui] Hello there"),
			chromedp.Click(chromedp.ID("new-session-submit")),
			chromedp.WaitVisible(chromedp.ID("session-id")))
		local = p.text("#session-id")
		done := "#trajectory > li.ev-turn.completed"
		p.waitCount(done, 1)
		if got, want := p.text(done+" .turn-usage"), "1 model call · tokens 1,000 in, 500 out, 2,000 cache read, 100 cache write · cost $0.011475"; got != want {
			t.Errorf("the turn's usage: %q, want %q", got, want)
		}
		p.waitText("#session-usage", "Σ session: 1 model call · tokens 1,000 in, 500 out, 2,000 cache read, 100 cache write · cost $0.011475")
		p.do("sending again", chromedp.SendKeys(chromedp.ID("send-message"), "Again"), chromedp.Click(chromedp.ID("send-submit")))
		p.waitCount(done, 2)
		if got := pgJS[[]string](p, `sel => [...document.querySelectorAll(sel)].map(e => e.textContent)`, done+" .turn-usage"); len(got) != 2 ||
			got[1] != "1 model call · tokens 10 in, 2 out · cost $0.00006" {
			t.Errorf("the turns' usage: %q", got)
		}
		p.waitText("#session-usage", "Σ session: 2 model calls · tokens 1,010 in, 502 out, 2,000 cache read, 100 cache write · cost $0.011535")
	})

	// A cloud turn whose runner reports that its model reasoned (shown
	// folded, its text inside, closed), was retried twice (notices), and
	// failed overloaded (the code beside the reason).
	step("cloud-turn", func(t *testing.T) {
		status, body := env.api(t, "POST", "/session", "", `{"message":"Think it over","mode":"cloud"}`)
		var created struct{ SessionID string }
		if json.Unmarshal(body, &created); status != http.StatusCreated || created.SessionID == "" {
			t.Fatalf("POST /v1/session: %d %s", status, body)
		}
		cloud = created.SessionID
		runnerTurn(t, env.base, env.s.token, api.RunnerEndFailed, api.FailureOverloaded, "model provider: 529 overloaded_error: Overloaded",
			api.ReasoningDelta{Text: "The user wants "}, api.ReasoningDelta{Text: "me to think."},
			api.Reasoning{Text: "The user wants me to think.", Signature: "sig"},
			api.ModelRetry{Attempt: 1, Code: api.FailureOverloaded, Status: 529, WaitMs: 1000, Message: "Overloaded"},
			api.ModelRetry{Attempt: 2, Code: api.FailureOverloaded, Status: 529, WaitMs: 2500, Message: "Overloaded"},
			api.Reasoning{Redacted: "ENCRYPTED", Signature: "sig2"},
			api.MessageDelta{Text: "Thinking"},
			api.ModelUsage{Provider: "anthropic", Model: "fake-model", InputTokens: 100, OutputTokens: 50, ReasoningTokens: 20, Reported: true}, // 1,050 µ$
		)
		p.do("the cloud session", pgHash("#/sessions/"+cloud), chromedp.WaitVisible(chromedp.CSS("#trajectory > li.ev-turn.failed")))
		_, body = env.api(t, "GET", "/session/"+cloud+"/events?follow=false", "", "")
		var v struct{ Events []map[string]any }
		json.Unmarshal(body, &v)
		p.waitCount("#trajectory > li.ev", pgItems(v.Events))
		type block struct {
			Summary, Text string
			Open, Visible bool // the <details>, its text
		}
		blocks := func() []block {
			return pgJS[[]block](p, `() => [...document.querySelectorAll('#trajectory > li.ev-reasoning details.reasoning')].map(d => ({
				summary: d.querySelector('summary').textContent, text: d.querySelector('pre').textContent, open: d.open,
				visible: d.querySelector('pre').checkVisibility() }))`)
		}
		got := blocks()
		if len(got) != 2 || got[0] != (block{"thinking… (27 chars)", "The user wants me to think.", false, false}) ||
			got[1].Summary != "thinking… (redacted)" || got[1].Open || strings.Contains(got[1].Text, "ENCRYPTED") {
			t.Errorf("the reasoning shown: %+v", got)
		}
		// Folded before the answer, which is not it.
		if order := pgJS[[]string](p, `() => [...document.querySelectorAll('#trajectory > li.ev')].map(li => li.className)`); !comesBefore(order, "ev ev-reasoning", "ev assistant") {
			t.Errorf("the trajectory's items: %q", order)
		}
		if s := p.text("#trajectory > li.ev.assistant .msg.assistant"); s != "Thinking" {
			t.Errorf("the answer shows %q", s)
		}
		p.do("unfolding the reasoning", chromedp.Click(chromedp.CSS("#trajectory > li.ev-reasoning details.reasoning > summary")))
		if got := blocks(); !got[0].Open || !got[0].Visible {
			t.Errorf("the reasoning unfolded: %+v", got[0])
		}
		retries := pgJS[[]string](p, `() => [...document.querySelectorAll('#trajectory > li.ev-retry')].map(e => e.textContent.slice(e.querySelector('time').textContent.length))`)
		if len(retries) != 2 || retries[1] != "↻ model call retry 2 in 2.5 s (overloaded, HTTP 529: Overloaded)" {
			t.Errorf("the retries shown: %q", retries)
		}
		failed := "#trajectory > li.ev-turn.failed"
		if code, reason, usage := p.text(failed+" .fail-code"), p.text(failed+" .fail-reason"), p.text(failed+" .turn-usage"); code != "overloaded" ||
			reason != "model provider: 529 overloaded_error: Overloaded" || usage != "1 model call · tokens 100 in, 50 out (20 reasoning) · cost $0.00105" {
			t.Errorf("the failed turn: code %q, reason %q, usage %q", code, reason, usage)
		}
		p.waitText("#session-usage", "Σ session: 1 model call · tokens 100 in, 50 out (20 reasoning) · cost $0.00105")
	})

	// The session list: each session's tokens and cost.
	step("sessions", func(t *testing.T) {
		p.do("the sessions page", chromedp.Click(chromedp.ID("nav-sessions")), chromedp.WaitVisible(chromedp.CSS(`#sessions-list tr.session[data-id="`+cloud+`"]`)))
		for id, want := range map[string][2]string{local: {"3,612", "$0.011535"}, cloud: {"150", "$0.00105"}} {
			row := `#sessions-list tr.session[data-id="` + id + `"]`
			if tokens, cost := p.text(row+" td.tokens"), p.text(row+" td.cost"); tokens != want[0] || cost != want[1] {
				t.Errorf("session %s listed with %q tokens, cost %q; want %q, %q", id, tokens, cost, want[0], want[1])
			}
		}
	})

	// Two runs of an eval: each case's tokens and cost, the batch's total,
	// and Compare's deltas beside the verdicts — dear is fixed and
	// cheaper, cheap passes again and costs more.
	step("evals", func(t *testing.T) {
		runEval := func(cheap, dear fakemodel.Reply) string {
			t.Helper()
			env.router.Route("[cheap]", cheap)
			env.router.Route("[dear]", dear)
			status, body := env.api(t, "POST", "/evals", "", `{"name":"spend","cases":[
				{"name":"cheap","message":"[cheap] Say hi","checks":[{"contains":"hi"}]},
				{"name":"dear","message":"[dear] Deploy web","checks":[{"contains":"deployed"}]}]}`)
			var b struct{ ID string }
			if json.Unmarshal(body, &b); status != http.StatusAccepted || b.ID == "" {
				t.Fatalf("POST /v1/evals: %d %s", status, body)
			}
			for deadline := time.Now().Add(pgStepTimeout); ; time.Sleep(50 * time.Millisecond) {
				_, body := env.api(t, "GET", "/evals/"+b.ID, "", "")
				var got struct{ Status string }
				if json.Unmarshal(body, &got); got.Status == "completed" {
					return b.ID
				}
				if time.Now().After(deadline) {
					t.Fatalf("batch %s did not complete: %s", b.ID, body)
				}
			}
		}
		before := runEval(fakemodel.Reply{Text: []string{"hi"}, Usage: &fakemodel.Usage{Input: 100, Output: 10}}, // 450 µ$
			fakemodel.Reply{Text: []string{"not yet"}, Usage: &fakemodel.Usage{Input: 1000, Output: 100}}) // 4,500 µ$
		after := runEval(fakemodel.Reply{Text: []string{"hi"}, Usage: &fakemodel.Usage{Input: 200, Output: 10}}, // 750 µ$
			fakemodel.Reply{Text: []string{"deployed"}, Usage: &fakemodel.Usage{Input: 500, Output: 50}}) // 2,250 µ$

		p.do("the evals page", chromedp.Click(chromedp.ID("nav-evals")), chromedp.WaitVisible(chromedp.CSS(`#evals-list tr.eval[data-id="`+after+`"]`)))
		for id, want := range map[string][2]string{before: {"1,210", "$0.00495"}, after: {"760", "$0.003"}} {
			row := `#evals-list tr.eval[data-id="` + id + `"]`
			if tokens, cost := p.text(row+" td.tokens"), p.text(row+" td.cost"); tokens != want[0] || cost != want[1] {
				t.Errorf("batch %s listed with %q tokens, cost %q; want %q, %q", id, tokens, cost, want[0], want[1])
			}
		}
		p.do("the first batch", chromedp.Click(chromedp.CSS(`#evals-list tr.eval[data-id="`+before+`"] a.eval-link`)),
			chromedp.WaitVisible(chromedp.CSS(`#eval-cases tr.case[data-case="dear"]`)))
		p.waitText("#eval-usage", "Σ batch: 2 model calls · tokens 1,100 in, 110 out · cost $0.00495")
		for name, want := range map[string][2]string{"cheap": {"110", "$0.00045"}, "dear": {"1,100", "$0.0045"}} {
			row := `#eval-cases tr.case[data-case="` + name + `"]`
			if tokens, cost := p.text(row+" td.tokens"), p.text(row+" td.cost"); tokens != want[0] || cost != want[1] {
				t.Errorf("case %s with %q tokens, cost %q; want %q, %q", name, tokens, cost, want[0], want[1])
			}
		}
		p.do("comparing", pgHash("#/evals/"+before+"/vs/"+after),
			chromedp.WaitVisible(chromedp.CSS(`#compare-cases tr.compare-case.fixed[data-case="dear"]`)))
		type deltas struct{ Score, Tokens, Cost, Classes string }
		row := func(name string) deltas {
			return pgJS[deltas](p, `name => {
				const r = document.querySelector('#compare-cases tr.compare-case[data-case="' + name + '"]');
				const c = s => r.querySelector(s);
				return { score: c('.delta-score').textContent, tokens: c('.delta-tokens').textContent, cost: c('.delta-cost').textContent,
					classes: [c('.delta-score'), c('.delta-tokens'), c('.delta-cost')].map(e => e.className.split(' ')[1]).join(' ') };
			}`, name)
		}
		if got, want := row("dear"), (deltas{"+100 pts", "−550", "−$0.00225", "better better better"}); got != want {
			t.Errorf("dear's deltas: %+v, want %+v", got, want)
		}
		if got, want := row("cheap"), (deltas{"±0 pts", "+100", "+$0.0003", "same worse worse"}); got != want {
			t.Errorf("cheap's deltas: %+v, want %+v", got, want)
		}
		if got := p.text("#compare-deltas"); got != "After − before: score +50 pts · tokens −450 · cost −$0.00195" {
			t.Errorf("the batches' deltas: %q", got)
		}
		if got := p.text("#compare-summary"); got != "0 regressions, 1 fixed, 2 cases" {
			t.Errorf("the comparison's summary: %q", got)
		}
		if got := p.text(`#compare-cases tr.compare-case[data-case="dear"] td:nth-child(3) .case-cost`); got != "$0.00225" {
			t.Errorf("dear's cost after: %q", got)
		}
	})

	// Without the model's price, served again: a new turn's cost is —
	// (never $0), and so is its session's; what was priced stays priced.
	step("no-price", func(t *testing.T) {
		p.checkClean()
		stopServer(t, env.s)
		if err := os.WriteFile(filepath.Join(env.dir, "agent", "agent.yaml"), []byte("model:\n  provider: anthropic\n  name: fake-model\nmaxSteps: 4\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		env.serve(t)
		env.router.Route("[free]", fakemodel.Reply{Text: []string{"Free?"}, Usage: &fakemodel.Usage{Input: 7, Output: 3}})
		p = pgOpen(t, browser, "no-price", env.pgEnv, shots, chromedp.WithNewBrowserContext())
		p.signIn()
		p.do("starting a session",
			chromedp.SendKeys(chromedp.ID("new-session-message"), "[free] Is this free?"),
			chromedp.Click(chromedp.ID("new-session-submit")),
			chromedp.WaitVisible(chromedp.CSS("#trajectory > li.ev-turn.completed .turn-usage.no-price")))
		free := p.text("#session-id")
		if got := p.text("#trajectory > li.ev-turn.completed .turn-usage"); got != "1 model call · tokens 7 in, 3 out · cost — (no price for the model)" {
			t.Errorf("the unpriced turn: %q", got)
		}
		p.waitText("#session-usage", "cost — (no price for the model)")
		p.do("the sessions page", chromedp.Click(chromedp.ID("nav-sessions")), chromedp.WaitVisible(chromedp.CSS(`#sessions-list tr.session[data-id="`+free+`"]`)))
		for id, want := range map[string]string{free: "—", local: "$0.011535"} {
			if got := p.text(`#sessions-list tr.session[data-id="` + id + `"] td.cost`); got != want {
				t.Errorf("session %s's cost: %q, want %q", id, got, want)
			}
		}
		if n := p.count(`#sessions-list td.cost.no-price`); n != 1 {
			t.Errorf("%d costs listed as no price, want 1", n)
		}
	})
	p.t = t
	p.checkClean()
}

// pgHash goes to a route of the playground in the page, as a link does.
func pgHash(hash string) chromedp.Action[chromedp.Void] {
	b, _ := json.Marshal(hash)
	return chromedp.Evaluate[chromedp.Void]("location.hash = " + string(b))
}

// comesBefore says whether a is in list, and b after it.
func comesBefore(list []string, a, b string) bool {
	i, j := slices.Index(list, a), slices.Index(list, b)
	return i >= 0 && j > i
}

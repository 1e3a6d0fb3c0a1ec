package host_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/pgtest"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/model/openai"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/postgres"
)

// usageHost is a started host of sessionTools whose model is a fake
// named name (priced or not), with a MaxTokens of 100 unless opts say.
func usageHost(t *testing.T, provider, name string, opts host.Options, script ...fakemodel.Reply) *sessionBundle {
	t.Helper()
	if opts.MaxTokens == 0 {
		opts.MaxTokens = 100
	}
	return modelBundle(t, model.Config{Provider: provider, Name: name}, sessionTools(t), opts, script...)
}

func weatherCall(id string) fakemodel.Reply {
	return fakemodel.Reply{Calls: []fakemodel.Call{{ID: id, Name: "weather", Input: `{"city":"Oslo"}`}}}
}

func decodeAll[T api.Payload](t *testing.T, evs []api.Event) []T {
	t.Helper()
	var out []T
	var zero T
	for _, e := range find(evs, zero.EventKind()) {
		p, err := api.Decode[T](e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// Every model call's usage is on the stream as its provider reported it,
// priced by hand-checkable arithmetic; the turn's and the session's totals
// are the exact sums, on both wires.
func TestUsageAndCost(t *testing.T) {
	for _, provider := range []string{"anthropic", "openai"} {
		t.Run(provider, func(t *testing.T) {
			first, second := weatherCall("c1"), fakemodel.Reply{Text: []string{"Clear."}}
			first.Usage = &fakemodel.Usage{Input: 1200, CacheRead: 3000, CacheWrite: 400, Output: 80}
			second.Usage = &fakemodel.Usage{Input: 1300, CacheRead: 3400, Output: 20, Reasoning: 5}
			name := map[string]string{"anthropic": "claude-sonnet-4-5-20250929", "openai": "gpt-4o"}[provider]
			if provider == "openai" {
				first.Usage.CacheWrite = 0 // OpenAI reports none
			}
			b := usageHost(t, provider, name, host.Options{}, first, second)
			ctx := context.Background()
			sess, turnID, err := b.host.Sessions().Create(ctx, host.SessionOptions{Message: "Weather in Oslo?", Principal: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			evs := b.waitTurn(t, sess.ID, turnID)
			calls := decodeAll[api.ModelUsage](t, evs)
			if len(calls) != 2 {
				t.Fatalf("model.usage events: %d in %s", len(calls), kinds(evs))
			}
			c := calls[0]
			if c.InputTokens != 1200 || c.CacheReadTokens != 3000 || c.OutputTokens != 80 || c.Provider != provider || !c.Reported || c.CostMicroUsd == nil {
				t.Errorf("first call's usage: %+v", c)
			}
			// By hand. Anthropic (claude-sonnet-4-5: $3 in, $15 out, $0.30
			// cache read, $3.75 cache write per million):
			//   1200×3 + 80×15 + 3000×0.30 + 400×3.75 = 3600+1200+900+1500 = 7200 µ$
			//   1300×3 + 20×15 + 3400×0.30            = 3900+300+1020      = 5220 µ$
			// OpenAI (gpt-4o: $2.50 in, $10 out, $1.25 cached):
			//   1200×2.5 + 80×10 + 3000×1.25 = 3000+800+3750 = 7550 µ$
			//   1300×2.5 + 20×10 + 3400×1.25 = 3250+200+4250 = 7700 µ$
			want := map[string][2]int64{"anthropic": {7200, 5220}, "openai": {7550, 7700}}[provider]
			for i, c := range calls {
				if c.CostMicroUsd == nil || *c.CostMicroUsd != want[i] {
					t.Errorf("call %d costs %v µ$, want %d", i+1, c.CostMicroUsd, want[i])
				}
			}
			done, err := api.Decode[api.TurnCompleted](evs[len(evs)-1])
			if err != nil || done.Usage == nil {
				t.Fatalf("turn.completed: %+v %v", done, err)
			}
			u := *done.Usage
			if u.ModelCalls != 2 || u.InputTokens != 2500 || u.OutputTokens != 100 || u.CacheReadTokens != 6400 || u.ReasoningTokens != 5 ||
				u.CostMicroUsd == nil || *u.CostMicroUsd != want[0]+want[1] || u.CostUsd == nil || *u.CostUsd != float64(want[0]+want[1])/1e6 {
				t.Errorf("turn usage: %s", mustJSON(u))
			}
			got, err := b.host.Sessions().Get(ctx, sess.ID)
			if err != nil || got.Usage == nil || string(mustJSON(*got.Usage)) != string(mustJSON(u)) {
				t.Errorf("session usage %v (%v), want the turn's %s", got.Usage, err, mustJSON(u))
			}
			rep, err := b.host.Usage(ctx, host.UsageQuery{By: store.UsageByPrincipal})
			if err != nil || len(rep.Groups) != 1 || rep.Groups[0].Key != "alice" || rep.Groups[0].Usage.ModelCalls != 2 || rep.Total.ModelCalls != 2 {
				t.Errorf("usage by principal: %s %v", mustJSON(rep), err)
			}
		})
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// A model without a price has its usage recorded and no cost: null, not $0.
func TestUnpricedModel(t *testing.T) {
	b := usageHost(t, "openai", "llama3.2", host.Options{}, fakemodel.Reply{Text: []string{"hi"}, Usage: &fakemodel.Usage{Input: 10, Output: 2}})
	ctx := context.Background()
	sess, turnID, err := b.host.Sessions().Create(ctx, host.SessionOptions{Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	evs := b.waitTurn(t, sess.ID, turnID)
	calls := decodeAll[api.ModelUsage](t, evs)
	if len(calls) != 1 || calls[0].InputTokens != 10 || calls[0].CostMicroUsd != nil {
		t.Fatalf("usage of an unpriced model: %+v", calls)
	}
	if !strings.Contains(string(find(evs, api.KindModelUsage)[0].Data), `"costMicroUsd":null`) {
		t.Errorf("the cost is not null on the wire: %s", find(evs, api.KindModelUsage)[0].Data)
	}
	got, _ := b.host.Sessions().Get(ctx, sess.ID)
	if got.Usage == nil || got.Usage.CostUsd != nil || got.Usage.InputTokens != 10 {
		t.Errorf("session usage: %s", mustJSON(got.Usage))
	}
	p, _ := openai.New(model.Config{Name: "llama3.2", APIKey: "k", BaseURL: b.fake.OpenAIURL()})
	if _, err := host.New(sessionTools(t), &host.Options{StateRoot: t.TempDir(), Model: p, ModelConfig: model.Config{Name: "llama3.2"},
		Limits: host.UsageLimits{Session: host.UsageLimit{Cost: 1_000_000}}}); err == nil || !strings.Contains(err.Error(), "pricing:") {
		t.Errorf("a dollar limit on an unpriced model: %v, want an error naming pricing:", err)
	}
}

// agent.yaml's pricing: prices a model the shipped table lacks, and
// overrides one it has.
func TestPricesOverride(t *testing.T) {
	opts := host.Options{Prices: model.Prices{"llama3.2": {Input: 1_000_000, Output: 2_000_000}}}
	b := usageHost(t, "openai", "llama3.2", opts, fakemodel.Reply{Text: []string{"hi"}, Usage: &fakemodel.Usage{Input: 1000, Output: 500}})
	sess, turnID, err := b.host.Sessions().Create(context.Background(), host.SessionOptions{Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	calls := decodeAll[api.ModelUsage](t, b.waitTurn(t, sess.ID, turnID))
	// 1000 × $1/M + 500 × $2/M = $0.002.
	if len(calls) != 1 || calls[0].CostMicroUsd == nil || *calls[0].CostMicroUsd != 2000 {
		t.Errorf("usage priced from pricing:: %+v", calls)
	}
}

// Each call of the budget tests: 1000 tokens in at $3/M, 100 out at $15/M
// (claude-sonnet-4-5): $0.0045; a limit of $0.01 lets two calls through
// (the third would pass it with its estimate) — the third asks.
var budgetCall = fakemodel.Usage{Input: 1000, Output: 100}

func budgetScript(n int, final string) []fakemodel.Reply {
	var script []fakemodel.Reply
	for i := range n {
		r := weatherCall("c" + string(rune('1'+i)))
		r.Usage = &budgetCall
		script = append(script, r)
	}
	r := fakemodel.Reply{Text: []string{final}, Usage: &budgetCall}
	return append(script, r)
}

func TestBudgetFails(t *testing.T) {
	opts := host.Options{Limits: host.UsageLimits{Session: host.UsageLimit{Cost: 10_000}}}
	b := usageHost(t, "anthropic", "claude-sonnet-4-5", opts, budgetScript(3, "done")...)
	sess, turnID, err := b.host.Sessions().Create(context.Background(), host.SessionOptions{Message: "go"})
	if err != nil {
		t.Fatal(err)
	}
	evs := b.waitTurn(t, sess.ID, turnID)
	failed, err := api.Decode[api.TurnFailed](evs[len(evs)-1])
	if err != nil || failed.Code != api.FailureBudgetExceeded || !strings.Contains(failed.Reason, "the session's usage limit of $0.01 reached: $0.009 spent") {
		t.Fatalf("the turn's end: %+v %v (%s)", failed, err, kinds(evs))
	}
	if failed.Usage == nil || failed.Usage.ModelCalls != 2 || *failed.Usage.CostMicroUsd != 9000 {
		t.Errorf("the failed turn's usage: %s", mustJSON(failed.Usage))
	}
	if n := len(b.fake.Requests()); n != 2 {
		t.Errorf("the model was called %d times, want 2: the third call is refused before it is made", n)
	}
}

// With onExceed: approve the turn parks as an approval of
// raise_usage_limit; approving raises the limit and the turn goes on,
// denying ends it with budget_exceeded.
func TestBudgetApproval(t *testing.T) {
	for _, approve := range []bool{true, false} {
		name := map[bool]string{true: "approved", false: "denied"}[approve]
		t.Run(name, func(t *testing.T) {
			opts := host.Options{Limits: host.UsageLimits{Session: host.UsageLimit{Cost: 10_000}, OnExceed: host.LimitApprove}}
			b := usageHost(t, "anthropic", "claude-sonnet-4-5", opts, budgetScript(2, "all done")...)
			ctx := context.Background()
			sess, turnID, err := b.host.Sessions().Create(ctx, host.SessionOptions{Message: "go", Principal: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			evs := waitKind(t, b.host, sess.ID, api.KindApprovalRequested)
			req := decodeAll[api.ApprovalRequested](t, evs)[0]
			var in host.RaiseInput
			json.Unmarshal(req.Input, &in)
			if req.Tool != "raise_usage_limit" || in.Scope != "session" || in.Question != "session over $0.01 (spent $0.009): continue for another $0.01?" {
				t.Errorf("the request: %s %+v", req.Tool, in)
			}
			if n := len(b.fake.Requests()); n != 2 {
				t.Errorf("%d model calls before the decision, want 2", n)
			}
			if _, err := b.host.Approvals().Resolve(ctx, req.CallID, host.Decision{Approved: approve, By: "bob", Reason: "ok"}); err != nil {
				t.Fatal(err)
			}
			evs = b.waitTurn(t, sess.ID, turnID)
			end := evs[len(evs)-1]
			if approve {
				done, err := api.Decode[api.TurnCompleted](end)
				if err != nil || done.Usage == nil || done.Usage.ModelCalls != 3 || *done.Usage.CostMicroUsd != 13_500 {
					t.Fatalf("after approving: %s %s", end.Kind, end.Data)
				}
				if m := decodeAll[api.Message](t, evs); m[len(m)-1].Text != "all done" {
					t.Errorf("the answer after the raise: %+v", m[len(m)-1])
				}
				return
			}
			failed, err := api.Decode[api.TurnFailed](end)
			if err != nil || failed.Code != api.FailureBudgetExceeded || !strings.Contains(failed.Reason, "raising it was denied by bob: ok") {
				t.Fatalf("after denying: %s %s", end.Kind, end.Data)
			}
			if n := len(b.fake.Requests()); n != 2 {
				t.Errorf("%d model calls after the denial, want 2", n)
			}
		})
	}
}

func waitKind(t *testing.T, h *host.Host, sessionID string, kind api.Kind) []api.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var evs []api.Event
	for e, err := range h.Sessions().Follow(ctx, sessionID, 0) {
		if err != nil {
			t.Fatalf("waiting for %s: %v; events: %s", kind, err, kinds(evs))
		}
		evs = append(evs, e)
		if e.Kind == kind {
			return evs
		}
	}
	t.Fatalf("no %s: %s", kind, kinds(evs))
	return nil
}

// Two sessions of one principal race its daily budget — on one host over
// SQLite, and on two hosts sharing PostgreSQL: what they spend passes the
// limit by no more than one call.
func TestBudgetRace(t *testing.T) {
	const limit = 40_000 // $0.04: about eight calls of $0.0045
	opts := host.Options{Limits: host.UsageLimits{PrincipalDaily: host.UsageLimit{Cost: limit}}, ToolConcurrency: 1}
	forever := weatherCall("c")
	forever.Usage = &budgetCall
	t.Run("sqlite", func(t *testing.T) {
		b := usageHost(t, "anthropic", "claude-sonnet-4-5", opts)
		b.fake.SetDefault(forever) // the model calls tools forever: only the budget stops it
		raceBudget(t, limit, b.host, b.host)
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.Schema(t)
		fake := fakemodel.New()
		t.Cleanup(fake.Close)
		fake.SetDefault(forever)
		var hosts []*host.Host
		for range 2 {
			st, err := postgres.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			cfg := model.Config{Provider: "anthropic", Name: "claude-sonnet-4-5", APIKey: "k", BaseURL: fake.AnthropicURL()}
			p, _ := anthropic.New(cfg)
			o := opts
			o.StateRoot, o.Store, o.Model, o.ModelConfig, o.MaxTokens = t.TempDir(), st, p, cfg, 100
			h, err := host.New(sessionTools(t), &o)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { h.Close(); st.Close() })
			hosts = append(hosts, h)
		}
		raceBudget(t, limit, hosts[0], hosts[1])
	})
}

func raceBudget(t *testing.T, limit int64, a, b *host.Host) {
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, h := range []*host.Host{a, b} {
		wg.Go(func() {
			sess, turnID, err := h.Sessions().Create(ctx, host.SessionOptions{Message: "go", Principal: "carol"})
			if err != nil {
				t.Error(err)
				return
			}
			bundle := &sessionBundle{host: h}
			evs := bundle.waitTurn(t, sess.ID, turnID)
			if f, _ := api.Decode[api.TurnFailed](evs[len(evs)-1]); f.Code != api.FailureBudgetExceeded {
				t.Errorf("a racing turn ended %s %s, want budget_exceeded", evs[len(evs)-1].Kind, evs[len(evs)-1].Data)
			}
		})
	}
	wg.Wait()
	rep, err := a.Usage(ctx, host.UsageQuery{By: store.UsageByPrincipal})
	if err != nil || len(rep.Groups) != 1 {
		t.Fatalf("%s %v", mustJSON(rep), err)
	}
	spent := *rep.Groups[0].Usage.CostMicroUsd
	if spent > limit+4_500 || spent < limit-2*4_500-2*1_600 {
		t.Errorf("carol spent %d µ$ in %d calls against a limit of %d: want at most one call over", spent, rep.Groups[0].Usage.ModelCalls, limit)
	}
	t.Logf("spent %d µ$ in %d calls against %d", spent, rep.Groups[0].Usage.ModelCalls, limit)
}

// Every reason a model call fails by is a failure code of turn.failed, and
// every failure code is in the table README's is made from.
func TestFailureCodes(t *testing.T) {
	listed := map[api.FailureCode]bool{}
	for _, f := range api.FailureCodes {
		if listed[f.Code] || f.Meaning == "" {
			t.Errorf("%s: listed twice or without a meaning", f.Code)
		}
		listed[f.Code] = true
	}
	for _, r := range []model.Reason{model.ReasonRateLimited, model.ReasonOverloaded, model.ReasonContextLength, model.ReasonAuth,
		model.ReasonInvalidRequest, model.ReasonTimeout, model.ReasonProvider} {
		if !listed[api.FailureCode(r)] {
			t.Errorf("model.Reason %q is no failure code", r)
		}
	}
	if len(listed) != 15 {
		t.Errorf("%d failure codes listed; a new one needs its row", len(listed))
	}
}

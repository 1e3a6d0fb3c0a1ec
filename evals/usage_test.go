package evals_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/store"
)

// usageOf is the usage a test expects: the tokens, and the cost in
// micro-dollars (nil: no price).
func usageOf(calls, in, out, cacheRead, cacheWrite int64, cost *int64) api.Usage {
	u := api.Usage{ModelCalls: calls, InputTokens: in, OutputTokens: out, CacheReadTokens: cacheRead, CacheWriteTokens: cacheWrite}
	store.SetCost(&u, cost)
	return u
}

func micros(n int64) *int64 { return &n }

func sameUsage(a, b *api.Usage) bool {
	switch {
	case a == nil || b == nil:
		return a == b
	case (a.CostMicroUsd == nil) != (b.CostMicroUsd == nil), (a.CostUsd == nil) != (b.CostUsd == nil):
		return false
	case a.CostMicroUsd != nil && (*a.CostMicroUsd != *b.CostMicroUsd || *a.CostUsd != *b.CostUsd):
		return false
	}
	x, y := *a, *b
	x.CostMicroUsd, x.CostUsd, y.CostMicroUsd, y.CostUsd = nil, nil, nil, nil
	return x == y
}

func showUsage(u *api.Usage) string {
	if u == nil {
		return "nil"
	}
	cost := "null"
	if u.CostMicroUsd != nil {
		cost = model.Micros(*u.CostMicroUsd).String()
	}
	x := *u
	x.CostMicroUsd, x.CostUsd = nil, nil
	return fmt.Sprintf("%s %+v", cost, x)
}

// A batch read back carries each case's usage — its session's model
// calls, as the model reported them, priced with the host's table — and
// the batch's total, in Get and in the listing; on a host whose model has
// no price the costs are null, never $0.
func TestEvalUsage(t *testing.T) {
	// $3, $15, $0.30 and $3.75 per million input, output, cache-read and
	// cache-write tokens.
	price := model.Price{Input: 3_000_000, Output: 15_000_000, CacheRead: 300_000, CacheWrite: 3_750_000}
	call := fakemodel.Usage{Input: 1000, Output: 500, CacheRead: 2000, CacheWrite: 100} // 3000+7500+600+375 = 11,475 µ$
	for _, driver := range drivers {
		for _, priced := range []bool{true, false} {
			name := driver + "/priced"
			if !priced {
				name = driver + "/unpriced"
			}
			t.Run(name, func(t *testing.T) {
				m := newEvalModel(t)
				m.Route("[paris]",
					fakemodel.Reply{Text: []string{"Let me look."}, Calls: []fakemodel.Call{{ID: "c1", Name: "lookup", Input: `{"city":"Paris"}`}}, Usage: &call},
					fakemodel.Reply{Text: []string{"Sunny."}, Usage: &call})
				m.Route("[lima]", fakemodel.Reply{Text: []string{"Cloudy."}, Usage: &fakemodel.Usage{Input: 10, Output: 2}}) // 30+30 = 60 µ$
				opts := host.Options{}
				if priced {
					opts.Prices = model.Prices{"fake": price}
				}
				h := evalHost(t, openStore(t, driver), evalTools(t), m, opts)
				ctx := context.Background()
				started, err := h.RunEval(ctx, api.EvalRunRequest{Name: "usage", Cases: []api.EvalCase{
					{Name: "paris", Message: "[paris] Weather in Paris?"},
					{Name: "lima", Message: "[lima] Weather in Lima?"},
				}}, "tester")
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range started.Cases {
					if c.Usage != nil {
						t.Errorf("a queued case has usage: %+v", c)
					}
				}
				b := waitEval(t, h, started.ID)
				cost := func(n int64) *int64 {
					if !priced {
						return nil
					}
					return micros(n)
				}
				want := []api.Usage{usageOf(2, 2000, 1000, 4000, 200, cost(22_950)), usageOf(1, 10, 2, 0, 0, cost(60))}
				for i, c := range b.Cases {
					if !sameUsage(c.Usage, &want[i]) {
						t.Errorf("case %s's usage: %s, want %s", c.Case.Name, showUsage(c.Usage), showUsage(&want[i]))
					}
				}
				total := usageOf(3, 2010, 1002, 4000, 200, cost(23_010))
				if !sameUsage(b.Usage, &total) {
					t.Errorf("the batch's usage: %s, want %s", showUsage(b.Usage), showUsage(&total))
				}
				if priced && *b.Usage.CostUsd != 0.02301 {
					t.Errorf("the batch's cost in dollars: %v", *b.Usage.CostUsd)
				}
				list, _, err := h.ListEvals(ctx, store.Page{Limit: 10})
				if err != nil || len(list) != 1 || list[0].Cases != nil || !sameUsage(list[0].Usage, &total) {
					t.Errorf("listed: %+v %v", list, err)
				}
			})
		}
	}
}

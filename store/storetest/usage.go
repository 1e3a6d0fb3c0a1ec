package storetest

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

func cost(n int64) *int64 { return &n }

func usageEvent(model string, in, out, cacheRead, cacheWrite, reasoning int64, micros *int64) api.Event {
	return ev(api.KindModelUsage, api.ModelUsage{Provider: "anthropic", Model: model, InputTokens: in, OutputTokens: out,
		CacheReadTokens: cacheRead, CacheWriteTokens: cacheWrite, ReasoningTokens: reasoning, CostMicroUsd: micros, Reported: true})
}

// Every model.usage event appended is a model call of the usage totals,
// whichever way it was appended (Append, AppendTurn, EndTurn), summed
// exactly, with a null cost once a call had none.
func testUsage(t *testing.T, s store.Store) {
	if u, err := s.UsageTotals(ctx, store.UsageFilter{SessionID: "none"}); err != nil || u.ModelCalls != 0 || u.CostMicroUsd == nil || *u.CostMicroUsd != 0 {
		t.Fatalf("usage of nothing = %+v, %v; want no calls at $0", u, err)
	}
	if _, err := s.CreateSession(ctx, api.Session{ID: "u1", Channel: "slack", Mode: api.ModeLocal, Principal: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSession(ctx, api.Session{ID: "u2", Channel: "http", Mode: api.ModeLocal, Principal: "bob"}); err != nil {
		t.Fatal(err)
	}
	h := hold(t, s, "u1", "t1", store.Lease{Holder: "h", TTL: time.Minute})
	first := usageEvent("claude-sonnet-4-5", 100, 20, 1000, 50, 0, cost(1_500))
	first.TurnID = "t1"
	if _, err := s.AppendTurn(ctx, h.Fence, ev(api.KindMessage, api.Message{Role: "assistant", Text: "hi"}), first); err != nil {
		t.Fatal(err)
	}
	if _, err := endTurn(s, "u1", "t1", api.TurnStatusCompleted, "", usageEvent("claude-sonnet-4-5", 10, 2, 0, 0, 0, cost(60))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "u2", usageEvent("gpt-4o", 7, 3, 0, 0, 1, cost(40)), usageEvent("llama3", 5, 5, 0, 0, 0, nil)); err != nil {
		t.Fatal(err)
	}
	want := api.Usage{ModelCalls: 2, InputTokens: 110, OutputTokens: 22, CacheReadTokens: 1000, CacheWriteTokens: 50}
	store.SetCost(&want, cost(1_560))
	if got, err := s.UsageTotals(ctx, store.UsageFilter{SessionID: "u1"}); err != nil || !sameUsage(got, want) {
		t.Errorf("session u1's usage = %s, %v; want %s", show(got), err, show(want))
	}
	if got, _ := s.UsageTotals(ctx, store.UsageFilter{SessionID: "u1", TurnID: "t1"}); !sameUsage(got, want) {
		// Both calls are the turn's: the one appended with its end too.
		t.Errorf("turn t1's usage = %s, want %s", show(got), show(want))
	}
	bob, _ := s.UsageTotals(ctx, store.UsageFilter{Principal: "bob"})
	if bob.ModelCalls != 2 || bob.InputTokens != 12 || bob.ReasoningTokens != 1 || bob.CostMicroUsd != nil || bob.CostUsd != nil {
		t.Errorf("bob's usage = %s: want 2 calls and a null cost (llama3 has no price)", show(bob))
	}
	if got, _ := s.UsageTotals(ctx, store.UsageFilter{Principal: "alice", Since: time.Now().Add(time.Hour)}); got.ModelCalls != 0 {
		t.Errorf("alice's usage since an hour from now = %s", show(got))
	}

	all := store.UsageReportParams{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour)}
	for by, keys := range map[store.UsageGrouping][]string{
		store.UsageByPrincipal: {"alice", "bob"},
		store.UsageByChannel:   {"slack", "http"},
		store.UsageByModel:     {"claude-sonnet-4-5", "gpt-4o", "llama3"},
		store.UsageBySession:   {"u1", "u2"},
		store.UsageTotal:       {""},
	} {
		p := all
		p.By = by
		groups, err := s.UsageReport(ctx, p)
		if err != nil {
			t.Fatalf("report by %q: %v", by, err)
		}
		var got []string
		var calls int64
		for _, g := range groups {
			got = append(got, g.Key)
			calls += g.Usage.ModelCalls
		}
		if !slices.Equal(got, keys) || calls != 4 {
			t.Errorf("report by %q: keys %q (%d calls), want %q (4), the costliest first", by, got, calls, keys)
		}
	}
	p := all
	p.By, p.Sessions = store.UsageBySession, []string{"u2"}
	if groups, _ := s.UsageReport(ctx, p); len(groups) != 1 || groups[0].Key != "u2" {
		t.Errorf("report of session u2 only: %+v", groups)
	}
	p = all
	p.From, p.By = time.Now().Add(time.Minute), store.UsageTotal
	if groups, _ := s.UsageReport(ctx, p); len(groups) != 0 {
		t.Errorf("report of a time without calls: %+v", groups)
	}
	p.By = "nonsense"
	if _, err := s.UsageReport(ctx, p); err == nil {
		t.Error("a report by an unknown grouping is no error")
	}
}

func sameUsage(a, b api.Usage) bool {
	return show(a) == show(b)
}

func show(u api.Usage) string { return string(mustJSON(u)) }

// Reservations: Admit sees what was spent and reserved, per turn, session
// and principal since a time; an error from it reserves nothing; released
// and expired reservations count no more; racing reservations of one
// principal see each other.
func testUsageReservations(t *testing.T, s store.Store) {
	for _, id := range []string{"r1", "r2"} {
		if _, err := s.CreateSession(ctx, api.Session{ID: id, Channel: "http", Mode: api.ModeLocal, Principal: "carol"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Append(ctx, "r1", usageEvent("m", 100, 0, 0, 0, 0, cost(1000))); err != nil {
		t.Fatal(err)
	}
	reserve := func(id, sess, turn string, amount store.Spend, admit func(store.Spent) error) error {
		return s.ReserveUsage(ctx, store.ReserveUsageParams{ID: id, SessionID: sess, TurnID: turn, Principal: "carol",
			Since: time.Now().Add(-time.Hour), Amount: amount, Expires: time.Now().Add(time.Minute), Admit: admit})
	}
	var seen store.Spent
	look := func(sp store.Spent) error { seen = sp; return nil }
	if err := reserve("a", "r1", "t1", store.Spend{Tokens: 50, Micros: 500}, look); err != nil {
		t.Fatal(err)
	}
	if (seen != store.Spent{Session: store.Spend{Tokens: 100, Micros: 1000}, Principal: store.Spend{Tokens: 100, Micros: 1000}}) {
		t.Errorf("the first reservation saw %+v", seen)
	}
	if err := reserve("b", "r1", "t1", store.Spend{Tokens: 1, Micros: 1}, look); err != nil {
		t.Fatal(err)
	}
	if (seen != store.Spent{Turn: store.Spend{Tokens: 50, Micros: 500}, Session: store.Spend{Tokens: 150, Micros: 1500}, Principal: store.Spend{Tokens: 150, Micros: 1500}}) {
		t.Errorf("the second reservation saw %+v: want the first one's counted", seen)
	}
	refused := errors.New("over")
	if err := reserve("c", "r2", "t2", store.Spend{Tokens: 1000}, func(store.Spent) error { return refused }); !errors.Is(err, refused) {
		t.Errorf("a refused reservation: %v, want Admit's error", err)
	}
	for _, id := range []string{"a", "b", "unknown"} {
		if err := s.ReleaseUsage(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := reserve("d", "r2", "t2", store.Spend{}, look); err != nil {
		t.Fatal(err)
	}
	if (seen != store.Spent{Principal: store.Spend{Tokens: 100, Micros: 1000}}) {
		t.Errorf("after the releases (and a refused reservation) saw %+v: want only the call", seen)
	}
	if err := s.ReserveUsage(ctx, store.ReserveUsageParams{ID: "old", SessionID: "r2", TurnID: "t2", Principal: "carol",
		Amount: store.Spend{Tokens: 7}, Expires: time.Now().Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := reserve("e", "r2", "t2", store.Spend{}, look); err != nil {
		t.Fatal(err)
	}
	if seen.Turn.Tokens != 0 {
		t.Errorf("an expired reservation still counts: %+v", seen)
	}

	// Ten reservations race one budget of 5 tokens a call under 25: five
	// get through.
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for i := range 10 {
		wg.Go(func() {
			err := reserve("race"+string(rune('0'+i)), "r2", "race", store.Spend{Tokens: 5}, func(sp store.Spent) error {
				if sp.Turn.Tokens+5 > 25 {
					return refused
				}
				return nil
			})
			if err == nil {
				mu.Lock()
				admitted++
				mu.Unlock()
			} else if !errors.Is(err, refused) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if admitted != 5 {
		t.Errorf("%d of 10 racing reservations were admitted under a budget for 5", admitted)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

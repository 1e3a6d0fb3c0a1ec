package model_test

import (
	"testing"

	"github.com/agentsdk/agentsdk/model"
)

// Costs computed by hand from the providers' price lists.
func TestCostByHand(t *testing.T) {
	prices := model.DefaultPrices()
	cases := []struct {
		model string
		u     model.Usage
		want  model.Micros
	}{
		// 1,000 in × $3/M = $0.003; 500 out × $15/M = $0.0075;
		// 2,000 cache read × $0.30/M = $0.0006; 100 write × $3.75/M =
		// $0.000375: $0.011475.
		{"claude-sonnet-4-5-20250929", model.Usage{InputTokens: 1000, OutputTokens: 500, CacheReadTokens: 2000, CacheWriteTokens: 100}, 11_475},
		// 1M in × $2.50 + 1M out × $10 + 1M cached × $1.25 = $13.75.
		{"gpt-4o", model.Usage{InputTokens: 1e6, OutputTokens: 1e6, CacheReadTokens: 1e6}, 13_750_000},
		// 7 in × $0.15/M = 1.05 µ$; 3 out × $0.60/M = 1.8 µ$: 2.85 → 3.
		{"gpt-4o-mini", model.Usage{InputTokens: 7, OutputTokens: 3}, 3},
		// 10,000 in × $0.30/M = $0.003; 2,000 out (500 reasoning among
		// them) × $2.50/M = $0.005: $0.008.
		{"gemini-2.5-flash", model.Usage{InputTokens: 10_000, OutputTokens: 2000, ReasoningTokens: 500}, 8_000},
		// 1 in × $0.05/M = 0.05 µ$: rounds to 0.
		{"gpt-5-nano", model.Usage{InputTokens: 1}, 0},
	}
	for _, c := range cases {
		p, ok := prices.Lookup(c.model)
		if !ok {
			t.Fatalf("%s has no price", c.model)
		}
		if got := p.Cost(c.u); got != c.want {
			t.Errorf("%s %+v: %d µ$ (%s), want %d", c.model, c.u, got, got, c.want)
		}
	}
}

func TestPriceLookup(t *testing.T) {
	prices := model.DefaultPrices()
	for name, want := range map[string]string{
		"claude-sonnet-4-5":          "claude-sonnet-4-5",
		"claude-sonnet-4-5-20250929": "claude-sonnet-4-5",
		"claude-3-5-haiku-latest":    "claude-3-5-haiku",
		"gpt-4o-2024-08-06":          "gpt-4o",
		"gpt-4o-mini-2024-07-18":     "gpt-4o-mini",
		"gpt-4.1-mini":               "gpt-4.1-mini",
	} {
		got, ok := prices.Lookup(name)
		if !ok || got != prices[want] {
			t.Errorf("Lookup(%q) = %+v, %v; want %s's", name, got, ok, want)
		}
	}
	for _, name := range []string{"gpt-4o-audio-preview", "llama3.2", "claude-sonnet-4-5x", "claude-sonnet-4-6", "gemini-2.5-flash-image", ""} {
		if p, ok := prices.Lookup(name); ok {
			t.Errorf("Lookup(%q) = %+v: an unknown model has no price", name, p)
		}
	}
}

func TestDollars(t *testing.T) {
	for s, want := range map[string]model.Micros{"5": 5_000_000, "0.25": 250_000, "$1.50": 1_500_000, "0.000125": 125, "0": 0} {
		got, err := model.ParseDollars(s)
		if err != nil || got != want {
			t.Errorf("ParseDollars(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "-1", "1e3", "abc", "0.0000001", "1/3", "99999999999999999999"} {
		if got, err := model.ParseDollars(s); err == nil {
			t.Errorf("ParseDollars(%q) = %d, want an error", s, got)
		}
	}
	for m, want := range map[model.Micros]string{5_000_000: "$5.00", 11_475: "$0.011475", 1: "$0.000001", 1_230_000: "$1.23", -250_000: "-$0.25"} {
		if got := m.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int64(m), got, want)
		}
	}
}

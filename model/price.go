package model

import (
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Micros is an amount of US dollars in millionths: costs are kept and
// summed as integers, never as floats.
type Micros int64

// Dollars returns m in dollars, for showing (never for summing).
func (m Micros) Dollars() float64 { return float64(m) / 1e6 }

// String shows m in dollars: "$0.012345", "$5.00".
func (m Micros) String() string {
	sign := ""
	if m < 0 {
		sign, m = "-", -m
	}
	whole, frac := int64(m)/1e6, int64(m)%1e6
	s := strings.TrimRight(fmt.Sprintf("%06d", frac), "0")
	if len(s) < 2 {
		s += strings.Repeat("0", 2-len(s))
	}
	return fmt.Sprintf("%s$%d.%s", sign, whole, s)
}

// ParseDollars reads a decimal amount of dollars ("5", "0.25", "$1.50",
// "0.000125") exactly, to the micro-dollar: more decimals than six are an
// error rather than rounded away.
func ParseDollars(s string) (Micros, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "$")
	r, ok := new(big.Rat).SetString(t)
	if !ok || r.Sign() < 0 || strings.ContainsAny(t, "eE/") {
		return 0, fmt.Errorf("%q is not an amount of dollars (write it as 5 or 0.25)", s)
	}
	r.Mul(r, big.NewRat(1e6, 1))
	if !r.IsInt() {
		return 0, fmt.Errorf("%q has more decimals than a millionth of a dollar", s)
	}
	if !r.Num().IsInt64() {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return Micros(r.Num().Int64()), nil
}

// Price is what a model charges, in micro-dollars per million tokens, for
// each kind of token of [Usage]: $3 per million input tokens is an Input
// of 3_000_000.
type Price struct {
	Input      Micros
	Output     Micros
	CacheRead  Micros
	CacheWrite Micros
}

// Cost is what u costs at p, in micro-dollars, rounded half up once, at
// the end.
func (p Price) Cost(u Usage) Micros {
	n := u.InputTokens*int64(p.Input) + u.OutputTokens*int64(p.Output) +
		u.CacheReadTokens*int64(p.CacheRead) + u.CacheWriteTokens*int64(p.CacheWrite)
	return Micros((n + 500_000) / 1_000_000)
}

// CostOf is what u costs at the price of the first of names the table
// has; false when it has none of them.
func (ps Prices) CostOf(u Usage, names ...string) (Micros, bool) {
	for _, name := range names {
		if p, ok := ps.Lookup(name); ok {
			return p.Cost(u), true
		}
	}
	return 0, false
}

// Prices is a price table by model name. A name finds its own entry, or
// the entry it extends with a snapshot's date or number
// ("claude-sonnet-4-5-20250929" finds "claude-sonnet-4-5",
// "gpt-4o-2024-08-06" finds "gpt-4o"); "gpt-4o-mini" and
// "claude-sonnet-4-6" are other models, and do not find "gpt-4o" or
// "claude-sonnet-4".
type Prices map[string]Price

// Lookup finds name's price.
func (ps Prices) Lookup(name string) (Price, bool) { return lookup(ps, name) }

// lookup finds name in a table of models: itself, or the longest entry
// of which it names a snapshot.
func lookup[V any](table map[string]V, name string) (V, bool) {
	if v, ok := table[name]; ok {
		return v, true
	}
	best := ""
	for k := range table {
		rest, ok := strings.CutPrefix(name, k+"-")
		if ok && len(k) > len(best) && versionSuffix(rest) {
			best = k
		}
	}
	if best == "" {
		var zero V
		return zero, false
	}
	return table[best], true
}

// versionSuffix reports whether s, what follows a known model's name, only
// names a snapshot of it: a date or a build number ("20250929",
// "2024-08-06", "001"), or "latest" — not another model ("4-5", "mini").
func versionSuffix(s string) bool {
	if s == "latest" {
		return true
	}
	digits := 0
	for digits < len(s) && unicode.IsDigit(rune(s[digits])) {
		digits++
	}
	return digits >= 3 && strings.Trim(s, "0123456789-") == ""
}

// With returns the table with more's entries added, replacing those of the
// same name.
func (ps Prices) With(more Prices) Prices {
	out := make(Prices, len(ps)+len(more))
	for k, v := range ps {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// Names lists the table's models, sorted.
func (ps Prices) Names() []string {
	names := make([]string, 0, len(ps))
	for k := range ps {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// PricesTaken is the date the shipped prices ([DefaultPrices]) were taken
// from the providers' published price lists. Prices change: check yours,
// and override or add entries in agent.yaml (pricing:).
const PricesTaken = "2025-12-01"

// DefaultPrices returns the shipped price table: standard (not batch, not
// priority) prices of the current Anthropic, OpenAI and Gemini models, as
// of [PricesTaken], in dollars per million tokens. Anthropic's cache
// writes are its 5-minute ones (1.25 × input); OpenAI and Gemini charge no
// more for writing the cache than for input; Gemini 2.5 Pro is priced at
// its tier for prompts up to 200k tokens.
func DefaultPrices() Prices {
	return Prices{
		// Anthropic
		"claude-opus-4-5":   perMillion("5", "25", "0.50", "6.25"),
		"claude-opus-4-1":   perMillion("15", "75", "1.50", "18.75"),
		"claude-opus-4":     perMillion("15", "75", "1.50", "18.75"),
		"claude-sonnet-4-5": perMillion("3", "15", "0.30", "3.75"),
		"claude-sonnet-4":   perMillion("3", "15", "0.30", "3.75"),
		"claude-3-7-sonnet": perMillion("3", "15", "0.30", "3.75"),
		"claude-haiku-4-5":  perMillion("1", "5", "0.10", "1.25"),
		"claude-3-5-haiku":  perMillion("0.80", "4", "0.08", "1"),
		// OpenAI
		"gpt-5":        perMillion("1.25", "10", "0.125", "1.25"),
		"gpt-5-mini":   perMillion("0.25", "2", "0.025", "0.25"),
		"gpt-5-nano":   perMillion("0.05", "0.40", "0.005", "0.05"),
		"gpt-4.1":      perMillion("2", "8", "0.50", "2"),
		"gpt-4.1-mini": perMillion("0.40", "1.60", "0.10", "0.40"),
		"gpt-4.1-nano": perMillion("0.10", "0.40", "0.025", "0.10"),
		"gpt-4o":       perMillion("2.50", "10", "1.25", "2.50"),
		"gpt-4o-mini":  perMillion("0.15", "0.60", "0.075", "0.15"),
		"o3":           perMillion("2", "8", "0.50", "2"),
		"o4-mini":      perMillion("1.10", "4.40", "0.275", "1.10"),
		// Gemini
		"gemini-2.5-pro":        perMillion("1.25", "10", "0.31", "1.25"),
		"gemini-2.5-flash":      perMillion("0.30", "2.50", "0.075", "0.30"),
		"gemini-2.5-flash-lite": perMillion("0.10", "0.40", "0.025", "0.10"),
		"gemini-2.0-flash":      perMillion("0.10", "0.40", "0.025", "0.10"),
	}
}

// perMillion makes a Price from dollars per million tokens; the shipped
// table's figures are constants, checked by a test.
func perMillion(in, out, cacheRead, cacheWrite string) Price {
	m := func(s string) Micros {
		v, err := ParseDollars(s)
		if err != nil {
			panic(err)
		}
		return v
	}
	return Price{Input: m(in), Output: m(out), CacheRead: m(cacheRead), CacheWrite: m(cacheWrite)}
}

// FormatPerMillion shows a price per million tokens in dollars.
func FormatPerMillion(m Micros) string {
	return "$" + strconv.FormatFloat(m.Dollars(), 'f', -1, 64)
}

package agentconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/model"
)

func loadYAML(t *testing.T, text string) (Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(path)
}

func TestPricingAndLimits(t *testing.T) {
	c, err := loadYAML(t, `
pricing:
  my-model: {input: 3, output: 15, cacheRead: 0.30}
  local: {input: 0, output: 0}
limits:
  turn: {tokens: 200000}
  session: {usd: 5.25}
  principalDaily: {usd: "50", tokens: 1000000}
  onExceed: approve
`)
	if err != nil {
		t.Fatal(err)
	}
	prices, err := c.Prices()
	if err != nil {
		t.Fatal(err)
	}
	if want := (model.Price{Input: 3_000_000, Output: 15_000_000, CacheRead: 300_000, CacheWrite: 3_000_000}); prices["my-model"] != want {
		t.Errorf("my-model: %+v, want %+v (cacheWrite defaults to input)", prices["my-model"], want)
	}
	if p, ok := prices["local"]; !ok || p != (model.Price{}) {
		t.Errorf("local: %+v %v, want a price of $0", p, ok)
	}
	want := Limits{Turn: Limit{Tokens: 200000}, Session: Limit{USD: 5_250_000}, PrincipalDaily: Limit{Tokens: 1000000, USD: 50_000_000}, OnExceed: "approve"}
	if c.Limits != want {
		t.Errorf("limits %+v, want %+v", c.Limits, want)
	}
}

func TestPricingAndLimitsRefused(t *testing.T) {
	for text, want := range map[string]string{
		"pricing:\n  m: {input: 3}\n":                       "pricing.m: input and output are required",
		"pricing:\n  m: {input: 0.0000001, output: 1}\n":    "more decimals than a millionth",
		"pricing:\n  m: {input: [1], output: 1}\n":          "want an amount of dollars",
		"limits:\n  session: {usd: -1}\n":                   "not an amount of dollars",
		"limits:\n  turn: {tokens: -5}\n":                   "limits.turn cannot be negative",
		"limits:\n  onExceed: ask\n":                        `limits.onExceed "ask": want fail or approve`,
		"limits:\n  perSession: {usd: 1}\n":                 `unknown key "perSession" under limits (did you mean "session"?)`,
		"pricing:\n  m: {input: 1, output: 1, cached: 1}\n": `unknown key "cached" under pricing.m; the keys of pricing.m are: cacheRead, cacheWrite, input, output`,
	} {
		if _, err := loadYAML(t, text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", text, err, want)
		}
	}
}

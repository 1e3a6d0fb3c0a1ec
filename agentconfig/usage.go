package agentconfig

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentsdk/agentsdk/model"
)

// Price is a model's price in agent.yaml's pricing:, in dollars per
// million tokens (model.DefaultPrices has the shipped ones). CacheRead
// and CacheWrite default to Input.
//
//	pricing:
//	  my-finetune: {input: 3, output: 15, cacheRead: 0.30, cacheWrite: 3.75}
//	  llama3.2: {input: 0, output: 0}
type Price struct {
	Input      *Dollars `yaml:"input"`
	Output     *Dollars `yaml:"output"`
	CacheRead  *Dollars `yaml:"cacheRead"`
	CacheWrite *Dollars `yaml:"cacheWrite"`
}

// Dollars is an amount in dollars, read exactly to the micro-dollar
// ("0.30" is 300,000 micro-dollars, never a float's 0.29999…).
type Dollars model.Micros

// UnmarshalYAML reads a number of dollars.
func (d *Dollars) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want an amount of dollars such as 0.25", n.Line)
	}
	m, err := model.ParseDollars(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Dollars(m)
	return nil
}

// Limits are agent.yaml's limits: on what model turns spend — tokens (of
// every kind, in and out) or dollars, per turn, per session and per
// principal per UTC day — and what happens at one.
//
//	limits:
//	  turn: {tokens: 200000}
//	  session: {usd: 5}
//	  principalDaily: {usd: 50}
//	  onExceed: approve   # or fail (the default)
type Limits struct {
	Turn           Limit  `yaml:"turn"`
	Session        Limit  `yaml:"session"`
	PrincipalDaily Limit  `yaml:"principalDaily"`
	OnExceed       string `yaml:"onExceed"`
}

// Limit bounds tokens, dollars, or both; absent or 0 bounds nothing.
type Limit struct {
	Tokens int64   `yaml:"tokens"`
	USD    Dollars `yaml:"usd"`
}

// Prices returns pricing: as a price table (to lay over the shipped one).
func (c Config) Prices() (model.Prices, error) {
	out := model.Prices{}
	for name, p := range c.Pricing {
		if p.Input == nil || p.Output == nil {
			return nil, fmt.Errorf("pricing.%s: input and output are required (dollars per million tokens)", name)
		}
		price := model.Price{Input: model.Micros(*p.Input), Output: model.Micros(*p.Output), CacheRead: model.Micros(*p.Input), CacheWrite: model.Micros(*p.Input)}
		if p.CacheRead != nil {
			price.CacheRead = model.Micros(*p.CacheRead)
		}
		if p.CacheWrite != nil {
			price.CacheWrite = model.Micros(*p.CacheWrite)
		}
		out[name] = price
	}
	return out, nil
}

// validate checks the limits' values.
func (l Limits) validate() error {
	switch l.OnExceed {
	case "", "fail", "approve":
	default:
		return fmt.Errorf("limits.onExceed %q: want fail or approve", l.OnExceed)
	}
	for name, lim := range map[string]Limit{"turn": l.Turn, "session": l.Session, "principalDaily": l.PrincipalDaily} {
		if lim.Tokens < 0 || lim.USD < 0 {
			return fmt.Errorf("limits.%s cannot be negative", name)
		}
	}
	return nil
}

// checkPricing checks pricing:: its names and required prices.
func (c Config) checkPricing() error {
	for name := range c.Pricing {
		if strings.TrimSpace(name) == "" {
			return fmt.Errorf("pricing: a model name is empty")
		}
	}
	_, err := c.Prices()
	return err
}

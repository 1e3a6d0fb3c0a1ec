package store

import (
	"context"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// Usage is the part of a Store that keeps what model calls consumed: each
// model.usage event appended to a session is also a row of its own,
// written in the same transaction, with the session's principal and
// channel; budgets reserve what a call may cost before it is made.
type Usage interface {
	// UsageTotals sums the model calls f selects. Cost is null when one
	// of them had no price.
	UsageTotals(ctx context.Context, f UsageFilter) (api.Usage, error)
	// UsageReport sums the model calls made in [p.From, p.To), one group
	// per value of p.By, by their cost and then their key.
	UsageReport(ctx context.Context, p UsageReportParams) ([]UsageGroup, error)
	// ReserveUsage holds back what a model call may consume, if p.Admit
	// lets it: in one transaction serialised with every other reservation
	// of the principal (so two turns racing one budget see each other),
	// it sums what the turn, the session and the principal since p.Since
	// spent and hold reserved, and passes that to p.Admit; an error from
	// Admit is returned and nothing is reserved. A reservation lasts until
	// ReleaseUsage or p.Expires, and replaces one of the same id.
	ReserveUsage(ctx context.Context, p ReserveUsageParams) error
	// ReleaseUsage removes a reservation (once its call's usage is
	// recorded, or the call failed); an unknown id is no error.
	ReleaseUsage(ctx context.Context, id string) error
}

// UsageFilter selects model calls: those of a session (SessionID), of one
// of its turns (and TurnID), or of a principal (Principal) — made since
// Since when it is set.
type UsageFilter struct {
	SessionID string
	TurnID    string
	Principal string
	Since     time.Time
}

// UsageGrouping is what [UsageReportParams] groups by.
type UsageGrouping string

// The groupings of a usage report.
const (
	UsageByPrincipal UsageGrouping = "principal"
	UsageByChannel   UsageGrouping = "channel"
	UsageByModel     UsageGrouping = "model"
	UsageBySession   UsageGrouping = "session"
	UsageTotal       UsageGrouping = "" // one group, key ""
)

// UsageReportParams ask for a usage report.
type UsageReportParams struct {
	From, To time.Time
	By       UsageGrouping
	// Principal, if set, counts only that principal's calls; Sessions,
	// if set, only those sessions'.
	Principal string
	Sessions  []string
}

// UsageGroup is one line of a usage report.
type UsageGroup struct {
	Key   string
	Usage api.Usage
}

// Spend is an amount consumed or reserved: tokens of every kind, and the
// cost of the priced calls in micro-dollars.
type Spend struct {
	Tokens int64
	Micros int64
}

// Add returns s + t.
func (s Spend) Add(t Spend) Spend { return Spend{s.Tokens + t.Tokens, s.Micros + t.Micros} }

// Spent is what [Usage.ReserveUsage] gives Admit: what the turn, the
// session and the principal (since ReserveUsageParams.Since) have spent,
// with what is reserved for calls in progress.
type Spent struct {
	Turn, Session, Principal Spend
}

// ReserveUsageParams reserve what one model call may consume.
type ReserveUsageParams struct {
	ID        string
	SessionID string
	TurnID    string
	Principal string
	// Since starts the principal's period (today, for a daily budget).
	Since time.Time
	// Amount is what the call may consume: its estimated input and its
	// whole output allowance, and their cost.
	Amount  Spend
	Expires time.Time
	// Admit decides, from what is spent and reserved, whether the call
	// may go on; nil admits it.
	Admit func(Spent) error
}

// SpendOf is what a model call consumed: every token of it, and its cost
// (0 when it has no price).
func SpendOf(u api.ModelUsage) Spend {
	s := Spend{Tokens: u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens}
	if u.CostMicroUsd != nil {
		s.Micros = *u.CostMicroUsd
	}
	return s
}

// UsageRow is one model call's usage as a store keeps it (what the memory
// store and the SQL stores read of a model.usage event).
type UsageRow struct {
	SessionID, TurnID  string
	Principal, Channel string
	Model              string
	At                 time.Time
	Usage              api.ModelUsage
}

// SumUsage adds a model call to a total: the tokens, one call, and the
// cost, which becomes null (and stays so) when the call had none.
func SumUsage(total *api.Usage, u api.ModelUsage) {
	first := total.ModelCalls == 0
	total.ModelCalls++
	total.InputTokens += u.InputTokens
	total.OutputTokens += u.OutputTokens
	total.CacheReadTokens += u.CacheReadTokens
	total.CacheWriteTokens += u.CacheWriteTokens
	total.ReasoningTokens += u.ReasoningTokens
	switch {
	case u.CostMicroUsd == nil:
		total.CostMicroUsd, total.CostUsd = nil, nil
	case first || total.CostMicroUsd != nil:
		c := *u.CostMicroUsd
		if !first {
			c += *total.CostMicroUsd
		}
		SetCost(total, &c)
	}
}

// NoUsage is the usage of no model calls: nothing, at $0 (what the SQL
// stores sum of no rows).
func NoUsage() api.Usage {
	var u api.Usage
	var zero int64
	SetCost(&u, &zero)
	return u
}

// SetCost sets a usage's cost from micro-dollars, and its dollars from
// that; nil for none.
func SetCost(u *api.Usage, micros *int64) {
	u.CostMicroUsd, u.CostUsd = micros, nil
	if micros != nil {
		d := float64(*micros) / 1e6
		u.CostUsd = &d
	}
}

package host

import (
	"context"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/store"
)

// What model calls cost. Each call's usage, as its provider reported it,
// is a model.usage event of its turn (internal/turnloop), priced with the
// host's table (Options.Prices over model.DefaultPrices); the store keeps a
// row of it written with the event, so a turn's, a session's and a
// principal's totals are sums the store makes. Costs are integers of
// micro-dollars, and a call whose model has no price makes every total it
// is part of have none (null): a figure is never made up.

// prices is the host's price table: the shipped one with Options.Prices
// over it.
func (o Options) prices() model.Prices { return model.DefaultPrices().With(o.Prices) }

// unpricedWarning says, once at startup, that the configured model has no
// price: its usage is recorded, its cost is null.
func (h *Host) unpricedWarning() {
	name := h.opts.ModelConfig.Name
	if h.opts.Model == nil || name == "" {
		return
	}
	if _, ok := h.prices.Lookup(name); !ok {
		h.logger.Warn("the model has no price: its usage is recorded, its cost is null; add it under pricing: in agent.yaml",
			"model", name, "prices_taken", model.PricesTaken)
	}
}

// priceUsage sets a model.usage record's cost from the host's table (a
// runner reports its calls unpriced; the host's prices are the ones that
// count).
func (h *Host) priceUsage(u *api.ModelUsage) {
	u.CostMicroUsd = nil
	calls := model.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, ReasoningTokens: u.ReasoningTokens}
	if cost, ok := h.prices.CostOf(calls, u.Model, h.opts.Cloud.Model.Name); ok {
		c := int64(cost)
		u.CostMicroUsd = &c
	}
}

// withTurnUsage adds to a turn's end what its model calls consumed; a turn
// that made none (a direct call's) says nothing of usage.
func (h *Host) withTurnUsage(ctx context.Context, f store.Fence, end api.Payload) api.Payload {
	u, err := h.log.UsageTotals(context.WithoutCancel(ctx), store.UsageFilter{SessionID: f.SessionID, TurnID: f.TurnID})
	if err != nil {
		h.logger.Error("summing a turn's usage", "session", f.SessionID, "turn", f.TurnID, "err", err)
		return end
	}
	if u.ModelCalls == 0 {
		return end
	}
	switch e := end.(type) {
	case api.TurnCompleted:
		e.Usage = &u
		return e
	case api.TurnFailed:
		e.Usage = &u
		return e
	}
	return end
}

// withUsage fills in what each session's model calls consumed, in one
// query for the page.
func (h *Host) withUsage(ctx context.Context, list []api.Session) error {
	ids := make([]string, len(list))
	for i, s := range list {
		ids[i] = s.ID
	}
	by, err := h.Sessions().Usage(ctx, ids)
	if err != nil {
		return err
	}
	for i := range list {
		u := by[list[i].ID]
		list[i].Usage = &u
	}
	return nil
}

// Usage returns what the model calls of each session consumed, in one
// query: every id has an entry (nothing, at $0, for a session without
// model calls or an unknown id).
func (s Sessions) Usage(ctx context.Context, ids []string) (map[string]api.Usage, error) {
	out := make(map[string]api.Usage, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	groups, err := s.h.log.UsageReport(ctx, store.UsageReportParams{By: store.UsageBySession, Sessions: ids, To: farFuture})
	if err != nil {
		return nil, storeError(err, nil)
	}
	for _, id := range ids {
		out[id] = store.NoUsage()
	}
	for _, g := range groups {
		out[g.Key] = g.Usage
	}
	return out, nil
}

// farFuture ends a report that has no end.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// UsageQuery asks for a usage report: the model calls made in [From, To),
// grouped By principal, channel, model or session ("" for one total).
type UsageQuery struct {
	From, To time.Time
	By       store.UsageGrouping
}

// Usage reports what model calls consumed across sessions: the total, and
// a line per group.
func (h *Host) Usage(ctx context.Context, q UsageQuery) (api.UsageReport, error) {
	if q.To.IsZero() {
		q.To = farFuture
	}
	switch q.By {
	case store.UsageTotal, store.UsageByPrincipal, store.UsageByChannel, store.UsageByModel, store.UsageBySession:
	default:
		return api.UsageReport{}, api.Errorf(api.CodeBadQuery, "by=%s: group usage by principal, channel, model or session", q.By)
	}
	if !q.From.Before(q.To) {
		return api.UsageReport{}, api.Errorf(api.CodeBadQuery, "from (%s) must come before to (%s)", q.From.Format(time.RFC3339), q.To.Format(time.RFC3339))
	}
	total, err := h.log.UsageReport(ctx, store.UsageReportParams{From: q.From, To: q.To, By: store.UsageTotal})
	if err != nil {
		return api.UsageReport{}, storeError(err, nil)
	}
	rep := api.UsageReport{OK: true, From: q.From.UTC(), By: string(q.By), Total: store.NoUsage(), Groups: []api.UsageGroup{}}
	if q.To != farFuture {
		to := q.To.UTC()
		rep.To = &to
	}
	if len(total) == 1 {
		rep.Total = total[0].Usage
	}
	if q.By == store.UsageTotal {
		return rep, nil
	}
	groups, err := h.log.UsageReport(ctx, store.UsageReportParams{From: q.From, To: q.To, By: q.By})
	if err != nil {
		return api.UsageReport{}, storeError(err, nil)
	}
	for _, g := range groups {
		rep.Groups = append(rep.Groups, api.UsageGroup{Key: g.Key, Usage: g.Usage})
	}
	return rep, nil
}

package evals

import (
	"context"
	"maps"
	"slices"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// What a batch cost. A case's usage is its session's (every model call of
// its conversation), summed by the host when the batch is read, not kept
// with the case: a case still running shows what it has spent so far. A
// batch's is the sum of its cases', its cost null when one of theirs is
// (a model without a price), never a made-up figure.

// usageQueryIDs bounds the sessions of one query of their usage (a
// batch's cases at most), well under the placeholders a statement may
// have.
const usageQueryIDs = maxEvalCases

// withUsage fills in the usage of each case of bs that has a session, and
// each batch's total, in a query of the host per usageQueryIDs sessions.
func (s *Service) withUsage(ctx context.Context, bs []api.EvalBatch) error {
	var ids []string
	for _, b := range bs {
		for _, c := range b.Cases {
			if c.SessionID != "" {
				ids = append(ids, c.SessionID)
			}
		}
	}
	by := make(map[string]api.Usage, len(ids))
	for chunk := range slices.Chunk(ids, usageQueryIDs) {
		part, err := s.h.Sessions().Usage(ctx, chunk)
		if err != nil {
			return err
		}
		maps.Copy(by, part)
	}
	for i := range bs {
		b := &bs[i]
		total := zeroUsage()
		for j := range b.Cases {
			c := &b.Cases[j]
			if c.SessionID == "" {
				continue
			}
			u := by[c.SessionID]
			c.Usage = &u
			addUsage(&total, u)
		}
		b.Usage = &total
	}
	return nil
}

// withListUsage fills in each listed batch's total: a listing has no
// cases, so each batch's are read (their sessions' ids), then every
// session's usage in one query.
func (s *Service) withListUsage(ctx context.Context, list []api.EvalBatch) error {
	full := make([]api.EvalBatch, len(list))
	for i, b := range list {
		var err error
		if full[i], err = s.evals.EvalBatch(ctx, b.ID); err != nil {
			return err
		}
	}
	if err := s.withUsage(ctx, full); err != nil {
		return err
	}
	for i := range list {
		list[i].Usage = full[i].Usage
	}
	return nil
}

// zeroUsage is nothing, at $0: the usage of no model calls.
func zeroUsage() api.Usage {
	var u api.Usage
	var zero int64
	store.SetCost(&u, &zero)
	return u
}

// addUsage adds u to total; the cost becomes null if u's is.
func addUsage(total *api.Usage, u api.Usage) {
	total.InputTokens += u.InputTokens
	total.OutputTokens += u.OutputTokens
	total.CacheReadTokens += u.CacheReadTokens
	total.CacheWriteTokens += u.CacheWriteTokens
	total.ReasoningTokens += u.ReasoningTokens
	total.ModelCalls += u.ModelCalls
	if total.CostMicroUsd == nil || u.CostMicroUsd == nil {
		store.SetCost(total, nil)
		return
	}
	sum := *total.CostMicroUsd + *u.CostMicroUsd
	store.SetCost(total, &sum)
}

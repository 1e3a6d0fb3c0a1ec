package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/agentsdk/agentsdk/api"
)

// insertUsageTx records a model.usage event as a row of model_calls, with
// its session's principal and channel, in the transaction appending it. A
// payload that does not decode (a runner's hostile report is checked
// before; this is the store's own guard) is recorded as zero tokens
// rather than lose the call.
func (s *sqlStore) insertUsageTx(ctx context.Context, tx *sql.Tx, e api.Event) error {
	var u api.ModelUsage
	_ = json.Unmarshal(e.Data, &u)
	_, err := tx.StmtContext(ctx, s.insertUsage).ExecContext(ctx,
		e.SessionID, e.Seq, e.TurnID, u.Provider, u.Model, micros(e.Time),
		u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, nullInt(u.CostMicroUsd), e.SessionID)
	if err != nil {
		return fmt.Errorf("recording a model call's usage: %w", err)
	}
	return nil
}

// insertUsageSQL writes a model call's row (insertUsageTx).
const insertUsageSQL = `INSERT INTO model_calls (session_id, seq, turn_id, principal, channel, provider, model, created_at,
	input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_micros)
	SELECT ?, ?, ?, principal, channel, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM sessions WHERE id = ?`

func nullInt(p *int64) sql.NullInt64 {
	if p == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: *p, Valid: true}
}

// usageColumns sums model_calls rows: calls, each kind of token, the
// priced calls' cost and how many were priced.
const usageColumns = `COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), COALESCE(SUM(cache_read_tokens), 0),
	COALESCE(SUM(cache_write_tokens), 0), COALESCE(SUM(reasoning_tokens), 0), COALESCE(SUM(cost_micros), 0), COUNT(cost_micros)`

func scanUsage(row interface{ Scan(...any) error }, extra ...any) (api.Usage, error) {
	var u api.Usage
	var cost, priced int64
	dest := append(extra, &u.ModelCalls, &u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens, &u.ReasoningTokens, &cost, &priced)
	if err := row.Scan(dest...); err != nil {
		return api.Usage{}, err
	}
	if priced == u.ModelCalls {
		SetCost(&u, &cost)
	}
	return u, nil
}

// usageWhere is the condition selecting f's calls.
func usageWhere(f UsageFilter) (string, []any) {
	where, args := "1 = 1", []any{}
	if f.SessionID != "" {
		where += ` AND session_id = ?`
		args = append(args, f.SessionID)
	}
	if f.TurnID != "" {
		where += ` AND turn_id = ?`
		args = append(args, f.TurnID)
	}
	if f.Principal != "" {
		where += ` AND principal = ?`
		args = append(args, f.Principal)
	}
	if !f.Since.IsZero() {
		where += ` AND created_at >= ?`
		args = append(args, micros(f.Since))
	}
	return where, args
}

func (s *sqlStore) UsageTotals(ctx context.Context, f UsageFilter) (api.Usage, error) {
	where, args := usageWhere(f)
	u, err := scanUsage(s.read.QueryRowContext(ctx, s.q(`SELECT `+usageColumns+` FROM model_calls WHERE `+where), args...))
	if err != nil {
		return api.Usage{}, fmt.Errorf("summing usage: %w", err)
	}
	return u, nil
}

// usageGroupColumn is the column a report groups by.
var usageGroupColumn = map[UsageGrouping]string{
	UsageByPrincipal: "principal", UsageByChannel: "channel", UsageByModel: "model", UsageBySession: "session_id", UsageTotal: "''",
}

func (s *sqlStore) UsageReport(ctx context.Context, p UsageReportParams) ([]UsageGroup, error) {
	col, ok := usageGroupColumn[p.By]
	if !ok {
		return nil, fmt.Errorf("a usage report by %q: by principal, channel, model or session", p.By)
	}
	where, args := `created_at >= ? AND created_at < ?`, []any{micros(p.From), micros(p.To)}
	if p.Principal != "" {
		where += ` AND principal = ?`
		args = append(args, p.Principal)
	}
	if len(p.Sessions) > 0 {
		where += ` AND session_id IN (?` + strings.Repeat(`, ?`, len(p.Sessions)-1) + `)`
		for _, id := range p.Sessions {
			args = append(args, id)
		}
	}
	group := ""
	if p.By != UsageTotal {
		group = ` GROUP BY ` + col
	}
	out, err := queryAll(ctx, s.read, s.q(`SELECT `+col+`, `+usageColumns+` FROM model_calls WHERE `+where+group), args,
		func(rows *sql.Rows) (UsageGroup, error) {
			var g UsageGroup
			var err error
			g.Usage, err = scanUsage(rows, &g.Key)
			return g, err
		})
	if err != nil {
		return nil, fmt.Errorf("reporting usage: %w", err)
	}
	if p.By == UsageTotal && len(out) == 1 && out[0].Usage.ModelCalls == 0 {
		out = nil
	}
	SortUsageGroups(out)
	return out, nil
}

// SortUsageGroups orders a report: the costliest first, those without a
// cost after those with one, then by key.
func SortUsageGroups(gs []UsageGroup) {
	cost := func(g UsageGroup) int64 {
		if g.Usage.CostMicroUsd == nil {
			return -1
		}
		return *g.Usage.CostMicroUsd
	}
	sort.SliceStable(gs, func(i, j int) bool {
		if ci, cj := cost(gs[i]), cost(gs[j]); ci != cj {
			return ci > cj
		}
		return gs[i].Key < gs[j].Key
	})
}

func (s *sqlStore) ReserveUsage(ctx context.Context, p ReserveUsageParams) error {
	now := s.now()
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if s.dialect.RowLocks {
			// Serialise the principal's reservations (SQLite runs one write
			// transaction at a time anyway).
			if _, err := tx.ExecContext(ctx, s.q(`SELECT pg_advisory_xact_lock(hashtextextended(?, 0))`), "usage:"+p.Principal); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM usage_reservations WHERE id = ? OR (principal = ? AND expires_at <= ?)`), p.ID, p.Principal, micros(now)); err != nil {
			return err
		}
		var spent Spent
		for _, q := range []struct {
			into  *Spend
			where string
			args  []any
		}{
			{&spent.Turn, `session_id = ? AND turn_id = ?`, []any{p.SessionID, p.TurnID}},
			{&spent.Session, `session_id = ?`, []any{p.SessionID}},
			{&spent.Principal, `principal = ?`, []any{p.Principal}},
		} {
			calls := append([]any(nil), q.args...)
			callsWhere := q.where
			if q.into == &spent.Principal && !p.Since.IsZero() {
				callsWhere += ` AND created_at >= ?`
				calls = append(calls, micros(p.Since))
			}
			var used, held Spend
			if err := tx.QueryRowContext(ctx, s.q(`SELECT COALESCE(SUM(input_tokens + output_tokens + cache_read_tokens + cache_write_tokens), 0),
				COALESCE(SUM(cost_micros), 0) FROM model_calls WHERE `+callsWhere), calls...).Scan(&used.Tokens, &used.Micros); err != nil {
				return err
			}
			if err := tx.QueryRowContext(ctx, s.q(`SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM(cost_micros), 0) FROM usage_reservations
				WHERE expires_at > ? AND `+q.where), append([]any{micros(now)}, q.args...)...).Scan(&held.Tokens, &held.Micros); err != nil {
				return err
			}
			*q.into = used.Add(held)
		}
		if p.Admit != nil {
			if err := p.Admit(spent); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO usage_reservations (id, session_id, turn_id, principal, tokens, cost_micros, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`), p.ID, p.SessionID, p.TurnID, p.Principal, p.Amount.Tokens, p.Amount.Micros, micros(p.Expires))
		return err
	})
	return err
}

func (s *sqlStore) ReleaseUsage(ctx context.Context, id string) error {
	if _, err := s.write.ExecContext(ctx, s.q(`DELETE FROM usage_reservations WHERE id = ?`), id); err != nil {
		return fmt.Errorf("releasing a usage reservation: %w", err)
	}
	return nil
}

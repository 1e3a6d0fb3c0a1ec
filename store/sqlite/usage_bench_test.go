package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentsdk/agentsdk/api"
)

// BenchmarkUsageAccounting is what recording a model call's usage costs
// the store: a turn appends the model's answer (a message) after each
// call, and now its model.usage event with it, in the same transaction,
// which also writes the call's row of model_calls. answer is the append
// without usage (the baseline), answer+usage the append a turn now makes;
// the difference per op is the accounting's cost per model call.
//
//	go test ./store/sqlite -run '^$' -bench UsageAccounting -count 6
func BenchmarkUsageAccounting(b *testing.B) {
	ctx := context.Background()
	answer := api.NewEvent(api.Message{Role: api.RoleAssistant, Text: "Done: the report is in reports/weekly.md."})
	cost := int64(7200)
	usage := api.NewEvent(api.ModelUsage{Provider: "anthropic", Model: "claude-sonnet-4-5-20250929", InputTokens: 1200, OutputTokens: 80,
		CacheReadTokens: 3000, CacheWriteTokens: 400, CostMicroUsd: &cost, DurationMs: 812, Reported: true, StopReason: "end_turn"})
	for _, c := range []struct {
		name   string
		events []api.Event
	}{
		{"answer", []api.Event{answer}},
		{"answer+usage", []api.Event{answer, usage}},
		{"answer+answer", []api.Event{answer, answer}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, err := Open(ctx, filepath.Join(b.TempDir(), "agent.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if _, err := s.CreateSession(ctx, api.Session{ID: "s", Channel: "http", Mode: api.ModeLocal, Principal: "p"}); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := s.Append(ctx, "s", c.events...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

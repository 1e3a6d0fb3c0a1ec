package client

import (
	"context"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// UsageOptions choose a usage report. Nil means everything, in total.
type UsageOptions struct {
	// From and To bound the model calls counted, [From, To); zero: from
	// the beginning, until now and on.
	From, To time.Time
	// By groups the report: "principal", "channel", "model" or
	// "session"; "" for the total only.
	By string
}

// Usage reports what model calls consumed across sessions: tokens and
// cost in total and, with By, per group, the costliest first.
func (c *Client) Usage(ctx context.Context, opts *UsageOptions) (api.UsageReport, error) {
	var o UsageOptions
	if opts != nil {
		o = *opts
	}
	q := query{}.add("by", o.By)
	if !o.From.IsZero() {
		q = q.add("from", o.From.UTC().Format(time.RFC3339Nano))
	}
	if !o.To.IsZero() {
		q = q.add("to", o.To.UTC().Format(time.RFC3339Nano))
	}
	var ans api.UsageReport
	if err := c.call(ctx, "usage", nil, q, nil, &ans); err != nil {
		return api.UsageReport{}, err
	}
	return ans, nil
}

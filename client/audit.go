package client

import (
	"context"
	"strconv"

	"github.com/agentsdk/agentsdk/api"
)

// AuditPage returns up to limit entries of the host's audit log after the
// seq after (limit 0: the host's default, 1000), with the log's head and
// the seq to ask after for the next page (0 after the last).
func (c *Client) AuditPage(ctx context.Context, after int64, limit int) (api.AuditList, error) {
	var ans api.AuditList
	q := query{}.add("after", strconv.FormatInt(after, 10)).add("limit", limitParam(limit))
	if err := c.call(ctx, "listAudit", nil, q, nil, &ans); err != nil {
		return api.AuditList{}, err
	}
	return ans, nil
}

// Audit reads the host's whole audit log as it stood when its first page
// was read (up to that head), a page at a time, and the head.
func (c *Client) Audit(ctx context.Context) ([]api.AuditEntry, api.AuditHead, error) {
	var all []api.AuditEntry
	var head api.AuditHead
	var after int64
	for first := true; ; first = false {
		page, err := c.AuditPage(ctx, after, 0)
		if err != nil {
			return nil, api.AuditHead{}, err
		}
		if first {
			head = page.Head
		}
		for _, e := range page.Entries {
			if e.Seq > head.Seq {
				return all, head, nil // appended since the first page: not in this copy
			}
			all = append(all, e)
			after = e.Seq
		}
		if len(page.Entries) == 0 || after >= head.Seq {
			return all, head, nil
		}
	}
}

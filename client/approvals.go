package client

import (
	"context"

	"github.com/agentsdk/agentsdk/api"
)

// ResolveOptions modify a decision. Nil means defaults.
type ResolveOptions struct {
	// SessionID decides through the session's route, which refuses a call
	// parked in another session (or none) with [api.ErrApprovalNotFound].
	SessionID string
}

// Resolve decides a parked call, exactly once: a second decision is
// refused with [api.ErrAlreadyResolved] (its [api.Error] holds the first),
// a call that expired with [api.ErrApprovalExpired]. req.Approved is
// required.
func (c *Client) Resolve(ctx context.Context, callID string, req api.ResolveRequest, opts *ResolveOptions) (api.Approval, error) {
	var o ResolveOptions
	if opts != nil {
		o = *opts
	}
	route, args := "resolve", []string{callID}
	if o.SessionID != "" {
		route, args = "resolveInSession", []string{o.SessionID, callID}
	}
	var ans api.ApprovalResponse
	err := c.call(ctx, route, args, nil, req, &ans)
	return ans.Approval, err
}

// Approve approves a parked call: it runs with the input it parked with.
// See [Client.Resolve], which also labels the approver.
func (c *Client) Approve(ctx context.Context, callID string, opts *ResolveOptions) (api.Approval, error) {
	approved := true
	return c.Resolve(ctx, callID, api.ResolveRequest{Approved: &approved}, opts)
}

// Deny denies a parked call; the model, or the direct caller, reads the
// reason. See [Client.Resolve], which also labels the approver.
func (c *Client) Deny(ctx context.Context, callID, reason string, opts *ResolveOptions) (api.Approval, error) {
	approved := false
	return c.Resolve(ctx, callID, api.ResolveRequest{Approved: &approved, Reason: reason}, opts)
}

// Approvals returns a page of parked and decided calls, oldest first:
// those with status ("" for all), at most limit (0 means the host's
// default), after cursor ("" for the first page), and the cursor of the
// next page ("" after the last).
func (c *Client) Approvals(ctx context.Context, status api.ApprovalStatus, limit int, cursor string) ([]api.Approval, string, error) {
	var ans api.ApprovalList
	q := query{}.add("limit", limitParam(limit)).add("status", string(status)).add("cursor", cursor)
	if err := c.call(ctx, "listApprovals", nil, q, nil, &ans); err != nil {
		return nil, "", err
	}
	return ans.Approvals, ans.Next, nil
}

package client

import (
	"context"
	"net/http"

	"github.com/agentsdk/agentsdk/api"
)

// RunnerClaim claims a cloud turn for a runner, waiting up to
// req.WaitMs for one; nil when there was none in time. (agent-sdk runner
// is the runner; see package api for the protocol.)
func (c *Client) RunnerClaim(ctx context.Context, req api.RunnerClaimRequest) (*api.RunnerClaim, error) {
	resp, err := c.send(ctx, c.stream, "runnerClaim", nil, nil, req, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNoContent {
		resp.Body.Close()
		return nil, nil
	}
	var claim api.RunnerClaim
	if err := decodeAnswer(resp, &claim); err != nil {
		return nil, err
	}
	return &claim, nil
}

// RunnerReport reports a claimed turn's events, renews its lease, or
// (with rep.End) ends the claim; an [api.Error] with code lease_lost says
// the runner no longer holds the turn.
func (c *Client) RunnerReport(ctx context.Context, sessionID, turnID string, rep api.RunnerReport) error {
	var ok api.OKResponse
	return c.call(ctx, "runnerReport", []string{sessionID, turnID}, nil, rep, &ok)
}

// RunnerAdmit asks whether a claimed cloud turn's next model call is
// within the usage limits: an [api.Error] with code budget_exceeded says
// it is not; Parked, that the turn waits for a person to raise a limit.
func (c *Client) RunnerAdmit(ctx context.Context, sessionID, turnID string, req api.RunnerAdmit) (api.RunnerAdmitted, error) {
	var ans api.RunnerAdmitted
	err := c.call(ctx, "runnerAdmit", []string{sessionID, turnID}, nil, req, &ans)
	return ans, err
}

// RunnerPermission asks the host for permission to run a harness call of
// a claimed turn: parked for a person the first time, then waited on for
// up to req.WaitMs. A pending status says ask again.
func (c *Client) RunnerPermission(ctx context.Context, sessionID, turnID string, req api.RunnerPermission) (api.RunnerDecision, error) {
	var ans api.RunnerDecision
	err := c.call(ctx, "runnerPermission", []string{sessionID, turnID}, nil, req, &ans)
	return ans, err
}

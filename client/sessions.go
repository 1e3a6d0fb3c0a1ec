package client

import (
	"context"
	"io"
	"iter"
	"strconv"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// CreateSession opens a session; with a message, its first model turn
// starts (TurnID names it).
func (c *Client) CreateSession(ctx context.Context, req api.CreateSessionRequest) (api.TurnStartedResponse, error) {
	var ans api.TurnStartedResponse
	err := c.call(ctx, "createSession", nil, nil, req, &ans)
	return ans, err
}

// Send sends a message to a session: a model turn starts. A session whose
// turn is still running refuses it with [api.ErrSessionBusy].
func (c *Client) Send(ctx context.Context, sessionID, message string) (api.TurnStartedResponse, error) {
	var ans api.TurnStartedResponse
	err := c.call(ctx, "sendMessage", []string{sessionID}, nil, api.SendRequest{Message: message}, &ans)
	return ans, err
}

// Session returns a session.
func (c *Client) Session(ctx context.Context, sessionID string) (api.Session, error) {
	var ans api.SessionResponse
	err := c.call(ctx, "getSession", []string{sessionID}, nil, nil, &ans)
	return ans.Session, err
}

// Sessions returns a page of sessions, newest first: at most limit (0
// means the host's default), after cursor ("" for the first page), and
// the cursor of the next page ("" after the last).
func (c *Client) Sessions(ctx context.Context, limit int, cursor string) ([]api.Session, string, error) {
	var ans api.SessionList
	q := query{}.add("limit", limitParam(limit)).add("cursor", cursor)
	if err := c.call(ctx, "listSessions", nil, q, nil, &ans); err != nil {
		return nil, "", err
	}
	return ans.Sessions, ans.Next, nil
}

// AllSessions yields every session, newest first, asking for pageSize at
// a time (0 means the host's default) as the loop goes on.
func (c *Client) AllSessions(ctx context.Context, pageSize int) iter.Seq2[api.Session, error] {
	return func(yield func(api.Session, error) bool) {
		cursor := ""
		for {
			page, next, err := c.Sessions(ctx, pageSize, cursor)
			if err != nil {
				yield(api.Session{}, err)
				return
			}
			for _, s := range page {
				if !yield(s, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			cursor = next
		}
	}
}

// Cancel cancels the session's running turn; it ends with turn.failed
// ("cancelled"). A turn parked for approvals is cancelled too: its pending
// calls are closed (status cancelled; a decision after that returns
// [api.ErrAlreadyResolved]) and none of its calls runs any more. With no
// turn running it returns [api.ErrNoRunningTurn].
func (c *Client) Cancel(ctx context.Context, sessionID string) error {
	var ans api.OKResponse
	return c.call(ctx, "cancelTurn", []string{sessionID}, nil, nil, &ans)
}

// Compact summarises the session's conversation now, but for its last
// turns: the host runs a turn of its own (kind compact) that records
// context.compacted. With too little to summarise, Compacted is false and
// Reason says why. While another turn runs it returns
// [api.ErrSessionBusy].
func (c *Client) Compact(ctx context.Context, sessionID string) (api.CompactResponse, error) {
	var ans api.CompactResponse
	err := c.call(ctx, "compactSession", []string{sessionID}, nil, nil, &ans)
	return ans, err
}

// StoredEvents returns the session's stored events after seq after, at
// most limit of them (0 means the host's default), without following the
// stream.
func (c *Client) StoredEvents(ctx context.Context, sessionID string, after int64, limit int) ([]api.Event, error) {
	var ans api.EventList
	q := query{"follow", "false", "after", strconv.FormatInt(after, 10)}.add("limit", limitParam(limit))
	if err := c.call(ctx, "events", []string{sessionID}, q, nil, &ans); err != nil {
		return nil, err
	}
	return ans.Events, nil
}

// Artifacts lists the session's artifacts.
func (c *Client) Artifacts(ctx context.Context, sessionID string) ([]tool.FileInfo, error) {
	var ans api.ArtifactList
	if err := c.call(ctx, "listArtifacts", []string{sessionID}, nil, nil, &ans); err != nil {
		return nil, err
	}
	return ans.Artifacts, nil
}

// Artifact returns an artifact's content, which the caller must close,
// and what its answer says of it: Name, Size (-1 if unknown) and
// ContentType. [Client.Artifacts] has the SHA256 and UpdatedAt too.
func (c *Client) Artifact(ctx context.Context, sessionID, name string) (io.ReadCloser, tool.FileInfo, error) {
	resp, err := c.send(ctx, c.hc, "getArtifact", []string{sessionID, name}, nil, nil, nil)
	if err != nil {
		return nil, tool.FileInfo{}, err
	}
	return resp.Body, tool.FileInfo{Name: name, Size: resp.ContentLength, ContentType: resp.Header.Get("Content-Type")}, nil
}

// limitParam formats a limit, or returns "" for 0: the host's default.
// The host refuses a negative one.
func limitParam(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/client"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/tool"
)

// setupRunnerHost serves a host whose cloud turns reach its own MCP
// endpoint, and returns its base URL (…/agent) and a client.
func setupRunnerHost(t *testing.T, token string) (string, *client.Client) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String() + "/agent"
	where, _ := tool.New("where", tool.Config{Description: "The session a call runs in."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			return map[string]string{"session": call.Session.ID}, nil
		})
	set, _ := tool.NewSet(where)
	h, err := host.New(set, &host.Options{StateRoot: t.TempDir(), Cloud: host.CloudOptions{ToolsURL: base + "/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(h, &serve.Options{Slug: "agent", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv)
	ts.Listener.Close()
	ts.Listener = l
	ts.Start()
	t.Cleanup(func() { ts.Close(); h.Close() })
	c, err := client.New(base, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	return base, c
}

// mcpAs connects to an MCP endpoint with a bearer token, sending extra
// headers with every request.
func mcpAs(t *testing.T, url, token string, header http.Header) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "runner-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token: token, header: header}}, DisableStandaloneSSE: true, MaxRetries: -1}
	s, err := c.Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, err
}

// A claim's runner token is good on the MCP endpoint only, for calls in
// its session's running turn; forged, from another host's token, on any
// other route, or after the turn ended, it is refused.
func TestRunnerToken(t *testing.T) {
	base, c := setupRunnerHost(t, testToken)
	ctx := context.Background()
	if _, err := c.RunnerClaim(ctx, api.RunnerClaimRequest{Runner: "r1", WaitMs: 60_000}); !errors.Is(err, &api.Error{Code: api.CodeBadRequest}) {
		t.Errorf("a claim waiting a minute: %v", err)
	}
	if claim, err := c.RunnerClaim(ctx, api.RunnerClaimRequest{Runner: "r1"}); claim != nil || err != nil {
		t.Errorf("a claim with nothing to run: %+v %v", claim, err)
	}
	started, err := c.CreateSession(ctx, api.CreateSessionRequest{Mode: api.ModeCloud, Message: "where am I?"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSession(ctx, api.CreateSessionRequest{Mode: "elsewhere"}); !errors.Is(err, &api.Error{Code: api.CodeInvalidMode}) {
		t.Errorf("mode elsewhere: %v", err)
	}
	claim, err := c.RunnerClaim(ctx, api.RunnerClaimRequest{Runner: "r1", WaitMs: 2000})
	if err != nil || claim == nil || claim.SessionID != started.SessionID || claim.MCPURL != base+"/mcp" || !strings.HasPrefix(claim.RunnerToken, "agrt_") {
		t.Fatalf("claim: %+v %v", claim, err)
	}

	// Only the MCP endpoint takes it.
	rc, _ := client.New(base, claim.RunnerToken, nil)
	if _, err := rc.Tools(ctx); !errors.Is(err, &api.Error{Code: api.CodeUnauthorized}) {
		t.Errorf("GET /v1/tools with a runner token: %v", err)
	}
	if _, err := rc.RunnerClaim(ctx, api.RunnerClaimRequest{Runner: "r2"}); !errors.Is(err, &api.Error{Code: api.CodeUnauthorized}) {
		t.Errorf("a claim with a runner token: %v", err)
	}
	forged := []string{claim.RunnerToken[:len(claim.RunnerToken)-2] + "xx", "agrt_" + strings.Repeat("a", 40) + "." + strings.Repeat("b", 43)}
	_, other := setupRunnerHost(t, "another-hosts-token")
	otherStarted, _ := other.CreateSession(ctx, api.CreateSessionRequest{Mode: api.ModeCloud, Message: "hi"})
	if otherClaim, err := other.RunnerClaim(ctx, api.RunnerClaimRequest{Runner: "r1", WaitMs: 2000}); err == nil && otherClaim != nil && otherClaim.SessionID == otherStarted.SessionID {
		forged = append(forged, otherClaim.RunnerToken)
	} else {
		t.Errorf("the other host's claim: %+v %v", otherClaim, err)
	}
	for _, tok := range forged {
		if _, err := mcpAs(t, base+"/mcp", tok, nil); err == nil {
			t.Errorf("connected to the MCP endpoint with %.20s…", tok)
		}
	}

	callID := tool.NewCallID("where")
	s, err := mcpAs(t, base+"/mcp", claim.RunnerToken, http.Header{"X-Agent-Call-Id": {callID}, "X-Agent-Model-Call-Id": {"m1"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "where", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(text(t, res), started.SessionID) {
		t.Fatalf("a call in the turn: %+v %v", res, err)
	}
	if err := c.RunnerReport(ctx, claim.SessionID, claim.TurnID, api.RunnerReport{Token: claim.Token, End: api.RunnerEndCompleted}); err != nil {
		t.Fatal(err)
	}
	// Once its turn has ended, the token opens nothing: no call, no
	// listing, no new connection.
	if _, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "where", Arguments: map[string]any{}}); err == nil {
		t.Errorf("a call after the turn ended: no error")
	}
	if tools, err := s.ListTools(ctx, nil); err == nil {
		t.Errorf("tools/list after the turn ended: %d tools", len(tools.Tools))
	}
	if _, err := mcpAs(t, base+"/mcp", claim.RunnerToken, nil); err == nil {
		t.Errorf("connected with the token of an ended turn")
	}
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+claim.RunnerToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Error(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("tools/list with the token of an ended turn: %s", resp.Status)
		}
	}

	// Reports are checked like every body.
	for _, body := range []string{`{"token":1,"events":[{"kind":"message","data":{"role":"user","text":"x"}}]}`, `{"token":1,"extra":true}`, `{"token":"x"}`} {
		req, _ := http.NewRequest("POST", base+"/v1/runner/turns/"+claim.SessionID+"/"+claim.TurnID, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Error api.Error `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("report %s: %d %+v", body, resp.StatusCode, v.Error)
		}
	}
}

package serve_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/agentsdk/agentsdk/serve"
)

// browser plays the user's browser for an OAuth client: it opens the
// authorization URL and reads the code and state off the redirect (the
// fake issuer signs its user in at once).
func browser(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil {
		return nil, errors.New("the issuer did not redirect: " + resp.Status)
	}
	return &auth.AuthorizationResult{Code: loc.Query().Get("code"), State: loc.Query().Get("state")}, nil
}

// oauthConnect connects the official SDK's client to endpoint with its
// OAuth support: it finds the issuer through the 401's resource_metadata,
// signs in (authorization code with PKCE, resource=the endpoint) and
// retries with the access token.
func oauthConnect(t *testing.T, endpoint, version string) (*mcp.ClientSession, error) {
	t.Helper()
	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		PreregisteredClient:      &oauthex.ClientCredentials{ClientID: "desktop-client"},
		RedirectURL:              "http://127.0.0.1:1/callback",
		AuthorizationCodeFetcher: browser,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "agent-sdk-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: endpoint, OAuthHandler: h, DisableStandaloneSSE: true, MaxRetries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, err
}

// The MCP endpoint as an OAuth resource server, with the official Go
// SDK's client and its OAuth support against the fake issuer: it
// connects without a pasted secret and calls a tool as oidc:alice
// (both protocol versions: the fast path and the SDK's), asking for a
// token for the endpoint's resource URL; its 401 names the metadata,
// which is right; a token for another audience (the API's, another
// service's) is refused there, one without the scope tools:call is 403
// insufficient_scope, and the endpoint's token does not open the API.
func TestMCPOAuth(t *testing.T) {
	fi := newFakeIssuer(t)
	b, public := setupOIDC(t, fi, nil)
	endpoint := public + "/agent/mcp"
	metaURL := public + "/.well-known/oauth-protected-resource/agent/mcp"

	for _, version := range mcpVersions {
		s, err := oauthConnect(t, endpoint, version)
		if err != nil {
			t.Fatalf("connecting with OAuth (%s): %v", version, err)
		}
		res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}})
		if err != nil || res.IsError || text(t, res) != "echoed" {
			t.Fatalf("calling echo with OAuth (%s): %+v %v", version, res, err)
		}
		res, err = s.CallTool(context.Background(), &mcp.CallToolParams{Name: "deploy", Arguments: map[string]any{}})
		if err != nil || !res.IsError || !strings.Contains(text(t, res), "deployer") {
			t.Errorf("an operator calling deploy (Callers: deployer) with OAuth (%s): %+v %v, want isError naming deployer", version, res, err)
		}
	}
	fi.mu.Lock()
	resources := slices.Clone(fi.resources)
	fi.mu.Unlock()
	if len(resources) == 0 || resources[0] != endpoint {
		t.Errorf("the client asked the issuer for resources %q, want %q", resources, endpoint)
	}

	// The 401 without a credential points at the metadata.
	resp, err := http.Post(endpoint, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.Contains(got, `resource_metadata="`+metaURL+`"`) {
		t.Errorf("MCP without a credential: %d %q, want 401 with resource_metadata=%q", resp.StatusCode, got, metaURL)
	}
	// The metadata document (RFC 9728), public.
	resp, err = http.Get(metaURL)
	if err != nil {
		t.Fatal(err)
	}
	var meta oauthex.ProtectedResourceMetadata
	decodeJSON(t, resp, &meta)
	if resp.StatusCode != 200 || meta.Resource != endpoint || !slices.Equal(meta.AuthorizationServers, []string{fi.URL}) ||
		!slices.Equal(meta.ScopesSupported, []string{"tools:call"}) || !slices.Equal(meta.BearerMethodsSupported, []string{"header"}) {
		t.Errorf("the metadata: %d %+v", resp.StatusCode, meta)
	}

	base := fi.claims(fi.user, endpoint)
	base["scope"] = "openid tools:call"
	for _, c := range []struct {
		name   string
		claims map[string]any
		status int
		www    string
	}{
		{"the endpoint's token", base, 200, ""},
		{"the API's audience", with(base, map[string]any{"aud": oidcAudience}), 401, `error="invalid_token"`},
		{"another service's audience", with(base, map[string]any{"aud": "https://other.example.com/mcp"}), 401, `error="invalid_token"`},
		{"no tools:call scope", with(base, map[string]any{"scope": "openid"}), 403, `error="insufficient_scope", scope="tools:call"`},
		{"expired", with(base, map[string]any{"exp": time.Now().Add(-time.Minute).Unix()}), 401, `error="invalid_token"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
			req.Header.Set("Authorization", "Bearer "+fi.sign("rsa-1", jose.RS256, c.claims))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			www := resp.Header.Get("WWW-Authenticate")
			if resp.StatusCode != c.status || !strings.Contains(www, c.www) || (c.status != 200 && !strings.Contains(www, `resource_metadata="`+metaURL+`"`)) {
				t.Errorf("%d %q, want %d with %q and the resource_metadata", resp.StatusCode, www, c.status, c.www)
			}
		})
	}
	// The endpoint's token is not one for the API.
	if got := b.do(t, "GET", "/sessions", fi.sign("rsa-1", jose.RS256, base), ""); got.status != 401 {
		t.Errorf("the MCP endpoint's token on the API: %d, want 401", got.status)
	}
	// A reader's token with the scope still cannot call: the scope grants
	// call only to roles that have it.
	reader := with(base, map[string]any{"sub": "bob", "roles": []string{"reader"}})
	s, err := (&mcpBundle{url: endpoint}).connect(t, fi.sign("ec-1", jose.ES256, reader), "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(text(t, res), "permission call") {
		t.Errorf("a reader's token with tools:call calling echo: %+v %v, want isError naming the permission call", res, err)
	}
	// An admin's token with the scope has the call permission only: it
	// calls echo, and a tool whose Callers are other roles is refused (the
	// admin's bypass is not carried over by the scope).
	admin := with(base, map[string]any{"sub": "root", "roles": []string{"admin"}})
	s, err = (&mcpBundle{url: endpoint}).connect(t, fi.sign("rsa-1", jose.RS256, admin), "")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Errorf("an admin's token calling echo: %+v %v", res, err)
	}
	if res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "deploy", Arguments: map[string]any{}}); err != nil || !res.IsError || !strings.Contains(text(t, res), "deployer") {
		t.Errorf("an admin's token calling deploy (Callers: deployer): %+v %v, want isError naming deployer", res, err)
	}
}

// With the fast path off, the SDK answers every request and a tool's
// handler finds the JWT's principal from the header again: the same
// answers (an operator's token calls echo, not deploy; a reader's calls
// nothing).
func TestMCPOAuthThroughSDK(t *testing.T) {
	fi := newFakeIssuer(t)
	b, public := setupOIDC(t, fi, nil)
	serve.SetMCPFastPath(b.srv, false)
	endpoint := public + "/agent/mcp"
	base := fi.claims(fi.user, endpoint)
	base["scope"] = "tools:call"
	for _, c := range []struct {
		roles      []string
		tool, want string
		isError    bool
	}{
		{[]string{"operator"}, "echo", "echoed", false},
		{[]string{"operator"}, "deploy", "deployer", true},
		{[]string{"reader"}, "echo", "permission call", true},
	} {
		s, err := (&mcpBundle{url: endpoint}).connect(t, fi.sign("rsa-1", jose.RS256, with(base, map[string]any{"roles": c.roles})), "")
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{}})
		if err != nil || res.IsError != c.isError || !strings.Contains(text(t, res), c.want) {
			t.Errorf("%v calling %s: %+v %v, want isError %v with %q", c.roles, c.tool, res, err, c.isError, c.want)
		}
	}
	if n := serve.MCPFastHits(b.srv); n != 0 {
		t.Errorf("the fast path answered %d requests, want none", n)
	}
}

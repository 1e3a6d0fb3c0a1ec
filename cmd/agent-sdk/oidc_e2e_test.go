package main_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// agent.yaml's auth.oidc on the real binary: serve takes the issuer's
// JWTs (an operator's opens a session, recorded as oidc:<sub>; one for
// another audience is 401 invalid_token) beside the host token, and with
// --public-url the MCP endpoint's 401 names its protected-resource
// metadata, whose resource is <public-url>/<slug>/mcp.
func TestOIDCServe(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	issuer := httptest.NewServer(mux)
	defer issuer.Close()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": issuer.URL, "jwks_uri": issuer.URL + "/jwks",
			"authorization_endpoint": issuer.URL + "/authorize", "token_endpoint": issuer.URL + "/token", "id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	sign := func(aud string) string {
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		claims, _ := json.Marshal(map[string]any{"iss": issuer.URL, "aud": aud, "sub": "alice", "name": "Alice",
			"groups": []string{"operator"}, "exp": time.Now().Add(5 * time.Minute).Unix()})
		jws, err := signer.Sign(claims)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := jws.CompactSerialize()
		return s
	}

	dir := filepath.Join(t.TempDir(), "oidcagent")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	yaml := "auth:\n  oidc:\n    issuer: " + issuer.URL + "\n    audience: agent-api\n    rolesClaim: groups\n"
	if err := os.WriteFile(filepath.Join(dir, "agent", "agent.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir, "--public-url", "https://agents.example.test")
	slug := regexp.MustCompile(`/([^/]+)/v1$`).FindStringSubmatch(s.base)[1]

	status, v, _ := s.request(t, "POST", "/session", sign("agent-api"), `{}`)
	if status != 201 {
		t.Fatalf("an operator's JWT opening a session: %d %v\n%s", status, v, s.logs())
	}
	id, _ := v["sessionId"].(string)
	status, v, _ = s.request(t, "GET", "/session/"+id, s.token, "")
	if sess, _ := v["session"].(map[string]any); status != 200 || sess["principal"] != "oidc:alice" {
		t.Errorf("the session: %d %v, want its principal oidc:alice", status, v)
	}
	status, v, h := s.request(t, "GET", "/sessions", sign("another-api"), "")
	if status != 401 || !strings.Contains(h.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("a JWT for another audience: %d %v %q, want 401 invalid_token", status, v, h.Get("WWW-Authenticate"))
	}
	if status, _, _ := s.request(t, "GET", "/sessions", s.token, ""); status != 200 {
		t.Errorf("the host token beside OIDC: %d", status)
	}

	origin := strings.TrimSuffix(s.base, "/"+slug+"/v1")
	resp, err := http.Post(origin+"/"+slug+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	meta := "https://agents.example.test/.well-known/oauth-protected-resource/" + slug + "/mcp"
	if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.Contains(got, `resource_metadata="`+meta+`"`) {
		t.Errorf("MCP without a credential: %d %q, want resource_metadata=%q", resp.StatusCode, got, meta)
	}
	resp, err = http.Get(origin + "/.well-known/oauth-protected-resource/" + slug + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if doc.Resource != "https://agents.example.test/"+slug+"/mcp" || len(doc.AuthorizationServers) != 1 || doc.AuthorizationServers[0] != issuer.URL {
		t.Errorf("the protected-resource metadata: %d %+v", resp.StatusCode, doc)
	}
}

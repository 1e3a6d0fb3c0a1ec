package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// The credentials -auth drives the sdk with, beside the bare handler:
//
//   - token: the host token (the bootstrap admin: compared in constant
//     time, nothing looked up);
//   - key: an API key with the role operator, made with the token before
//     the runs (POST /keys): read from the store once a second, and found
//     in the host's cache of keys in between;
//   - jwt: an RS256 JWT (2048-bit key, role operator) from an OIDC issuer
//     this process serves on loopback (a discovery document and a JWKS),
//     which agent.yaml's auth.oidc names. The same token every request, as
//     a client sends it: the host checks it in full once and then finds it
//     in its cache of verified tokens. Its floor is bare-jwt, the bare
//     handler sent the same token: ~0.8 KB more a request that any server
//     receives and parses (its ratio to bare is printed too).
//
// All are runs of the one sdk process, alternating with the others and
// the bare handler's in each round, so that their figures are of one run.
const (
	authToken = "token"
	authKey   = "key"
	authJWT   = "jwt"

	oidcAudience = "bench-api"
)

// parseAuth reads -auth: token first, then key and jwt if named.
func parseAuth(s string) ([]string, error) {
	seen := map[string]bool{}
	for _, a := range strings.Split(s, ",") {
		switch a = strings.TrimSpace(a); a {
		case authToken, authKey, authJWT:
			seen[a] = true
		default:
			return nil, fmt.Errorf("-auth: unknown credential %q: want token, key or jwt, comma-separated", a)
		}
	}
	out := []string{authToken} // the sdk's first runs are the token's: the targets are its
	for _, a := range []string{authKey, authJWT} {
		if seen[a] {
			out = append(out, a)
		}
	}
	return out, nil
}

// issuer is an OpenID Connect issuer on loopback: one RSA key, its
// discovery document and JWKS.
type issuer struct {
	url string
	key *rsa.PrivateKey
	srv *http.Server
}

func startIssuer() (*issuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the OIDC issuer: %w", err)
	}
	is := &issuer{url: "http://" + ln.Addr().String(), key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.url, "jwks_uri": is.url + "/jwks",
			"authorization_endpoint": is.url + "/authorize", "token_endpoint": is.url + "/token",
			"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "bench", Algorithm: "RS256", Use: "sig"}}})
	})
	is.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go is.srv.Serve(ln)
	return is, nil
}

// token signs a JWT for the API, good for an hour, with the role operator.
func (is *issuer) token() (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: is.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "bench"))
	if err != nil {
		return "", err
	}
	now := time.Now()
	return jwt.Signed(signer).Claims(map[string]any{"iss": is.url, "aud": oidcAudience, "sub": "bench", "name": "bench",
		"roles": []string{"operator"}, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}).Serialize()
}

// writeOIDCConfig writes the agent.yaml that admits the issuer's tokens.
func writeOIDCConfig(path, issuerURL string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, fmt.Appendf(nil, "auth:\n  oidc:\n    issuer: %s\n    audience: %s\n    rolesClaim: roles\n", issuerURL, oidcAudience), 0o644)
}

// createKey makes an API key with the role operator on the sdk server,
// with the host token, and returns its secret.
func createKey(ctx context.Context, base string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/"+slug+"/v1/keys", strings.NewReader(`{"name":"bench","roles":["operator"]}`))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("creating an API key: %w", err)
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	var created struct {
		Secret string `json:"secret"`
	}
	if err != nil || resp.StatusCode != http.StatusCreated || json.Unmarshal(answer, &created) != nil || created.Secret == "" {
		return "", fmt.Errorf("creating an API key: %s: %s %v", resp.Status, bytes.TrimSpace(answer), err)
	}
	return created.Secret, nil
}

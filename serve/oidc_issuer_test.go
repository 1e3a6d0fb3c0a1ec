package serve_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// fakeIssuer is an OpenID Connect issuer on loopback: its own RSA and EC
// keys, a discovery document (also as OAuth authorization server
// metadata), a JWKS that counts its fetches, and an authorization
// endpoint that signs the configured user in at once (authorization code
// with PKCE, S256) and a token endpoint that checks the verifier.
type fakeIssuer struct {
	t   testing.TB
	srv *httptest.Server
	URL string

	mu        sync.Mutex
	keys      map[string]crypto.Signer // by kid
	published []string                 // the kids the JWKS lists
	codes     map[string]authCode
	user      map[string]any // the claims of whoever signs in
	resources []string       // the resource= values tokens were asked for

	jwksFetches atomic.Int64
	hangs       map[string]chan struct{} // by path: requests that never get an answer (hangOn)
}

// hangOn makes the issuer never answer requests for path (until the test
// ends, or the client gives up); the channel gets a value as each arrives.
func (fi *fakeIssuer) hangOn(path string) <-chan struct{} {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	c := make(chan struct{}, 16)
	fi.hangs[path] = c
	return c
}

// hung holds a request for a path hangOn named, and reports whether it did.
func (fi *fakeIssuer) hung(w http.ResponseWriter, r *http.Request) bool {
	fi.mu.Lock()
	c := fi.hangs[r.URL.Path]
	fi.mu.Unlock()
	if c == nil {
		return false
	}
	select {
	case c <- struct{}{}:
	default:
	}
	<-r.Context().Done() // the client gave up, or the server closed
	return true
}

type authCode struct {
	clientID, redirect, challenge, resource, scope, nonce string
}

func newFakeIssuer(t testing.TB) *fakeIssuer {
	t.Helper()
	fi := &fakeIssuer{t: t, keys: map[string]crypto.Signer{}, codes: map[string]authCode{}, hangs: map[string]chan struct{}{},
		user: map[string]any{"sub": "alice", "name": "Alice", "email": "alice@example.com", "roles": []string{"operator"}}}
	fi.addKey("rsa-1", newRSA(t), true)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	fi.addKey("ec-1", ec, true)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", fi.discovery)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", fi.discovery)
	mux.HandleFunc("GET /jwks", fi.jwks)
	mux.HandleFunc("GET /authorize", fi.authorize)
	mux.HandleFunc("POST /token", fi.token)
	fi.srv = httptest.NewServer(mux)
	fi.URL = fi.srv.URL
	t.Cleanup(fi.srv.Close)
	return fi
}

func newRSA(t testing.TB) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// addKey adds a signing key, listed in the JWKS when publish is set.
func (fi *fakeIssuer) addKey(kid string, k crypto.Signer, publish bool) {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	fi.keys[kid] = k
	if publish {
		fi.published = append(fi.published, kid)
	}
}

func (fi *fakeIssuer) discovery(w http.ResponseWriter, r *http.Request) {
	if fi.hung(w, r) {
		return
	}
	writeJSONTest(w, map[string]any{
		"issuer": fi.URL, "authorization_endpoint": fi.URL + "/authorize", "token_endpoint": fi.URL + "/token",
		"jwks_uri": fi.URL + "/jwks", "response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256", "ES256"}, "code_challenge_methods_supported": []string{"S256"},
		"grant_types_supported": []string{"authorization_code"}, "token_endpoint_auth_methods_supported": []string{"none"},
		"scopes_supported": []string{"openid", "tools:call"},
	})
}

func (fi *fakeIssuer) jwks(w http.ResponseWriter, r *http.Request) {
	fi.jwksFetches.Add(1)
	if fi.hung(w, r) {
		return
	}
	fi.mu.Lock()
	defer fi.mu.Unlock()
	var set jose.JSONWebKeySet
	for _, kid := range fi.published {
		alg := "RS256"
		if _, ok := fi.keys[kid].(*ecdsa.PrivateKey); ok {
			alg = "ES256"
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: fi.keys[kid].Public(), KeyID: kid, Algorithm: alg, Use: "sig"})
	}
	writeJSONTest(w, set)
}

// authorize signs the user in at once and redirects with a code.
func (fi *fakeIssuer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("client_id") == "" {
		http.Error(w, "want response_type=code with a S256 code_challenge and a client_id", http.StatusBadRequest)
		return
	}
	code := base64.RawURLEncoding.EncodeToString(randBytes(16))
	fi.mu.Lock()
	fi.codes[code] = authCode{clientID: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"), resource: q.Get("resource"), scope: q.Get("scope"), nonce: q.Get("nonce")}
	fi.mu.Unlock()
	to, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	v := to.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	to.RawQuery = v.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

// token exchanges a code, checking its PKCE verifier, client and
// redirect: the access token's aud is the resource asked for (else the
// client), the ID token's the client.
func (fi *fakeIssuer) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	fi.mu.Lock()
	c, ok := fi.codes[r.Form.Get("code")]
	delete(fi.codes, r.Form.Get("code"))
	fi.mu.Unlock()
	clientID := r.Form.Get("client_id")
	if id, _, ok := r.BasicAuth(); ok && clientID == "" {
		clientID = id
	}
	sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
	switch {
	case !ok || r.Form.Get("grant_type") != "authorization_code":
		w.WriteHeader(http.StatusBadRequest)
		writeJSONTest(w, map[string]string{"error": "invalid_grant"})
		return
	case base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge || clientID != c.clientID || r.Form.Get("redirect_uri") != c.redirect:
		w.WriteHeader(http.StatusBadRequest)
		writeJSONTest(w, map[string]string{"error": "invalid_grant", "error_description": "PKCE verifier, client or redirect do not match"})
		return
	}
	aud := c.resource
	if aud == "" {
		aud = c.clientID
	}
	fi.mu.Lock()
	fi.resources = append(fi.resources, c.resource)
	user := map[string]any{}
	for k, v := range fi.user {
		user[k] = v
	}
	fi.mu.Unlock()
	access := fi.claims(user, aud)
	access["scope"] = c.scope
	id := fi.claims(user, c.clientID)
	if c.nonce != "" {
		id["nonce"] = c.nonce
	}
	writeJSONTest(w, map[string]any{"access_token": fi.sign("rsa-1", jose.RS256, access), "token_type": "Bearer", "expires_in": 300,
		"id_token": fi.sign("rsa-1", jose.RS256, id), "scope": c.scope})
}

// claims are a token's for aud from this issuer, valid for five minutes.
func (fi *fakeIssuer) claims(user map[string]any, aud string) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": fi.URL, "aud": aud, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()}
	for k, v := range user {
		c[k] = v
	}
	return c
}

// sign signs claims with the key kid under alg.
func (fi *fakeIssuer) sign(kid string, alg jose.SignatureAlgorithm, claims map[string]any) string {
	fi.t.Helper()
	fi.mu.Lock()
	k := fi.keys[kid]
	fi.mu.Unlock()
	var key any = k
	if alg == jose.HS256 {
		// The classic confusion: the issuer's public key as an HMAC secret.
		key = fi.publicDER(kid)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		fi.t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := signer.Sign(payload)
	if err != nil {
		fi.t.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		fi.t.Fatal(err)
	}
	return s
}

func (fi *fakeIssuer) publicDER(kid string) []byte {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	pub := fi.keys[kid].Public().(*rsa.PublicKey)
	return pub.N.Bytes()
}

// unsigned is claims as a JWT with alg none.
func unsigned(claims map[string]any) string {
	h, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT"})
	p, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(p) + "."
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func writeJSONTest(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

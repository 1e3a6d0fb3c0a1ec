package serve_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// BenchmarkAuthJWT measures what checking a bearer JWT costs per request,
// in process, against the host token and an API key: a direct call of a
// tool and the tool list, with an RS256 (2048-bit) and an ES256 token from
// the fake issuer. The keys are fetched once, before the loop. rs256 and
// es256 send the same token every time (after the first, a hit of the
// verified-token cache: a SHA-256 and a map read); the -fresh variants send
// a different token each time (up to 2048 of them, so run at most
// -benchtime 2048x), which is go-oidc's whole check — parsing, the
// signature, iss, aud, exp — and reading the claims. The ratios jwt/token
// are the figures to watch.
//
//	go test ./serve -run '^$' -bench BenchmarkAuthJWT -benchtime 2000x
func BenchmarkAuthJWT(b *testing.B) {
	fi := newFakeIssuer(b)
	bundle, _ := setupOIDC(b, fi, nil)
	claims := fi.claims(fi.user, oidcAudience)
	fresh := func(kid string, alg jose.SignatureAlgorithm) []string {
		out := make([]string, 2048)
		for i := range out {
			out[i] = fi.sign(kid, alg, with(claims, map[string]any{"jti": fmt.Sprint(kid, i, time.Now().UnixNano())}))
		}
		return out
	}
	for _, route := range []struct{ name, method, path, body string }{
		{"call", "POST", "/tools/echo", `{"input":{}}`},
		{"tools", "GET", "/tools", ""},
	} {
		for _, cred := range []struct {
			name   string
			tokens func() []string
		}{
			{"token", func() []string { return []string{testToken} }},
			{"key", func() []string { return []string{bundle.keys["operator"].Secret} }},
			{"rs256", func() []string { return []string{fi.sign("rsa-1", jose.RS256, claims)} }},
			{"es256", func() []string { return []string{fi.sign("ec-1", jose.ES256, claims)} }},
			{"rs256-fresh", func() []string { return fresh("rsa-1", jose.RS256) }},
			{"es256-fresh", func() []string { return fresh("ec-1", jose.ES256) }},
		} {
			b.Run(route.name+"/"+cred.name, func(b *testing.B) {
				b.ReportAllocs()
				tokens := cred.tokens() // new ones for each run: none is cached yet
				i := 0
				for b.Loop() {
					req := httptest.NewRequest(route.method, "/agent/v1"+route.path, strings.NewReader(route.body))
					req.Header.Set("Authorization", "Bearer "+tokens[i%len(tokens)])
					i++
					w := httptest.NewRecorder()
					bundle.srv.ServeHTTP(w, req)
					if w.Code != http.StatusOK {
						b.Fatalf("%s %s: %d %s", route.method, route.path, w.Code, w.Body)
					}
				}
			})
		}
	}
}

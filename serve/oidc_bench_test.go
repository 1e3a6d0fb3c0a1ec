package serve_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// BenchmarkAuthJWT measures what checking a bearer JWT costs per request,
// in process, against the host token: a direct call of a tool and the
// tool list, with an RS256 (2048-bit) and an ES256 token from the fake
// issuer. The keys are cached (fetched once, before the loop): what is
// measured is go-oidc's checks — parsing, the signature, iss, aud, exp —
// and reading the claims, on every request. The ratio jwt/token is the
// figure to watch.
//
//	go test ./serve -run '^$' -bench BenchmarkAuthJWT -benchtime 2000x
func BenchmarkAuthJWT(b *testing.B) {
	fi := newFakeIssuer(b)
	bundle, _ := setupOIDC(b, fi, nil)
	claims := fi.claims(fi.user, oidcAudience)
	for _, route := range []struct{ name, method, path, body string }{
		{"call", "POST", "/tools/echo", `{"input":{}}`},
		{"tools", "GET", "/tools", ""},
	} {
		for _, cred := range []struct{ name, token string }{
			{"token", testToken},
			{"rs256", fi.sign("rsa-1", jose.RS256, claims)},
			{"es256", fi.sign("ec-1", jose.ES256, claims)},
			{"key", bundle.keys["operator"].Secret},
		} {
			b.Run(route.name+"/"+cred.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					req := httptest.NewRequest(route.method, "/agent/v1"+route.path, strings.NewReader(route.body))
					req.Header.Set("Authorization", "Bearer "+cred.token)
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

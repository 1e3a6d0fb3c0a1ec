package serve_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/internal/pgtest"
	"github.com/agentsdk/agentsdk/store/postgres"
)

// BenchmarkAuth measures what checking a credential costs per request, in
// process (no network): a direct call of a tool and the tool list, with
// the host token (compared in constant time, nothing looked up) and with
// an API key (read from SQLite once a second and found in the host's
// cache of keys in between, keys_cache.go: the SHA-256 of its secret
// compared in constant time, its expiry checked; last use written at most
// once a minute). The ratio key/token is the figure to watch.
//
//	go test ./serve -run '^$' -bench BenchmarkAuth -benchtime 2000x
func BenchmarkAuth(b *testing.B) { benchmarkAuth(b, setupAccess(b)) }

// BenchmarkAuthPostgres is BenchmarkAuth with the host on PostgreSQL
// (TEST_DATABASE_URL), where a key's read, once a second, is a round trip.
func BenchmarkAuthPostgres(b *testing.B) {
	st, err := postgres.Open(context.Background(), pgtest.Schema(b))
	if err != nil {
		b.Fatal(err)
	}
	benchmarkAuth(b, setupAccessOn(b, st, nil))
}

func benchmarkAuth(b *testing.B, bundle *accessBundle) {
	for _, route := range []struct{ name, method, path, body string }{
		{"call", "POST", "/tools/echo", `{"input":{}}`},
		{"tools", "GET", "/tools", ""},
	} {
		for _, cred := range []struct{ name, token string }{{"token", testToken}, {"key", bundle.keys["operator"].Secret}} {
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

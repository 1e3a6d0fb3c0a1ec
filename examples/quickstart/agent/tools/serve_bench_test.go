package tools

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentsdk/agentsdk/internal/textlog"
	"github.com/agentsdk/agentsdk/serve"
)

// BenchmarkServeDirectCall measures a direct HTTP call of inspect_pr through
// the serve host's handler, in process (no socket): auth, routing, reading
// the body, the call, the envelope and the request log, as bench/load's
// sdk server runs them.
func BenchmarkServeDirectCall(b *testing.B) {
	srv, err := serve.New(benchHost(b), &serve.Options{Slug: "quickstart", Token: "bench-token", Logger: slog.New(textlog.New(io.Discard))})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("POST", "/quickstart/v1/tools/inspect_pr", bytes.NewReader(benchBody))
		r.Header.Set("Authorization", "Bearer bench-token")
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}

var benchBody = []byte(`{"input":` + string(benchInput) + `}`)

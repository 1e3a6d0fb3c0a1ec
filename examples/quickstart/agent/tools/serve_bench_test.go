package tools

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentsdk/agentsdk/internal/barehandler"
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
	benchServe(b, srv)
}

// BenchmarkServeDirectCallBare is BenchmarkServeDirectCall's yardstick:
// the same requests and recorder, served by bench/load's bare handler (no
// auth, validation, envelope or log), so that the difference of the two is
// what the serve host adds to a call in process.
func BenchmarkServeDirectCallBare(b *testing.B) {
	benchServe(b, http.HandlerFunc(barehandler.ServeHTTP))
}

// benchServe measures h answering a direct call of inspect_pr.
func benchServe(b *testing.B, h http.Handler) {
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("POST", "/quickstart/v1/tools/inspect_pr", bytes.NewReader(benchBody))
		r.Header.Set("Authorization", "Bearer bench-token")
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}

var benchBody = []byte(`{"input":` + string(benchInput) + `}`)

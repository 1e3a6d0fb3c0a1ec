package tools

import (
	"bytes"
	"encoding/json"
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

// BenchmarkServeDirectCallBare is BenchmarkServeDirectCall's yardstick:
// the same requests and recorder, served by bench/load's bare handler (no
// auth, validation, envelope or log), so that the difference of the two is
// what the serve host adds to a call in process.
func BenchmarkServeDirectCallBare(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("POST", "/quickstart/v1/tools/inspect_pr", bytes.NewReader(benchBody))
		r.Header.Set("Authorization", "Bearer bench-token")
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		bareHandler(w, r)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}

// bareHandler is bench/load's bare handler.
func bareHandler(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Input struct {
			PRURL string `json:"prUrl"`
		} `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	result := map[string]any{"prUrl": req.Input.PRURL, "checks": []string{"unit", "lint"}, "ready": true}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

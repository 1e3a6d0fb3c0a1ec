package main_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// With the standard OTEL_EXPORTER_OTLP_* variables set, the host exports its
// spans and metrics over OTLP/HTTP: here to a fake collector speaking that
// protocol's HTTP side.
func TestOTLPExport(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		if r.Header.Get("Content-Type") == "application/x-protobuf" && len(body) > 0 {
			got[r.URL.Path]++
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	s := startServerEnv(t, shared, []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL,
		"OTEL_BSP_SCHEDULE_DELAY=100",
		"OTEL_METRIC_EXPORT_INTERVAL=200",
	})
	if status, v, _ := s.request(t, "POST", "/tools/hello", s.token, `{"input":{"name":"otel"}}`); status != 200 {
		t.Fatalf("call: %d %v", status, v)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		traces, metrics := got["/v1/traces"], got["/v1/metrics"]
		mu.Unlock()
		if traces > 0 && metrics > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector got %v", got)
		}
	}
}

package main

// In-process benchmarks of one tools/call of echo, no sockets: each
// iteration builds the request, serves it with the handler's ServeHTTP
// into an httptest.ResponseRecorder, and nothing else. allocs/op and B/op
// include the request and the recorder (BenchmarkHarness is that part
// alone). The first answer of each is checked.
//
//	go test ./bench/mcp -run '^$' -bench . -benchtime 2000x
//
// Ours and SDKStateless run once per protocol version: 2025-11-25 (the
// plain request), and 2026-07-28 as the SDK's own client sends it to a
// stateless server (the request recorded from that client at setup).

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveOnce serves one POST to path with header and body.
func serveOnce(h http.Handler, path string, header http.Header, body []byte) *httptest.ResponseRecorder {
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1"+path, bytes.NewReader(body))
	req.Header = header // read-only for the handlers
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// benchCalls serves tmpl's call, with a new id each time, and checks the
// first answer.
func benchCalls(b *testing.B, h http.Handler, tmpl *callTemplate) {
	b.ReportAllocs()
	var id int64
	for b.Loop() {
		id++
		w := serveOnce(h, mcpPath, tmpl.header, tmpl.body(id))
		if id == 1 {
			if _, err := checkCallAnswer(w.Code, w.Header().Get("Content-Type"), w.Body.Bytes(), id, benchText); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// ours returns our server, with request logs written to a file as
// agent-sdk serve writes them.
func ours(b *testing.B) http.Handler {
	dir := b.TempDir()
	logFile, err := os.Create(filepath.Join(dir, "requests.log"))
	if err != nil {
		b.Fatal(err)
	}
	srv, closeHost, err := newOurs(filepath.Join(dir, "state"), logFile)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { closeHost(); logFile.Close() })
	return srv
}

// capture returns the tools/call the SDK's client sends h's MCP endpoint
// when speaking version, recorded over a loopback server.
func capture(b *testing.B, h http.Handler, version string) *callTemplate {
	ts := httptest.NewServer(h)
	defer ts.Close()
	tmpl, _, _, err := captureCall(context.Background(), ts.URL+mcpPath, version, benchText)
	if err != nil {
		b.Fatal(err)
	}
	return tmpl
}

// BenchmarkToolsCallOurs is a tools/call through our endpoint
// (serve.Server, /bench/mcp, bearer token, request log).
func BenchmarkToolsCallOurs(b *testing.B) {
	b.Run(protocolDefault, func(b *testing.B) {
		benchCalls(b, ours(b), plainCall(protocolDefault, token, "", benchText))
	})
	b.Run(protocolNew, func(b *testing.B) {
		h := ours(b)
		benchCalls(b, h, capture(b, h, protocolNew))
	})
}

// BenchmarkToolsCallSDKDefault is a tools/call on the MCP Go SDK's default
// server (stateful, SSE answers) in a session made once by initialize,
// with the tool added raw (Server.AddTool) and typed (mcp.AddTool): see
// newSDKServer.
func BenchmarkToolsCallSDKDefault(b *testing.B) {
	b.Run("raw", func(b *testing.B) { benchSDKDefault(b, false) })
	b.Run("typed", func(b *testing.B) { benchSDKDefault(b, true) })
}

func benchSDKDefault(b *testing.B, typed bool) {
	h := newSDKHandler(typed, nil)
	header := mcpHeader(protocolDefault, "", "")
	w := serveOnce(h, mcpPath, header, initializeBody(1, protocolDefault))
	session := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || session == "" {
		b.Fatalf("initialize answered %d, session %q: %s", w.Code, session, w.Body)
	}
	header.Set("Mcp-Session-Id", session)
	if w := serveOnce(h, mcpPath, header, []byte(initializedBody)); w.Code != http.StatusAccepted {
		b.Fatalf("notifications/initialized answered %d: %s", w.Code, w.Body)
	}
	benchCalls(b, h, plainCall(protocolDefault, "", session, benchText))
}

// BenchmarkToolsCallSDKStateless is a tools/call on the MCP Go SDK's
// server with Stateless and JSONResponse, our endpoint's options, and the
// tool added raw, as our endpoint adds its tools.
func BenchmarkToolsCallSDKStateless(b *testing.B) {
	h := newSDKHandler(false, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	b.Run(protocolDefault, func(b *testing.B) {
		benchCalls(b, h, plainCall(protocolDefault, "", "", benchText))
	})
	b.Run(protocolNew, func(b *testing.B) {
		benchCalls(b, h, capture(b, h, protocolNew))
	})
}

// BenchmarkDirectCall is our direct HTTP call of the same tool, POST
// /bench/v1/tools/echo, through serve.Server.
func BenchmarkDirectCall(b *testing.B) {
	h := ours(b)
	header, body := directCall(benchText)
	b.ReportAllocs()
	first := true
	for b.Loop() {
		w := serveOnce(h, directPath, header, body)
		if first {
			first = false
			if err := checkDirectAnswer(w.Code, w.Body.Bytes(), benchText); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkHarness is the benchmarks' own part: a request and a recorder
// served by a handler that writes a small answer.
func BenchmarkHarness(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	})
	tmpl := plainCall(protocolDefault, token, "", benchText)
	b.ReportAllocs()
	var id int64
	for b.Loop() {
		id++
		w := serveOnce(h, mcpPath, tmpl.header, tmpl.body(id))
		if id == 1 && (w.Code != http.StatusOK || w.Body.String() != `{"ok":true}`) {
			b.Fatal(strconv.Itoa(w.Code) + " " + w.Body.String())
		}
	}
}

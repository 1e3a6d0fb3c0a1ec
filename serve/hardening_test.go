package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/channel"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/serveflags"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/tool"
)

// The hardening tests run the server as agents do (ListenAndServe, real
// connections on loopback) with short limits, and attack it as an outsider
// would: no token, slow bodies, idle connections, many event streams.

// hardened is an agent served by ListenAndServe with the limits a test
// asks for. Its tool block waits until released (or its call ends).
type hardened struct {
	addr    string // 127.0.0.1:port
	base    string // http://127.0.0.1:port
	srv     *serve.Server
	started chan struct{} // a block call started
	release func()        // lets every block call return
	hooked  atomic.Int32  // requests the hook channel's handlers ran
}

func serveHardened(t *testing.T, o serve.Options, lo serve.ListenOptions) *hardened {
	t.Helper()
	return serveHardenedWith(t, o, lo, hardenedExtras{})
}

// hardenedExtras are what a test adds to the hardened agent: tools beside
// quick and block, and the host's meter provider.
type hardenedExtras struct {
	tools []*tool.Tool
	meter metric.MeterProvider
}

func serveHardenedWith(t *testing.T, o serve.Options, lo serve.ListenOptions, x hardenedExtras) *hardened {
	t.Helper()
	hd := &hardened{started: make(chan struct{}, 1000)}
	released := make(chan struct{})
	hd.release = sync.OnceFunc(func() { close(released) })
	quick, _ := tool.New("quick", tool.Config{Description: "Answers at once."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "done", nil })
	block, _ := tool.New("block", tool.Config{Description: "Waits until released."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			hd.started <- struct{}{}
			select {
			case <-released:
			case <-ctx.Done():
			}
			return "released", nil
		})
	set, err := tool.NewSet(append([]*tool.Tool{quick, block}, x.tools...)...)
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(set, &host.Options{StateRoot: t.TempDir(), Channels: []*channel.Channel{hookChannel(t, &hd.hooked)}, MeterProvider: x.meter})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	o.Slug, o.Token = "agent", testToken
	srv, err := serve.New(h, &o)
	if err != nil {
		t.Fatal(err)
	}
	hd.srv = srv
	ctx, cancel := context.WithCancel(context.Background())
	listening := make(chan net.Addr, 1)
	lo.OnListen = func(a net.Addr) { listening <- a }
	if lo.DrainTimeout == 0 {
		lo.DrainTimeout = 5 * time.Second
	}
	served := make(chan error, 1)
	go func() { served <- serve.ListenAndServe(ctx, "127.0.0.1:0", srv, &lo) }()
	select {
	case a := <-listening:
		hd.addr = a.String()
	case err := <-served:
		t.Fatal(err)
	}
	hd.base = "http://" + hd.addr
	t.Cleanup(func() {
		hd.release()
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ListenAndServe: %v", err)
		}
		h.Close()
	})
	return hd
}

// newClient is an HTTP client of its own connections, closed with the test.
func newClient(t *testing.T) *http.Client {
	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: 100}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

type answer struct {
	status int
	header http.Header
	close  bool // the server closes the connection after it
	code   string
	body   string
}

// send makes one request; auth is the Authorization header ("" for none).
func send(t *testing.T, c *http.Client, method, url, auth, body string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, close: resp.Close, body: string(b)}
	var e api.ErrorResponse
	if json.Unmarshal(b, &e) == nil && e.Error != nil {
		a.code = string(e.Error.Code)
	}
	return a
}

// raw is one connection written and read by hand.
type raw struct {
	net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *raw {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &raw{Conn: c, br: bufio.NewReader(c)}
}

// response reads one answer, waiting up to d.
func (r *raw) response(t *testing.T, d time.Duration) (*http.Response, []byte) {
	t.Helper()
	r.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(r.br, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}

// closedWithin reports whether the server closes the connection within d
// (reading and dropping whatever else it sends).
func (r *raw) closedWithin(d time.Duration) bool {
	r.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, r.br)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// isOpen reports whether the server still holds the connection: a read
// waits rather than ending.
func (r *raw) isOpen() bool { return !r.closedWithin(50 * time.Millisecond) }

func codeOf(b []byte) string {
	var e api.ErrorResponse
	if json.Unmarshal(b, &e) != nil || e.Error == nil {
		return ""
	}
	return string(e.Error.Code)
}

// concrete turns a mounted pattern ("POST /agent/v1/tools/{name}") into a
// method and a path that it matches.
func concrete(pattern string) (method, path string) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = "", pattern
	}
	path = strings.TrimSuffix(path, "{$}") // an exact match: /agent/{$} is /agent/
	return method, regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(path, "x")
}

// Every route the server mounts, read from the router itself (so a route
// added later is walked too), refuses a request without the token, with a
// wrong one, and with another scheme: 401 unauthorized, and the connection
// closed so that no body is waited for. A path-cleaning redirect to any
// route answers 401 as well. Public routes answer without a token: /healthz,
// and the playground's sign-in page and form, script and style sheet, and
// its page (which sends a request without its cookie to the sign-in page).
func TestEveryRouteNeedsToken(t *testing.T) {
	hd := serveHardened(t, serve.Options{}, serve.ListenOptions{})
	c := newClient(t)
	mounted := serve.MountedPatterns(hd.srv)
	public := map[string]bool{}
	for _, r := range api.Routes {
		if !slices.Contains(mounted, r.Pattern("agent")) {
			t.Errorf("route %s (%s) is not mounted", r.Name, r.Pattern("agent"))
		}
		if r.Public {
			public[r.Pattern("agent")] = true
		}
	}
	if len(mounted) <= len(api.Routes) {
		t.Fatalf("mounted %d patterns for %d routes: the fallback is missing", len(mounted), len(api.Routes))
	}
	// The playground's public routes are answered without following a
	// redirect: its page must send a request without its cookie to the
	// sign-in page, not be served.
	noFollow := newClient(t)
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	wrong := []string{"", "Bearer wrong-token", "bearer wrong-token", "Bearer " + testToken + "x", "Bearer " + testToken[:len(testToken)-1],
		"Basic " + testToken, "Bearer" + testToken, testToken, "Bearer"}
	walked := 0
	for _, pattern := range mounted {
		method, path := concrete(pattern)
		methods := []string{method}
		paths := []string{path}
		if method == "" { // the fallback: anything no route takes
			methods = []string{"GET", "POST", "PUT", "DELETE", "PATCH"}
			paths = []string{"/agent/v1/nothing", "/other/v1/tools", "/", "/agent/v1/tools/quick"}
		}
		for _, m := range methods {
			for _, p := range paths {
				body := ""
				if m == "POST" || m == "PUT" || m == "PATCH" {
					body = `{"input":{}}`
				}
				if public[pattern] {
					if a := send(t, c, m, hd.base+p, "", body); a.status != 200 {
						t.Errorf("%s %s (public) without a token: %d %s", m, p, a.status, a.body)
					}
				} else if serve.Public(hd.srv, pattern) {
					// The playground's sign-in page and form, assets, and
					// page: 200, 303 (the page, to the sign-in page), or 401
					// (the form, posted without the token); never a cookie,
					// never the page itself (it holds a CSRF token).
					a := send(t, noFollow, m, hd.base+p, "", body)
					signin := m == "POST" && strings.HasSuffix(p, "/playground/signin")
					ok := a.status == 200 || a.status == 303 && strings.HasPrefix(a.header.Get("Location"), "/agent/") || a.status == 401 && signin
					if !ok || a.header.Get("Set-Cookie") != "" || strings.Contains(a.body, `name="csrf-token"`) ||
						a.header.Get("X-Content-Type-Options") != "nosniff" || a.header.Get("Content-Security-Policy") == "" {
						t.Errorf("%s %s (playground, public) without a token: %d %s (headers %v)", m, p, a.status, a.body, a.header)
					}
				} else {
					for _, auth := range wrong {
						a := send(t, c, m, hd.base+p, auth, body)
						// A channel route with a verifier of its own refuses
						// by it: no bearer challenge.
						challenge := serve.Verified(hd.srv, pattern) || a.header.Get("WWW-Authenticate") != ""
						if a.status != 401 || a.code != "unauthorized" || !a.close || !challenge ||
							a.header.Get("X-Content-Type-Options") != "nosniff" {
							t.Errorf("%s %s with Authorization %q: %d %s (close %v, headers %v)", m, p, auth, a.status, a.body, a.close, a.header)
						}
						walked++
					}
				}
				// Path-cleaning redirects: none is answered before the token is checked.
				for _, unclean := range uncleanPaths(p) {
					if a := send(t, c, m, hd.base+unclean, "", body); a.status != 401 || a.code != "unauthorized" {
						t.Errorf("%s %s without a token: %d %s; want 401 before any redirect", m, unclean, a.status, a.body)
					}
					walked++
				}
			}
		}
	}
	if hd.hooked.Load() != 0 {
		t.Errorf("a channel handler ran %d times for refused requests", hd.hooked.Load())
	}
	t.Logf("walked %d patterns (%d routes, the channel routes and the fallback): %d refused requests", len(mounted), len(api.Routes), walked)
}

// uncleanPaths are paths the mux would redirect to p.
func uncleanPaths(p string) []string {
	i := strings.LastIndex(p, "/")
	if i <= 0 {
		return []string{"/." + p, "/x/.." + p}
	}
	return []string{p[:i] + "/." + p[i:], p[:i] + "/" + p[i:], p[:i] + "/x/.." + p[i:]}
}

// A redirect is still answered, with the token.
func TestRedirectAfterToken(t *testing.T) {
	hd := serveHardened(t, serve.Options{}, serve.ListenOptions{})
	c := newClient(t)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if a := send(t, c, "GET", hd.base+"/agent/v1/./tools", "", ""); a.status != 401 {
		t.Errorf("without a token: %d %s", a.status, a.body)
	}
	a := send(t, c, "GET", hd.base+"/agent/v1/./tools", "Bearer "+testToken, "")
	if a.status != http.StatusTemporaryRedirect || a.header.Get("Location") != "/agent/v1/tools" {
		t.Errorf("with the token: %d, Location %q", a.status, a.header.Get("Location"))
	}
}

// The Bearer scheme is case-insensitive (RFC 9110, 11.1); the token is not.
func TestBearerSchemeAnyCase(t *testing.T) {
	hd := serveHardened(t, serve.Options{}, serve.ListenOptions{})
	c := newClient(t)
	for _, auth := range []string{"Bearer " + testToken, "bearer " + testToken, "BEARER " + testToken, "bEaReR " + testToken, "Bearer  " + testToken + " "} {
		if a := send(t, c, "GET", hd.base+"/agent/v1/tools", auth, ""); a.status != 200 {
			t.Errorf("Authorization %q: %d %s", auth, a.status, a.body)
		}
	}
	if a := send(t, c, "GET", hd.base+"/agent/v1/tools", "bearer "+strings.ToUpper(testToken), ""); a.status != 401 {
		t.Errorf("a token in another case: %d", a.status)
	}
}

// JSON answers, errors and event streams say X-Content-Type-Options:
// nosniff.
func TestNosniff(t *testing.T) {
	hd := serveHardened(t, serve.Options{}, serve.ListenOptions{})
	c := newClient(t)
	auth := "Bearer " + testToken
	a := send(t, c, "POST", hd.base+"/agent/v1/session", auth, `{}`)
	var created api.TurnStartedResponse
	if a.status != 201 || json.Unmarshal([]byte(a.body), &created) != nil {
		t.Fatalf("creating a session: %d %s", a.status, a.body)
	}
	for _, tt := range []struct{ method, path, auth, body string }{
		{"GET", "/healthz", "", ""},
		{"GET", "/agent/v1/tools", auth, ""},
		{"GET", "/agent/v1/openapi.json", auth, ""},
		{"POST", "/agent/v1/tools/quick", auth, `{"input":{}}`},
		{"POST", "/agent/v1/tools/nope", auth, `{"input":{}}`},
		{"GET", "/agent/v1/tools", "", ""},
		{"GET", "/agent/v1/nothing", auth, ""},
		{"GET", "/agent/v1/session/" + created.SessionID + "/events?follow=false", auth, ""},
	} {
		if a := send(t, c, tt.method, hd.base+tt.path, tt.auth, tt.body); a.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: %d without nosniff (%v)", tt.method, tt.path, a.status, a.header)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", hd.base+"/agent/v1/session/"+created.SessionID+"/events", nil)
	req.Header.Set("Authorization", auth)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("event stream: %d, headers %v", resp.StatusCode, resp.Header)
	}
}

// A body that does not come: without the token it is never waited for (401
// and the connection closed at once, well within the body timeout); with
// it, it is cut at the body timeout (408 request_timeout). Headers that do
// not come are cut at the header timeout.
func TestSlowBodyIsCut(t *testing.T) {
	const bodyTimeout, headerTimeout = 1500 * time.Millisecond, time.Second
	hd := serveHardened(t, serve.Options{BodyTimeout: bodyTimeout}, serve.ListenOptions{HeaderTimeout: headerTimeout})
	slowBody := func(t *testing.T, auth string, length int) (*http.Response, []byte, time.Duration) {
		t.Helper()
		r := dialRaw(t, hd.addr)
		start := time.Now()
		head := fmt.Sprintf("POST /agent/v1/tools/quick HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", length)
		if auth != "" {
			head += "Authorization: " + auth + "\r\n"
		}
		if _, err := io.WriteString(r, head+"\r\n{"); err != nil {
			t.Fatal(err)
		}
		resp, b := r.response(t, 10*time.Second)
		if !r.closedWithin(10 * time.Second) {
			t.Fatal("the connection is still open")
		}
		return resp, b, time.Since(start)
	}
	for _, length := range []int{100000, 10 << 20} {
		t.Run(fmt.Sprintf("no token, %d bytes declared", length), func(t *testing.T) {
			resp, b, held := slowBody(t, "", length)
			if resp.StatusCode != 401 || codeOf(b) != "unauthorized" || !resp.Close {
				t.Errorf("%d %s (close %v)", resp.StatusCode, b, resp.Close)
			}
			if held >= bodyTimeout {
				t.Errorf("held %v, not less than the body timeout %v", held, bodyTimeout)
			}
			t.Logf("an unauthenticated slow body (%d bytes declared, 1 sent) was held %v before the connection was closed (body timeout %v)", length, held.Round(time.Millisecond), bodyTimeout)
		})
	}
	t.Run("wrong token, chunked", func(t *testing.T) {
		r := dialRaw(t, hd.addr)
		start := time.Now()
		io.WriteString(r, "POST /agent/v1/tools/quick HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n")
		resp, _ := r.response(t, 10*time.Second)
		closed := r.closedWithin(10 * time.Second)
		if held := time.Since(start); resp.StatusCode != 401 || !closed || held >= bodyTimeout {
			t.Errorf("%d, closed %v after %v", resp.StatusCode, closed, held)
		}
	})
	t.Run("token", func(t *testing.T) {
		resp, b, held := slowBody(t, "Bearer "+testToken, 100)
		if resp.StatusCode != 408 || codeOf(b) != "request_timeout" || !resp.Close {
			t.Errorf("%d %s (close %v)", resp.StatusCode, b, resp.Close)
		}
		if held < bodyTimeout || held > bodyTimeout+3*time.Second {
			t.Errorf("held %v, want about the body timeout %v", held, bodyTimeout)
		}
		t.Logf("an authenticated slow body was cut after %v (body timeout %v)", held.Round(time.Millisecond), bodyTimeout)
	})
	t.Run("headers", func(t *testing.T) {
		r := dialRaw(t, hd.addr)
		start := time.Now()
		io.WriteString(r, "POST /agent/v1/tools/quick HTTP/1.1\r\nHost: x\r\n")
		if !r.closedWithin(10 * time.Second) {
			t.Fatal("the connection is still open")
		}
		held := time.Since(start)
		if held < headerTimeout || held > headerTimeout+3*time.Second {
			t.Errorf("held %v, want about the header timeout %v", held, headerTimeout)
		}
		t.Logf("headers that never end were cut after %v (header timeout %v)", held.Round(time.Millisecond), headerTimeout)
	})
	// A body that arrives in time is served, on a connection kept alive.
	c := newClient(t)
	if a := send(t, c, "POST", hd.base+"/agent/v1/tools/quick", "Bearer "+testToken, `{"input":{}}`); a.status != 200 || a.close {
		t.Errorf("a whole body: %d %s (close %v)", a.status, a.body, a.close)
	}
}

// A declared length over the limit is refused before a byte of the body is
// read: 413 at once, not after the body timeout.
func TestEarlyTooLarge(t *testing.T) {
	hd := serveHardened(t, serve.Options{MaxBodyBytes: 1 << 10}, serve.ListenOptions{})
	for _, length := range []int{2 << 10, 1 << 30} {
		r := dialRaw(t, hd.addr)
		start := time.Now()
		fmt.Fprintf(r, "POST /agent/v1/tools/quick HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", testToken, length)
		resp, b := r.response(t, 10*time.Second)
		took := time.Since(start)
		if resp.StatusCode != 413 || codeOf(b) != "body_too_large" || !resp.Close || took > 5*time.Second {
			t.Errorf("Content-Length %d: %d %s (close %v) after %v", length, resp.StatusCode, b, resp.Close, took)
		}
		if !r.closedWithin(10 * time.Second) {
			t.Errorf("Content-Length %d: the connection is still open", length)
		}
	}
	// Without a declared length, the limit holds as the body is read.
	c := newClient(t)
	req, _ := http.NewRequest("POST", hd.base+"/agent/v1/tools/quick", io.MultiReader(strings.NewReader(`{"input":{"x":"`), strings.NewReader(strings.Repeat("a", 4<<10)), strings.NewReader(`"}}`)))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if req.ContentLength != 0 || resp.StatusCode != 413 || codeOf(b) != "body_too_large" {
		t.Errorf("chunked (length %d): %d %s", req.ContentLength, resp.StatusCode, b)
	}
	// Without the token, 401 comes first.
	r := dialRaw(t, hd.addr)
	io.WriteString(r, "POST /agent/v1/tools/quick HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n")
	if resp, _ := r.response(t, 10*time.Second); resp.StatusCode != 401 {
		t.Errorf("without the token: %d", resp.StatusCode)
	}
}

// capConns is the connection cap TestIdleConnectionsOverTheCap holds
// against four times as many idle connections; try -hardening.conns=1024
// (the default cap) for the full size.
var capConns = flag.Int("hardening.conns", 64, "TestIdleConnectionsOverTheCap: the connection cap")

// Idle connections over the cap (silent, a head that never ends, or a body
// that never comes without a token) take the place of the ones idle
// longest: the server never holds more than the cap, and an authenticated
// call on a new connection still answers at once.
func TestIdleConnectionsOverTheCap(t *testing.T) {
	maxConns := *capConns
	over := 3 * maxConns
	hd := serveHardened(t, serve.Options{}, serve.ListenOptions{MaxConns: maxConns})
	idle := make([]*raw, 0, maxConns+over)
	for i := range maxConns + over {
		r := dialRaw(t, hd.addr)
		switch i % 3 {
		case 1: // a request head that never ends
			io.WriteString(r, "POST /agent/v1/tools/quick HTTP/1.1\r\nHost: x\r\n")
		case 2: // the attack: a body that never comes, without a token
			io.WriteString(r, "POST /agent/v1/tools/quick HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\na")
		}
		idle = append(idle, r)
	}
	var latencies []time.Duration
	for range 20 {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
		start := time.Now()
		a := send(t, c, "POST", hd.base+"/agent/v1/tools/quick", "Bearer "+testToken, `{"input":{}}`)
		latencies = append(latencies, time.Since(start))
		if a.status != 200 {
			t.Fatalf("an authenticated call at the cap: %d %s", a.status, a.body)
		}
	}
	var held atomic.Int64
	var wg sync.WaitGroup
	for _, r := range idle {
		wg.Go(func() {
			if r.isOpen() {
				held.Add(1)
			}
		})
	}
	wg.Wait()
	if held.Load() > int64(maxConns) {
		t.Errorf("the server holds %d of %d idle connections, over the cap of %d", held.Load(), len(idle), maxConns)
	}
	if held.Load() == 0 {
		t.Errorf("the server holds none of the idle connections; it should keep up to the cap")
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	if p := latencies[len(latencies)-1]; p > 2*time.Second {
		t.Errorf("the slowest authenticated call took %v", p)
	}
	t.Logf("%d idle connections against a cap of %d: the server holds %d, closed %d; 20 authenticated calls on new connections meanwhile: median %v, max %v",
		len(idle), maxConns, held.Load(), int64(len(idle))-held.Load(), latencies[len(latencies)/2].Round(time.Microsecond), latencies[len(latencies)-1].Round(time.Microsecond))
}

// When every connection the cap allows has a request in progress, one more
// is refused clearly: 503 over_capacity, Retry-After, Connection: close.
// Once one is free, calls answer again.
func TestBusyConnectionsAtTheCap(t *testing.T) {
	const maxConns = 4
	hd := serveHardened(t, serve.Options{}, serve.ListenOptions{MaxConns: maxConns})
	c := newClient(t)
	var wg sync.WaitGroup
	for range maxConns {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", hd.base+"/agent/v1/tools/block", strings.NewReader(`{"input":{}}`))
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := c.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("a blocked call: %d", resp.StatusCode)
			}
		})
	}
	for range maxConns {
		select {
		case <-hd.started:
		case <-time.After(10 * time.Second):
			t.Fatal("the blocked calls did not start")
		}
	}
	r := dialRaw(t, hd.addr)
	start := time.Now()
	fmt.Fprintf(r, "GET /agent/v1/tools HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", testToken)
	resp, b := r.response(t, 10*time.Second)
	if resp.StatusCode != 503 || codeOf(b) != "over_capacity" || !resp.Close || resp.Header.Get("Retry-After") == "" ||
		resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("over the cap: %d %s (close %v, headers %v)", resp.StatusCode, b, resp.Close, resp.Header)
	}
	t.Logf("with %d connections busy, one more was refused with %d after %v", maxConns, resp.StatusCode, time.Since(start).Round(time.Microsecond))
	hd.release()
	wg.Wait()
	if a := send(t, c, "GET", hd.base+"/agent/v1/tools", "Bearer "+testToken, ""); a.status != 200 {
		t.Errorf("after the calls returned: %d %s", a.status, a.body)
	}
}

// Event streams are capped: one more is refused with 503 over_capacity
// (the typed client reconnects on a 5xx), stored events are still served,
// and a stream that ends frees its place.
func TestStreamCap(t *testing.T) {
	const maxStreams = 3
	hd := serveHardened(t, serve.Options{MaxStreams: maxStreams}, serve.ListenOptions{})
	c := newClient(t)
	auth := "Bearer " + testToken
	a := send(t, c, "POST", hd.base+"/agent/v1/session", auth, `{}`)
	var created api.TurnStartedResponse
	if a.status != 201 || json.Unmarshal([]byte(a.body), &created) != nil {
		t.Fatalf("creating a session: %d %s", a.status, a.body)
	}
	events := hd.base + "/agent/v1/session/" + created.SessionID + "/events"
	open := func() (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", events, nil)
		req.Header.Set("Authorization", auth)
		resp, err := c.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		return resp, cancel
	}
	var cancels []context.CancelFunc
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()
	for i := range maxStreams {
		resp, cancel := open()
		cancels = append(cancels, cancel)
		if resp.StatusCode != 200 {
			t.Fatalf("stream %d: %d", i, resp.StatusCode)
		}
	}
	over := send(t, c, "GET", events, auth, "")
	if over.status != 503 || over.code != "over_capacity" || over.header.Get("Retry-After") == "" {
		t.Errorf("a stream over the cap: %d %s (headers %v)", over.status, over.body, over.header)
	}
	if a := send(t, c, "GET", events+"?follow=false", auth, ""); a.status != 200 {
		t.Errorf("stored events at the cap: %d %s", a.status, a.body)
	}
	cancels[0]()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, cancel := open()
		cancels = append(cancels, cancel)
		if resp.StatusCode == 200 {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("a stream ended, but a new one is still refused: %d", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The serve flags' defaults, which the CLI shows without linking the
// server, are the serve package's own.
func TestLimitFlagDefaults(t *testing.T) {
	for _, tt := range []struct {
		name      string
		flag, own any
	}{
		{"body-timeout", serveflags.BodyTimeoutDefault, serve.BodyTimeoutDefault},
		{"header-timeout", serveflags.HeaderTimeoutDefault, serve.HeaderTimeoutDefault},
		{"idle-timeout", serveflags.IdleTimeoutDefault, serve.IdleTimeoutDefault},
		{"max-conns", serveflags.MaxConnsDefault, serve.MaxConnsDefault},
		{"max-streams", serveflags.MaxStreamsDefault, serve.MaxStreamsDefault},
		{"idempotency-ttl", serveflags.IdempotencyTTLDefault, serve.IdempotencyTTLDefault},
		{"max-overrun", serveflags.MaxOverrunDefault, serve.MaxOverrunDefault},
		{"unauth-body-timeout", serveflags.UnauthBodyTimeoutDefault, serve.UnauthBodyTimeoutDefault},
		{"max-unauth-bodies", serveflags.MaxUnauthBodiesDefault, serve.MaxUnauthBodiesDefault},
	} {
		if tt.flag != tt.own {
			t.Errorf("--%s defaults to %v, but the serve package's default is %v", tt.name, tt.flag, tt.own)
		}
	}
}

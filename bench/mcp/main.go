// Command mcp measures MCP tools/call through our endpoint (serve's
// /<slug>/mcp) against the MCP Go SDK's default server and against our own
// direct HTTP call of the same tool, in one run, on loopback, with wrk as
// the load generator.
//
//	go run ./bench/mcp                           # c=1 and c=32, 3 rounds of 4s
//	go run ./bench/mcp -rounds 1 -duration 2s    # a quick look
//	go run ./bench/mcp -protocol 2026-07-28      # ours as go-sdk v1.8 clients call a stateless server
//	go run ./bench/mcp -check                    # also check every answer's body (slows wrk a little)
//	go run ./bench/mcp -sdk-tool typed           # the SDK's server with mcp.AddTool (typed) instead
//
// It needs wrk (Debian package wrk). When wrk is not on PATH it runs
// apt-get install -y wrk if it is root, and otherwise stops saying so.
//
// The same tool, echo (input {"text": string}, result {"text": ...}), is
// called on three servers, each server in a child process of its own
// (this binary re-executed with -serve), so that wrk's CPU is not the
// server's:
//
//   - ours: serve.New with echo as a server tool, a started host, the
//     bearer token, and request logs in agent-sdk serve's default text
//     format written to a file (as serve writes them to stderr); MCP at
//     POST /bench/mcp, which is stateless with JSON answers. Its client
//     initializes it once (initialize, notifications/initialized) before
//     the runs. Each call is what a client speaking -protocol sends: for
//     2025-11-25 the headers below; for 2026-07-28 the very headers and
//     params (with _meta) that the SDK's own client sent in a tools/call,
//     recorded at the start of the run (the requests are printed).
//   - sdk-default: the MCP Go SDK's default server: mcp.NewServer and
//     mcp.NewStreamableHTTPHandler(…, nil), so stateful with SSE answers.
//     One session is made before the runs (initialize, then
//     notifications/initialized) and every call names it in
//     Mcp-Session-Id. No auth, no logs. Always 2025-11-25. -sdk-tool says
//     how it has the tool: raw (the default), Server.AddTool with a JSON
//     schema and a handler that decodes the arguments with encoding/json,
//     as our endpoint registers its tools; or typed, mcp.AddTool with
//     typed input and output as the SDK's documentation shows, where the
//     SDK also validates input and output against inferred schemas and
//     returns structured content: more work per call (about 100 KB more
//     allocated), so a slower yardstick.
//   - direct: our direct HTTP call, POST /bench/v1/tools/echo with body
//     {"input":{"text":"…"}}, on the same server process as ours.
//
// MCP calls carry Accept: application/json, text/event-stream,
// Content-Type: application/json, Mcp-Protocol-Version, Authorization
// (ours) and Mcp-Session-Id (sdk-default); each has an id of its own, as
// a client's would. Before any run, one call from Go to each server checks
// the answer (status, JSON-RPC id, one text content equal to echo's result,
// not isError); so do the runs themselves, but only for HTTP status and
// socket errors unless -check.
//
// For each concurrency (-c, connections kept open by wrk) there are
// -rounds rounds; in each, every server gets one run of -duration, in an
// order that rotates from round to round (wrk takes whole seconds, so
// -duration is rounded to one). wrk runs with min(c, CPUs) threads unless
// -threads. After a warm-up run of each server, the table
// gives, per server and concurrency, the median over the rounds of:
//
//   - req/s: answered requests per second (wrk's count over its duration);
//   - p50, p99: latency percentiles of the run (wrk --latency);
//   - cpu µs/req: the server process's user+system CPU during the run
//     (utime+stime in /proc/<pid>/stat, before and after, in clock ticks of
//     10 ms) over the requests answered;
//   - allocs/req, KB/req: the server process's heap allocations over the
//     run (runtime.MemStats Mallocs and TotalAlloc, read by the child
//     between runs) over the requests answered;
//   - errors: socket errors, non-2xx answers and (with -check) bad bodies,
//     summed over the rounds.
//
// Each column is its own median. Then, at each concurrency, the ratios of
// ours to sdk-default and to direct in req/s, against the targets: ours
// ≥ 5× the SDK's default server, ≥ 0.8× our direct call. The generator
// and the servers share the machine's CPUs, so run-to-run spread is wide
// (±30% has been seen); compare figures from one run only. Everything is
// on 127.0.0.1.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/bench/internal/harness"
)

func main() {
	role := flag.String("serve", "", "internal: run a server (ours or sdk) and print its address")
	levels := flag.String("c", "1,32", "concurrency levels (wrk connections), comma-separated")
	rounds := flag.Int("rounds", 3, "rounds per level (the servers' runs alternate)")
	duration := flag.Duration("duration", 4*time.Second, "length of one run")
	warmup := flag.Duration("warmup", time.Second, "length of each server's warm-up run")
	threads := flag.Int("threads", 0, "wrk threads (0: min(c, CPUs))")
	protocol := flag.String("protocol", protocolDefault, "MCP protocol version of ours' calls: "+protocolDefault+" or "+protocolNew)
	check := flag.Bool("check", false, "check every answer's body in wrk (a Lua response hook, which costs wrk some CPU)")
	sdkTool := flag.String("sdk-tool", "raw", "how sdk-default has the tool: raw (Server.AddTool, JSON schema, encoding/json) or typed (mcp.AddTool, typed input and output)")
	flag.Parse()
	if *role != "" {
		if err := runServer(*role, *sdkTool == "typed"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := measure(ctx, config{levels: *levels, rounds: *rounds, d: *duration, warmup: *warmup, threads: *threads, protocol: *protocol, check: *check, sdkTool: *sdkTool})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		stop()
		os.Exit(1)
	}
}

// runServer serves one server on a loopback port until stdin closes. It
// prints its address (and for ours, its log file) on a first line, then
// answers each "stats" line on stdin with its allocation counters.
func runServer(role string, typed bool) error {
	var (
		handler http.Handler
		logPath string
	)
	switch role {
	case "ours":
		dir, err := os.MkdirTemp("", "bench-mcp")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		logPath = filepath.Join(dir, "requests.log")
		logFile, err := os.Create(logPath)
		if err != nil {
			return err
		}
		defer logFile.Close()
		srv, closeHost, err := newOurs(filepath.Join(dir, "state"), logFile)
		if err != nil {
			return err
		}
		defer closeHost()
		handler = srv
	case "sdk":
		handler = newSDKHandler(typed, nil)
	default:
		return fmt.Errorf("unknown server %q", role)
	}
	return harness.Serve(handler, logPath, "")
}

// target is one server as wrk calls it.
type target struct {
	name   string
	srv    *harness.Child
	url    string
	header http.Header
	// The body is prefix + id + suffix, with an id unique per request,
	// or, when noID, prefix alone.
	prefix, suffix string
	noID           bool
	expect         string // a substring of every right answer's body (-check)
}

// config is a run's flags.
type config struct {
	levels   string
	rounds   int
	d        time.Duration
	warmup   time.Duration
	threads  int
	protocol string
	check    bool
	sdkTool  string // raw or typed
}

func measure(ctx context.Context, cfg config) error {
	if cfg.protocol != protocolDefault && cfg.protocol != protocolNew {
		return fmt.Errorf("-protocol %q: want %s or %s", cfg.protocol, protocolDefault, protocolNew)
	}
	levels, err := harness.ParseLevels(cfg.levels, 1024)
	if err != nil {
		return err
	}
	if cfg.sdkTool != "raw" && cfg.sdkTool != "typed" {
		return fmt.Errorf("-sdk-tool %q: want raw or typed", cfg.sdkTool)
	}
	if cfg.rounds < 1 {
		return errors.New("-rounds must be at least 1")
	}
	wrk, err := harness.FindWrk("")
	if err != nil {
		return err
	}
	ours, err := harness.Start("ours")
	if err != nil {
		return err
	}
	defer ours.Stop()
	sdk, err := harness.Start("sdk", "-sdk-tool", cfg.sdkTool)
	if err != nil {
		return err
	}
	defer sdk.Stop()
	dir, err := os.MkdirTemp("", "bench-mcp-wrk")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	oursT, err := setupOurs(ctx, ours, cfg.protocol)
	if err != nil {
		return err
	}
	sdkT, err := setupSDK(ctx, sdk)
	if err != nil {
		return err
	}
	directT, err := setupDirect(ctx, ours)
	if err != nil {
		return err
	}
	targets := []*target{oursT, sdkT, directT}
	tick := harness.ClockTick()

	fmt.Printf("servers: ours (serve, MCP %s, %s), sdk-default (go-sdk stateful+SSE, 2025-11-25, tool %s), direct (%s on ours)\n",
		cfg.protocol, mcpPath, cfg.sdkTool, "POST "+directPath)
	fmt.Printf("wrk: %s; %d CPUs; rounds %d × %s; each column the median over the rounds\n", wrk, runtime.NumCPU(), cfg.rounds, cfg.d)
	for _, t := range targets {
		if _, err := runWrk(ctx, wrk, dir, t, min(4, slices.Max(levels)), cfg.threads, cfg.warmup, cfg.check, tick); err != nil {
			return fmt.Errorf("warming up %s: %w", t.name, err)
		}
	}
	fmt.Printf("\n%-4s %-12s %10s %10s %10s %11s %11s %9s %7s\n", "c", "server", "req/s", "p50", "p99", "cpu µs/req", "allocs/req", "KB/req", "errors")
	type summary struct{ rps, p50, p99, cpu, allocs, kb float64 }
	for _, c := range levels {
		runs, err := harness.Rounds(ctx, cfg.rounds, len(targets), func(i int) (harness.Result, error) {
			res, err := runWrk(ctx, wrk, dir, targets[i], c, cfg.threads, cfg.d, cfg.check, tick)
			if err != nil {
				return res, fmt.Errorf("%s at c=%d: %w", targets[i].name, c, err)
			}
			return res, nil
		})
		if err != nil {
			return err
		}
		sums := make([]summary, len(targets))
		for i, t := range targets {
			var errs int64
			col := func(f func(harness.Result) float64) float64 { return harness.Median(runs[i], f) }
			for _, r := range runs[i] {
				errs += r.Errors
			}
			s := summary{
				rps:    col(harness.Result.RPS),
				p50:    col(func(r harness.Result) float64 { return float64(r.P50) }),
				p99:    col(func(r harness.Result) float64 { return float64(r.P99) }),
				cpu:    col(func(r harness.Result) float64 { return r.PerReq(float64(r.CPU.Microseconds())) }),
				allocs: col(func(r harness.Result) float64 { return r.PerReq(float64(r.Mallocs)) }),
				kb:     col(func(r harness.Result) float64 { return r.PerReq(float64(r.Bytes)) / 1024 }),
			}
			sums[i] = s
			fmt.Printf("%-4d %-12s %10.0f %10s %10s %11.1f %11.1f %9.1f %7d\n", c, t.name, s.rps,
				time.Duration(s.p50).Round(time.Microsecond), time.Duration(s.p99).Round(time.Microsecond), s.cpu, s.allocs, s.kb, errs)
		}
		vsSDK, vsDirect := sums[0].rps/sums[1].rps, sums[0].rps/sums[2].rps
		fmt.Printf("%-4d ours/sdk-default %7.3fx (target ≥ 5: %s)   ours/direct %6.3fx (target ≥ 0.8: %s)\n\n",
			c, vsSDK, harness.Verdict(vsSDK >= 5), vsDirect, harness.Verdict(vsDirect >= 0.8))
	}
	if fi, err := os.Stat(ours.LogPath); err == nil {
		fmt.Printf("ours' request log: %d bytes written to %s during the run (removed at the end)\n", fi.Size(), ours.LogPath)
	}
	return nil
}

// post sends one request from Go and returns the answer.
func post(ctx context.Context, url string, header http.Header, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	return resp, answer, err
}

// initialize runs the MCP handshake from Go: initialize, then
// notifications/initialized. It returns the session id, if any.
func initialize(ctx context.Context, name, url string, header http.Header, version string) (string, error) {
	resp, answer, err := post(ctx, url, header, initializeBody(1, version))
	if err != nil {
		return "", fmt.Errorf("%s: initialize: %w", name, err)
	}
	msg, err := rpcMessage(resp.Header.Get("Content-Type"), answer)
	var init struct {
		Result *struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if resp.StatusCode != http.StatusOK || err != nil || json.Unmarshal(msg, &init) != nil || init.Result == nil {
		return "", fmt.Errorf("%s: initialize answered %s: %s", name, resp.Status, bytes.TrimSpace(answer))
	}
	if init.Result.ProtocolVersion != version {
		return "", fmt.Errorf("%s: initialize with %s negotiated %s", name, version, init.Result.ProtocolVersion)
	}
	session := resp.Header.Get("Mcp-Session-Id")
	h := header.Clone()
	if session != "" {
		h.Set("Mcp-Session-Id", session)
	}
	resp, answer, err = post(ctx, url, h, []byte(initializedBody))
	if err != nil {
		return "", fmt.Errorf("%s: notifications/initialized: %w", name, err)
	}
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("%s: notifications/initialized answered %s: %s", name, resp.Status, bytes.TrimSpace(answer))
	}
	return session, nil
}

// checkCall makes one call from Go with t's request and checks its answer.
func checkCall(ctx context.Context, t *target, tmpl *callTemplate) (*rpcResponse, error) {
	const id = 7
	resp, answer, err := post(ctx, t.url, tmpl.header, tmpl.body(id))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.name, err)
	}
	res, err := checkCallAnswer(resp.StatusCode, resp.Header.Get("Content-Type"), answer, id, benchText)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.name, err)
	}
	return res, nil
}

// mcpExpect is what a right MCP answer to a call holds: echo's result as a
// JSON string (the text content).
func mcpExpect() string {
	want, _ := json.Marshal(echo(echoInput{Text: benchText}))
	quoted, _ := json.Marshal(string(want))
	return string(quoted)
}

func setupOurs(ctx context.Context, srv *harness.Child, version string) (*target, error) {
	t := &target{name: "ours", srv: srv, url: srv.Base + mcpPath, expect: mcpExpect()}
	var tmpl *callTemplate
	switch version {
	case protocolDefault:
		header := mcpHeader(version, token, "")
		session, err := initialize(ctx, t.name, t.url, header, version)
		if err != nil {
			return nil, err
		}
		if session != "" {
			return nil, fmt.Errorf("ours: initialize made session %q; the endpoint should be stateless", session)
		}
		tmpl = plainCall(version, token, "", benchText)
	case protocolNew:
		// What the SDK's client sends, taken from the client itself.
		captured, methods, text, err := captureCall(ctx, t.url, version, benchText)
		if err != nil {
			return nil, fmt.Errorf("ours: %w", err)
		}
		if want, _ := json.Marshal(echo(echoInput{Text: benchText})); text != string(want) {
			return nil, fmt.Errorf("ours: the SDK client's call returned %q", text)
		}
		tmpl = captured
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range tmpl.header {
				if !yield(k) {
					return
				}
			}
		})
		fmt.Printf("ours at %s: the SDK client (go-sdk v1.8.0) sent %s; its tools/call, sent as is but for the id:\n", version, strings.Join(methods, ", "))
		for _, k := range keys {
			v := strings.Join(tmpl.header[k], ", ")
			if k == "Authorization" {
				v = "Bearer …"
			}
			fmt.Printf("  %s: %s\n", k, v)
		}
		fmt.Printf("  body: %s\n", tmpl.body(1))
	}
	t.header, t.prefix, t.suffix = tmpl.header, tmpl.prefix, tmpl.suffix
	res, err := checkCall(ctx, t, tmpl)
	if err != nil {
		return nil, err
	}
	if version == protocolNew {
		fmt.Printf("  answered: resultType %q, text %q\n\n", res.Result.ResultType, res.Result.Content[0].Text)
	}
	return t, nil
}

func setupSDK(ctx context.Context, srv *harness.Child) (*target, error) {
	t := &target{name: "sdk-default", srv: srv, url: srv.Base + mcpPath, expect: mcpExpect()}
	session, err := initialize(ctx, t.name, t.url, mcpHeader(protocolDefault, "", ""), protocolDefault)
	if err != nil {
		return nil, err
	}
	if session == "" {
		return nil, errors.New("sdk-default: initialize made no session")
	}
	tmpl := plainCall(protocolDefault, "", session, benchText)
	t.header, t.prefix, t.suffix = tmpl.header, tmpl.prefix, tmpl.suffix
	if _, err := checkCall(ctx, t, tmpl); err != nil {
		return nil, err
	}
	return t, nil
}

func setupDirect(ctx context.Context, srv *harness.Child) (*target, error) {
	header, body := directCall(benchText)
	t := &target{name: "direct", srv: srv, url: srv.Base + directPath, header: header, prefix: string(body), noID: true}
	want, _ := json.Marshal(echo(echoInput{Text: benchText}))
	t.expect = `"result":` + string(want)
	resp, answer, err := post(ctx, t.url, header, body)
	if err != nil {
		return nil, fmt.Errorf("direct: %w", err)
	}
	if err := checkDirectAnswer(resp.StatusCode, answer, benchText); err != nil {
		return nil, err
	}
	return t, nil
}

// script is the wrk Lua script for t: each thread numbers its requests
// (ids unique across threads), and done prints the figures on one line.
func script(t *target, check bool) string {
	var b strings.Builder
	b.WriteString("local headers = {\n")
	for k, vs := range t.header {
		fmt.Fprintf(&b, "  [%s] = %s,\n", harness.LuaString(k), harness.LuaString(strings.Join(vs, ", ")))
	}
	fmt.Fprintf(&b, "  [\"Host\"] = %s,\n}\n", harness.LuaString(strings.TrimPrefix(t.srv.Base, "http://")))
	fmt.Fprintf(&b, "local prefix = %s\nlocal suffix = %s\nlocal noid = %t\n",
		harness.LuaString(t.prefix), harness.LuaString(t.suffix), t.noID)
	b.WriteString(`
function request()
  if noid then
    return wrk.format("POST", nil, headers, prefix)
  end
  n = n + 1
  return wrk.format("POST", nil, headers, prefix .. string.format("%d", tid * 1000000000 + n) .. suffix)
end
`)
	return harness.Script(b.String(), t.expect, "status ~= 200", check)
}

// runWrk runs wrk against t with c connections for d and reads the
// server's CPU and allocations around it.
func runWrk(ctx context.Context, wrk, dir string, t *target, c, threads int, d time.Duration, check bool, tick time.Duration) (harness.Result, error) {
	before, err := t.srv.Usage(tick)
	if err != nil {
		return harness.Result{}, err
	}
	res, err := harness.RunWrk(ctx, wrk, dir, t.name, script(t, check), t.url, c, threads, d)
	if err != nil {
		return res, err
	}
	after, err := t.srv.Usage(tick)
	if err != nil {
		return res, err
	}
	res.Usage = after.Sub(before)
	if res.Errors > 0 {
		fmt.Fprintf(os.Stderr, "%s at c=%d: %d errors; %s", t.name, c, res.Errors, res.FirstErr)
	}
	return res, nil
}

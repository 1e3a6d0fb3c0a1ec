// Command load measures the serve host's direct-call endpoint,
// POST /<slug>/v1/tools/inspect_pr, against a bare net/http handler doing
// the same JSON work (decode the body, run the same logic, encode the
// answer) without the SDK, at several concurrencies, in one run, on
// loopback, against the targets of issue #15.
//
//	go run ./bench/load                          # wrk, c=1 and c=32, 3 rounds of 4s
//	go run ./bench/load -rounds 1 -duration 3s   # a quick look
//	go run ./bench/load -cpuprofile sdk.prof     # then: go tool pprof -top sdk.prof
//	go run ./bench/load -check=false             # wrk counts only its own errors (status ≥ 400)
//	go run ./bench/load -wrk=false               # the Go net/http client instead of wrk
//	go run ./bench/load -auth token,key,jwt      # the sdk also with an API key and an OIDC JWT
//
// # The servers
//
// Each server runs in a child process of its own (this binary re-executed
// with -serve), so that the generator's CPU is not the server's:
//
//   - sdk: the agent binary's main exactly as agent-sdk serve runs it,
//     agentmain.Main(ctx, ["serve", …]), with the quickstart agent's tools
//     (examples/quickstart/agent/tools). So: serve.ListenAndServe with
//     agent-sdk serve's defaults (header, idle and body timeouts, the
//     1024-connection limit, 4 MiB bodies), a started host, the bearer
//     token, input validation, the {"ok":true,…} envelope, and the default
//     request log (--log-format text: one slog text line per request) written
//     to a file, as agent-sdk serve writes it to stderr — not io.Discard.
//     No agent.yaml (defaults: no model, no MCP servers). The store is
//     agent-sdk serve's default, SQLite at <state>/agent.db in a temporary
//     directory (-store sqlite), or with -store postgres://… that database,
//     in a schema bench_<random> created for the run, first in search_path,
//     and dropped with all it holds at the end. The address is read from the
//     "serving … at http://…" line serve writes to the log.
//   - bare: http.Serve with one handler that decodes the same body, builds
//     the same map as inspect_pr and encodes {"ok":true,"result":…}: no auth,
//     no validation, no log. The fixed yardstick of the ratios.
//
// With -auth key and/or jwt (auth.go), the same sdk process is also
// driven with an API key (read from its store once a second) and
// with an RS256 JWT of an OIDC issuer this command serves on loopback
// (agent.yaml's auth.oidc names it; the same token every request, so
// checked in full once, then found in the host's cache of verified
// tokens): each credential is a "server" of the table (sdk-key, sdk-jwt)
// with runs of its own in every round, its ratios to bare beside the
// token's, and the CPU per request it costs over the token's. The JWT's
// floor is bare-jwt, the bare process sent the same JWT (the bytes of a
// bigger request cost any server). The targets stay the token's.
//
// Before any run, one request from Go to each server checks its answer
// (200, ok true, not isError, result equal to inspect_pr's).
//
// # The generator
//
// By default wrk (Debian package wrk), which is much lighter than the
// servers: on 2 cores a heavy client eats the CPU both servers need and
// compresses every ratio toward 1. When wrk is not on PATH the command runs
// apt-get install -y wrk if it is root, and otherwise stops saying so. wrk
// keeps -c connections open, sends the same request (body, Content-Type,
// Authorization) on each, with min(c, CPUs) threads unless -threads; it
// runs whole seconds, so -duration is rounded to one. Its errors (socket
// errors, timeouts, answers with status ≥ 400) are counted, and a Lua
// response hook counts every answer that is not 2xx or whose body does not
// hold "result":<inspect_pr's result> exactly as the Go check got it. The
// hook makes wrk parse each answer into Lua; it has cost wrk well under 1 µs
// a request here (see gen µs/req). -check=false drops it.
//
// -wrk=false drives the servers with Go's net/http client instead (c
// goroutines, each waiting for its answer; a non-200 answer is an error),
// for comparison; it also sends at most -max requests in a run. -session
// (Go client only: wrk cannot bind a connection to a session) makes every
// sdk call session-bound: before each run each worker opens a session of its
// own (POST /<slug>/v1/session, not timed) and sends its sessionId in every
// call's body. Such a call (host/sessioncall.go) is a turn: it reads the
// session and records turn.started, action.result and turn.completed, so
// every call writes the store. Without -session, a direct call
// (host.CallTool without a session, host/call.go) neither reads nor writes
// the store. The bare handler gets the plain body either way.
//
// # The figures
//
// For each concurrency (-c) there are -rounds rounds; in each, each server
// gets one run of -duration, in an order that alternates from round to
// round, after one warm-up run of each (-warmup). Per server and
// concurrency the table gives the median over the rounds of each column
// (each its own median), except peak RSS (the highest) and errors (the sum):
//
//   - req/s: answered requests per second (wrk's count over its duration);
//   - p50, p99: the run's latency percentiles (wrk --latency: from the
//     request's write to its answer's last byte);
//   - cpu µs/req: the server process's user+system CPU over the run
//     (utime+stime in /proc/<pid>/stat before and after, in clock ticks of
//     10 ms) over the requests answered: what one request costs the server,
//     whatever the generator leaves it. It includes the kernel's work in the
//     server's syscalls, which on loopback takes in the TCP receive of the
//     peer (wrk) and its wake-up;
//   - gen µs/req: the generator's CPU over the requests answered (wrk's
//     rusage; for the Go client, this process's);
//   - allocs/req, KB/req: the server's heap allocations over the run
//     (runtime.MemStats Mallocs and TotalAlloc, read by the child between
//     runs) over the requests answered;
//   - peak RSS: the server process's resident set during the run, in MiB:
//     VmHWM of /proc/<pid>/status, reset before each run by writing 5 to
//     /proc/<pid>/clear_refs, and VmRSS sampled every 100 ms (if the reset
//     is refused, only the samples count);
//   - errors: as above, summed over the rounds.
//
// Then the ratios sdk/bare at each concurrency and, at the end, issue #15's
// targets, each marked met or MISSED: req/s at c=32 ≥ 0.85× bare's, p50 at
// c=1 ≤ 1.2× bare's, and the sdk's peak RSS over every measured run ≤ 40
// MiB. The generator and the servers share the machine's CPUs, and other
// work on the machine moves every figure: the load average is printed at
// the start and the end; compare figures from one run only.
//
// -cpuprofile writes a CPU profile of the sdk child, from the end of the
// warm-up to its exit: the measured runs (it idles during bare's), and
// -bareprofile one of the bare child likewise. The profiles hold the
// binary's symbols; to see where the sdk's extra cost goes:
//
//	go run ./bench/load -c 32 -cpuprofile sdk.prof -bareprofile bare.prof
//	go tool pprof -top sdk.prof
//	go tool pprof -top -cum -focus 'serve\.\(\*Server\)\.ServeHTTP' sdk.prof
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsdk/agentsdk/agentmain"
	"github.com/agentsdk/agentsdk/bench/internal/harness"
	_ "github.com/agentsdk/agentsdk/examples/quickstart/agent/tools"
	"github.com/agentsdk/agentsdk/internal/barehandler"
	"github.com/agentsdk/agentsdk/store/postgres"
)

const (
	token = "bench-token"
	slug  = "quickstart"
)

// body is every call's body; want is inspect_pr's result for it.
var (
	body = []byte(`{"input":{"prUrl":"https://github.com/acme/checkout/pull/42"}}`)
	want = map[string]any{"prUrl": "https://github.com/acme/checkout/pull/42", "checks": []any{"unit", "lint"}, "ready": true}
)

// Issue #15's targets.
const (
	rpsTarget  = 0.85 // sdk/bare req/s at c=32, at least
	p50Target  = 1.2  // sdk/bare p50 at c=1, at most
	rssTarget  = 40   // the sdk's peak RSS in MiB, at most
	rpsLevel   = 32
	p50Level   = 1
	mib        = 1 << 20
	rssPeriod  = 100 * time.Millisecond
	addrWait   = 60 * time.Second
	checkLimit = 1 << 16
)

func main() {
	role := flag.String("serve", "", "internal: run a server (sdk or bare) and print its address")
	levels := flag.String("c", "1,32", "concurrency levels (connections), comma-separated")
	rounds := flag.Int("rounds", 3, "rounds per level (the servers' runs alternate)")
	duration := flag.Duration("duration", 4*time.Second, "length of one run (wrk: whole seconds)")
	warmup := flag.Duration("warmup", time.Second, "length of each server's warm-up run")
	useWrk := flag.Bool("wrk", true, "drive the load with wrk; false: with Go's net/http client")
	threads := flag.Int("threads", 0, "wrk threads (0: min(c, CPUs))")
	check := flag.Bool("check", true, "wrk: check every answer (status 2xx, body) in a Lua response hook; false: count only wrk's own errors (status ≥ 400)")
	maxReq := flag.Int("max", 2_000_000, "Go client: most requests in one run")
	profile := flag.String("cpuprofile", "", "write the sdk server's CPU profile of the measured runs to this file")
	bareProfile := flag.String("bareprofile", "", "write the bare server's CPU profile of the measured runs to this file")
	storeFlag := flag.String("store", "sqlite", "the sdk's store: sqlite (agent-sdk serve's default, <state>/agent.db in a temporary directory) or a postgres:// URL (a schema of the run's own)")
	session := flag.Bool("session", false, "Go client only: make every sdk call session-bound (one session per worker, sessionId in the body), so that each call writes the store")
	auth := flag.String("auth", authToken, "the credentials the sdk is driven with, comma-separated, each in runs of its own: token (the host token), key (an API key), jwt (an OIDC issuer's RS256 JWT)")
	oidcIssuer := flag.String("oidc", "", "internal: the OIDC issuer the sdk server's agent.yaml admits")
	flag.Parse()
	if *role != "" {
		os.Exit(runServer(*role, *storeFlag, *profile, *oidcIssuer))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := measure(ctx, config{levels: *levels, rounds: *rounds, d: *duration, warmup: *warmup, wrk: *useWrk, threads: *threads,
		check: *check, max: *maxReq, profile: *profile, bareProfile: *bareProfile, store: *storeFlag, session: *session, auth: *auth})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		stop()
		os.Exit(1)
	}
}

// isPostgres reports whether a -store value is a PostgreSQL URL.
func isPostgres(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// runServer runs one server until stdin closes and returns the exit code.
// Its first line on stdout is its address and its log file ("-" if none);
// then it answers each line on stdin: "stats" with its allocation counters,
// "profile" (starting the CPU profile, if profilePath) with "ok".
func runServer(role, storeArg, profilePath, oidcIssuer string) int {
	var code int
	switch role {
	case "sdk":
		code = runSDK(storeArg, profilePath, oidcIssuer)
	case "bare":
		code = runBare(profilePath)
	default:
		fmt.Fprintf(os.Stderr, "unknown server %q\n", role)
		code = 2
	}
	pprof.StopCPUProfile()
	return code
}

// runSDK runs the agent binary's serve command as agent-sdk serve does, its
// stderr (the request log) a file; with oidcIssuer, its agent.yaml admits
// that issuer's tokens.
func runSDK(storeArg, profilePath, oidcIssuer string) int {
	dir, err := os.MkdirTemp("", "bench-load")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	logPath := filepath.Join(dir, "requests.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer logFile.Close()
	state := filepath.Join(dir, "state")
	where := filepath.Join(state, "agent.db") // agent-sdk serve's default
	switch {
	case isPostgres(storeArg):
		where = storeArg
	case storeArg != "sqlite":
		fmt.Fprintf(os.Stderr, "unknown store %q: want sqlite or a postgres:// URL\n", storeArg)
		return 2
	}
	config := filepath.Join(dir, "agent", "agent.yaml")
	if oidcIssuer != "" {
		if err := writeOIDCConfig(config, oidcIssuer); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	args := []string{"serve", "--addr=127.0.0.1:0", "--slug=" + slug, "--token=" + token, "--state=" + state,
		"--config=" + config, "--store=" + where}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan struct{})
	go func() {
		// serve writes "serving <slug> at http://<addr>/<slug>/v1 …" to
		// stderr once it listens.
		prefix := []byte("serving " + slug + " at http://")
		deadline := time.Now().Add(addrWait)
		for time.Now().Before(deadline) {
			select {
			case <-served:
				return
			case <-time.After(5 * time.Millisecond):
			}
			b, _ := os.ReadFile(logPath)
			if _, rest, ok := bytes.Cut(b, prefix); ok {
				if addr, _, ok := bytes.Cut(rest, []byte("/")); ok {
					fmt.Println(string(addr), logPath)
					go harness.Control(profilePath, cancel)
					return
				}
			}
		}
		fmt.Fprintf(os.Stderr, "sdk: no address in its log after %s\n", addrWait)
		cancel()
	}()
	code := agentmain.Main(ctx, args, agentmain.Stdio{In: strings.NewReader(""), Out: io.Discard, Err: logFile},
		&agentmain.Options{OpenStore: postgres.Open})
	close(served)
	if code != 0 {
		b, _ := os.ReadFile(logPath)
		if len(b) > 4096 {
			b = b[len(b)-4096:]
		}
		fmt.Fprintf(os.Stderr, "sdk: agentmain.Main serve exited %d; its stderr ends:\n%s", code, b)
	}
	return code
}

func runBare(profilePath string) int {
	if err := harness.Serve(http.HandlerFunc(barehandler.ServeHTTP), "-", profilePath); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// child is a server process and the endpoint measured on it.
type child struct {
	*harness.Child
	url    string // the endpoint measured
	expect string // what every right answer's body holds: "result":<inspect_pr's>
	bearer string // the credential sent (the bare handler ignores it)
	sdk    bool   // one of the sdk's credentials, not the bare handler
}

// as returns c driven as another credential: the same process, measured
// under role.
func (c *child) as(role string) *child {
	v := *c
	v.Child = &harness.Child{}
	*v.Child = *c.Child
	v.Role = role
	return &v
}

// startChild starts a server (harness.Start) and sets the endpoint measured
// on it.
func startChild(role string, args ...string) (*child, error) {
	hc, err := harness.Start(role, args...)
	if err != nil {
		return nil, err
	}
	c := &child{Child: hc, url: hc.Base + "/inspect_pr", bearer: token, sdk: role == "sdk"}
	if role == "sdk" {
		c.url = c.Base + "/" + slug + "/v1/tools/inspect_pr"
	}
	return c, nil
}

// memory returns the child's VmRSS and VmHWM in bytes.
func (c *child) memory() (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.Pid()))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(b)) {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s in /proc/%d/status: %w", name, c.Pid(), err)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm, nil
}

// resetPeak resets the child's VmHWM to its current RSS, and reports
// whether the kernel let it.
func (c *child) resetPeak() bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", c.Pid()), []byte("5"), 0) == nil
}

// watchRSS samples the child's RSS every rssPeriod until the function it
// returns is called, which returns the highest seen (and, if withHWM, the
// VmHWM then).
func (c *child) watchRSS(withHWM bool) func() int64 {
	stop := make(chan struct{})
	peak := make(chan int64, 1)
	go func() {
		var most int64
		sample := func(final bool) {
			rss, hwm, err := c.memory()
			if err != nil {
				return
			}
			most = max(most, rss)
			if final && withHWM {
				most = max(most, hwm)
			}
		}
		t := time.NewTicker(rssPeriod)
		defer t.Stop()
		sample(false)
		for {
			select {
			case <-t.C:
				sample(false)
			case <-stop:
				sample(true)
				peak <- most
				return
			}
		}
	}()
	return func() int64 { close(stop); return <-peak }
}

// checkAnswer sends one call from Go and checks the answer: 200, ok true,
// not isError, inspect_pr's result. It sets c.expect.
func (c *child) checkAnswer(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.bearer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Role, err)
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, checkLimit))
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", c.Role, err)
	}
	var got struct {
		OK      bool            `json:"ok"`
		IsError bool            `json:"isError"`
		Result  json.RawMessage `json:"result"`
	}
	var result any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(answer, &got) != nil || !got.OK || got.IsError ||
		json.Unmarshal(got.Result, &result) != nil || !reflect.DeepEqual(result, want) {
		return fmt.Errorf("%s: a wrong answer to %s: %s: %s", c.Role, c.url, resp.Status, bytes.TrimSpace(answer))
	}
	c.expect = `"result":` + string(got.Result)
	if !bytes.Contains(answer, []byte(c.expect)) {
		return fmt.Errorf("%s: the answer does not hold %s: %s", c.Role, c.expect, answer)
	}
	return nil
}

// openSessions opens n sessions on the sdk server and returns a call body
// bound to each.
func (c *child) openSessions(ctx context.Context, n int) ([][]byte, error) {
	var in struct {
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	bodies := make([][]byte, n)
	for i := range bodies {
		req, _ := http.NewRequestWithContext(ctx, "POST", c.Base+"/"+slug+"/v1/session", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("opening a session: %w", err)
		}
		answer, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("opening a session: %w", err)
		}
		var created struct {
			SessionID string `json:"sessionId"`
		}
		if resp.StatusCode != http.StatusCreated || json.Unmarshal(answer, &created) != nil || created.SessionID == "" {
			return nil, fmt.Errorf("opening a session: %s: %s", resp.Status, bytes.TrimSpace(answer))
		}
		b, err := json.Marshal(map[string]any{"input": in.Input, "sessionId": created.SessionID})
		if err != nil {
			return nil, err
		}
		bodies[i] = b
	}
	http.DefaultClient.CloseIdleConnections()
	return bodies, nil
}

// result is one run: the harness's figures and the server's peak RSS.
type result struct {
	harness.Result
	peakRSS int64
}

// same returns n copies of the plain call body.
func same(n int) [][]byte {
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = body
	}
	return bodies
}

// cpuSelf is this process's user+system CPU so far.
func cpuSelf() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadGo sends requests with Go's client from one worker per body, each
// sending its own, for d or max requests.
func loadGo(ctx context.Context, url, bearer string, bodies [][]byte, d time.Duration, max int) harness.Result {
	c := len(bodies)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c, MaxConnsPerHost: c}}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		errs      int64
		firstErr  string
		sent      int
		wg        sync.WaitGroup
	)
	fail := func(msg string) {
		mu.Lock()
		if firstErr == "" {
			firstErr = msg
		}
		mu.Unlock()
	}
	cpu0 := cpuSelf()
	start := time.Now()
	for _, body := range bodies {
		wg.Go(func() {
			local := make([]time.Duration, 0, 4096)
			var bad int64
			defer func() {
				mu.Lock()
				latencies = append(latencies, local...)
				errs += bad
				mu.Unlock()
			}()
			for ctx.Err() == nil {
				mu.Lock()
				if sent >= max {
					mu.Unlock()
					return
				}
				sent++
				mu.Unlock()
				req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+bearer)
				req.Header.Set("Content-Type", "application/json")
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						bad++
						fail(err.Error())
					}
					continue
				}
				if resp.StatusCode != 200 {
					answer, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
					resp.Body.Close()
					bad++
					fail(resp.Status + ": " + string(bytes.TrimSpace(answer)))
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				local = append(local, time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	gen := cpuSelf() - cpu0
	client.CloseIdleConnections()
	slices.Sort(latencies)
	res := harness.Result{Requests: int64(len(latencies)), Elapsed: elapsed, Errors: errs, FirstErr: firstErr, Gen: gen}
	if n := len(latencies); n > 0 {
		res.P50 = latencies[n/2]
		res.P99 = latencies[n*99/100]
	}
	return res
}

// script is the wrk Lua script for a server: one static request (wrk
// builds it once), and done prints the figures on one line. With check, a
// response hook counts non-2xx answers and bodies without expect.
func script(expect, bearer string, check bool) string {
	request := fmt.Sprintf("wrk.method = \"POST\"\nwrk.body = %s\n", harness.LuaString(string(body))) +
		fmt.Sprintf("wrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.headers[\"Authorization\"] = %s\n", harness.LuaString("Bearer "+bearer))
	return harness.Script(request, expect, "status < 200 or status > 299", check)
}

// config is a run's flags.
type config struct {
	levels      string
	rounds      int
	d           time.Duration
	warmup      time.Duration
	wrk         bool
	threads     int
	check       bool
	max         int
	profile     string
	bareProfile string
	store       string // sqlite or a postgres:// URL
	session     bool
	auth        string // -auth
}

// pgSchema creates a schema named bench_<random> in the database at dbURL
// and returns a URL whose connections use it (search_path) and a function
// that drops it with all it holds.
func pgSchema(ctx context.Context, dbURL string) (string, func() error, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", nil, fmt.Errorf("parsing the database URL: %w", err)
	}
	name := "bench_" + strings.ToLower(rand.Text())
	run := func(ctx context.Context, sql string) error {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return fmt.Errorf("connecting to %s: %w", u.Redacted(), err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
		return nil
	}
	if err := run(ctx, `CREATE SCHEMA `+name); err != nil {
		return "", nil, err
	}
	drop := func() error { return run(context.Background(), `DROP SCHEMA `+name+` CASCADE`) }
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String(), drop, nil
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func measure(ctx context.Context, cfg config) (err error) {
	levels, err := harness.ParseLevels(cfg.levels, 1000)
	if err != nil {
		return fmt.Errorf("%w (1 to 1000: the sdk allows 1024 connections)", err)
	}
	if cfg.rounds < 1 {
		return errors.New("-rounds must be at least 1")
	}
	if cfg.session && cfg.wrk {
		return errors.New("-session needs -wrk=false: a session takes one call at a time, and wrk cannot bind a connection to a session")
	}
	creds, err := parseAuth(cfg.auth)
	if err != nil {
		return err
	}
	if cfg.session && len(creds) > 1 {
		return errors.New("-session takes -auth token only: the sessions are the token's, and another principal's session is 404")
	}
	storeArg := cfg.store
	var storeLabel string
	switch {
	case cfg.store == "sqlite":
		storeLabel = "sqlite (agent-sdk serve's default: <state>/agent.db, in a temporary directory)"
	case isPostgres(cfg.store):
		var drop func() error
		storeArg, drop, err = pgSchema(ctx, cfg.store)
		if err != nil {
			return err
		}
		defer func() {
			if derr := drop(); derr != nil && err == nil {
				err = fmt.Errorf("dropping the bench schema: %w", derr)
			}
		}()
		u, _ := url.Parse(storeArg)
		storeLabel = "postgres (schema " + u.Query().Get("search_path") + " of " + u.Redacted() + ")"
	default:
		return fmt.Errorf("unknown store %q: want sqlite or a postgres:// URL", cfg.store)
	}
	var wrk, dir string
	if cfg.wrk {
		if wrk, err = harness.FindWrk(", or use -wrk=false"); err != nil {
			return err
		}
		if dir, err = os.MkdirTemp("", "bench-load-wrk"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	sdkArgs := []string{"-store", storeArg, "-cpuprofile", cfg.profile}
	var is *issuer
	if slices.Contains(creds, authJWT) {
		if is, err = startIssuer(); err != nil {
			return err
		}
		defer is.srv.Close()
		sdkArgs = append(sdkArgs, "-oidc", is.url)
	}
	sdk, err := startChild("sdk", sdkArgs...)
	if err != nil {
		return err
	}
	defer sdk.Stop()
	bareSrv, err := startChild("bare", "-cpuprofile", cfg.bareProfile)
	if err != nil {
		return err
	}
	defer bareSrv.Stop()
	// servers: the sdk with each credential (the token's first), then the
	// bare handler.
	servers := []*child{sdk}
	var jwtBearer string
	for _, cred := range creds[1:] {
		v := sdk.as("sdk-" + cred)
		switch cred {
		case authKey:
			v.bearer, err = createKey(ctx, sdk.Base)
		case authJWT:
			v.bearer, err = is.token()
			jwtBearer = v.bearer
		}
		if err != nil {
			return err
		}
		servers = append(servers, v)
	}
	servers = append(servers, bareSrv)
	bare := len(servers) - 1
	// floor is the index of the bare run an sdk run is measured against:
	// bare, or with -auth jwt for sdk-jwt bare-jwt, the bare handler sent
	// the same JWT (a 2048-bit RS256 JWT is ~0.8 KB a request more for the
	// kernel and net/http to carry and parse, whoever serves it).
	floor := func(int) int { return bare }
	if jwtBearer != "" {
		v := bareSrv.as("bare-jwt")
		v.bearer = jwtBearer
		servers = append(servers, v)
		floor = func(i int) int {
			if servers[i].bearer == jwtBearer {
				return bare + 1
			}
			return bare
		}
	}
	for _, s := range servers {
		if err := s.checkAnswer(ctx); err != nil {
			return err
		}
	}
	tick := harness.ClockTick()
	canReset := sdk.resetPeak() && bareSrv.resetPeak()

	// bodies returns the workers' bodies for a run of c on s.
	bodies := func(s *child, c int) ([][]byte, error) {
		if s == sdk && cfg.session {
			return sdk.openSessions(ctx, c)
		}
		return same(c), nil
	}
	// run is one run on s at c for d, with the server's CPU, allocations
	// and peak RSS around it.
	run := func(s *child, c int, d time.Duration) (result, error) {
		var bs [][]byte
		if !cfg.wrk {
			var err error
			if bs, err = bodies(s, c); err != nil {
				return result{}, err
			}
		}
		before, err := s.Usage(tick)
		if err != nil {
			return result{}, err
		}
		reset := canReset && s.resetPeak()
		peak := s.watchRSS(reset)
		var r harness.Result
		if cfg.wrk {
			r, err = harness.RunWrk(ctx, wrk, dir, s.Role, script(s.expect, s.bearer, cfg.check), s.url, c, cfg.threads, d)
		} else {
			r = loadGo(ctx, s.url, s.bearer, bs, d, cfg.max)
		}
		res := result{Result: r, peakRSS: peak()}
		if err != nil {
			return res, err
		}
		after, err := s.Usage(tick)
		if err != nil {
			return res, err
		}
		res.Usage = after.Sub(before)
		return res, nil
	}

	gen := "Go net/http client (-wrk=false), one goroutine per connection"
	if cfg.wrk {
		threads := "min(c, CPUs)"
		if cfg.threads > 0 {
			threads = strconv.Itoa(cfg.threads) + " (at most c)"
		}
		gen = fmt.Sprintf("wrk (%s, %s threads", wrk, threads)
		if cfg.check {
			gen += ", every answer checked in Lua"
		}
		gen += ")"
	}
	mode := "outside any session (the store is not touched)"
	if cfg.session {
		mode = "session-bound (a session per worker, opened before each run; every call writes the store)"
	}
	fmt.Printf("sdk:  agentmain.Main serve, as agent-sdk serve runs it: POST /%s/v1/tools/inspect_pr, bearer token, default limits,\n", slug)
	if len(creds) > 1 {
		fmt.Printf("      the same process also driven (runs of their own) as sdk-key (an API key, role operator) and/or\n" +
			"      sdk-jwt (an RS256 JWT of an OIDC issuer on loopback, role operator; the same token each request)\n")
	}
	fmt.Printf("      request log in the default text format to a file; store %s; calls %s\n", storeLabel, mode)
	fmt.Printf("bare: http.Serve, one handler decoding the same body and encoding the same answer; no auth, no validation, no log\n")
	if jwtBearer != "" {
		fmt.Printf("      also driven as bare-jwt (sent sdk-jwt's token, which it ignores): sdk-jwt's floor\n")
	}
	fmt.Printf("load: %s\n", gen)
	fmt.Printf("%d CPUs; load average at start %s; %d round(s) of %s per level; each column the median over the rounds (peak RSS: the highest)\n",
		runtime.NumCPU(), loadAverage(), cfg.rounds, cfg.d)
	if !canReset {
		fmt.Println("(VmHWM cannot be reset here: peak RSS is the highest of the 100 ms samples of VmRSS)")
	}

	for _, s := range servers {
		if _, err := run(s, min(4, slices.Max(levels)), cfg.warmup); err != nil {
			return fmt.Errorf("warming up %s: %w", s.Role, err)
		}
	}
	for i, path := range []string{cfg.profile, cfg.bareProfile} {
		if path == "" {
			continue
		}
		s := []*child{sdk, bareSrv}[i]
		if answer, err := s.Ask("profile"); err != nil || answer != "ok" {
			return fmt.Errorf("starting the %s server's CPU profile: %v %s", s.Role, err, answer)
		}
	}

	type summary struct {
		rps, p50, p99, cpu, gen, allocs, kb float64
		peak                                int64
		errors                              int64
	}
	var (
		rps32, p50at1 [2]float64 // sdk, bare
		has32, has1   bool
		sdkPeak       int64
	)
	fmt.Printf("\n%-4s %-8s %9s %9s %9s %11s %11s %11s %8s %10s %7s\n",
		"c", "server", "req/s", "p50", "p99", "cpu µs/req", "gen µs/req", "allocs/req", "KB/req", "peak MiB", "errors")
	for _, c := range levels {
		runs, err := harness.Rounds(ctx, cfg.rounds, len(servers), func(i int) (result, error) {
			res, err := run(servers[i], c, cfg.d)
			if err != nil {
				return res, fmt.Errorf("%s at c=%d: %w", servers[i].Role, c, err)
			}
			if res.FirstErr != "" {
				fmt.Fprintf(os.Stderr, "%s at c=%d: %d errors; the first: %s\n", servers[i].Role, c, res.Errors, res.FirstErr)
			}
			return res, nil
		})
		if err != nil {
			return err
		}
		sums := make([]summary, len(servers))
		for i, s := range servers {
			col := func(f func(result) float64) float64 { return harness.Median(runs[i], f) }
			sum := summary{
				rps:    col(result.RPS),
				p50:    col(func(r result) float64 { return float64(r.P50) }),
				p99:    col(func(r result) float64 { return float64(r.P99) }),
				cpu:    col(func(r result) float64 { return r.PerReq(float64(r.CPU) / 1e3) }),
				gen:    col(func(r result) float64 { return r.PerReq(float64(r.Gen) / 1e3) }),
				allocs: col(func(r result) float64 { return r.PerReq(float64(r.Mallocs)) }),
				kb:     col(func(r result) float64 { return r.PerReq(float64(r.Bytes)) / 1024 }),
			}
			for _, r := range runs[i] {
				sum.peak = max(sum.peak, r.peakRSS)
				sum.errors += r.Errors
			}
			sums[i] = sum
			fmt.Printf("%-4d %-8s %9.0f %9s %9s %11.1f %11.1f %11.1f %8.1f %10.1f %7d\n", c, s.Role, sum.rps,
				time.Duration(sum.p50).Round(time.Microsecond), time.Duration(sum.p99).Round(time.Microsecond),
				sum.cpu, sum.gen, sum.allocs, sum.kb, float64(sum.peak)/mib, sum.errors)
		}
		for i, s := range servers[:bare] {
			sdkPeak = max(sdkPeak, sums[i].peak)
			f := floor(i)
			fmt.Printf("%-4d %s/%s: req/s %.3fx  p50 %.3fx  p99 %.3fx  cpu/req %.3fx", c, s.Role, servers[f].Role,
				sums[i].rps/sums[f].rps, sums[i].p50/sums[f].p50, sums[i].p99/sums[f].p99, sums[i].cpu/sums[f].cpu)
			if i > 0 { // what the credential costs over the token's
				fmt.Printf("  (cpu/req %+.1f µs over sdk's", sums[i].cpu-sums[0].cpu)
				if f != bare {
					fmt.Printf("; req/s %.3fx bare's", sums[i].rps/sums[bare].rps)
				}
				fmt.Print(")")
			}
			fmt.Println()
		}
		fmt.Println()
		if c == rpsLevel {
			rps32, has32 = [2]float64{sums[0].rps, sums[bare].rps}, true
		}
		if c == p50Level {
			p50at1, has1 = [2]float64{sums[0].p50, sums[bare].p50}, true
		}
	}

	fmt.Println("issue #15's targets:")
	if has32 {
		x := rps32[0] / rps32[1]
		fmt.Printf("  req/s at c=%d: sdk/bare %.3fx (target ≥ %.2fx): %s\n", rpsLevel, x, rpsTarget, harness.Verdict(x >= rpsTarget))
	} else {
		fmt.Printf("  req/s at c=%d: not measured (-c has no %d)\n", rpsLevel, rpsLevel)
	}
	if has1 {
		x := p50at1[0] / p50at1[1]
		fmt.Printf("  p50 at c=%d:    sdk/bare %.3fx (target ≤ %.1fx): %s\n", p50Level, x, p50Target, harness.Verdict(x <= p50Target))
	} else {
		fmt.Printf("  p50 at c=%d: not measured (-c has no %d)\n", p50Level, p50Level)
	}
	over := "the measured runs"
	if len(creds) > 1 {
		over = "the measured runs of every credential (the target is the token's: -auth token alone)"
	}
	fmt.Printf("  sdk peak RSS:   %.1f MiB over %s (target ≤ %d MiB): %s\n", float64(sdkPeak)/mib, over, rssTarget, harness.Verdict(sdkPeak <= rssTarget*mib))
	for _, s := range []*child{sdk, bareSrv} {
		if _, hwm, err := s.memory(); err == nil && !canReset {
			fmt.Printf("  (%s VmHWM since start, warm-up included: %.1f MiB)\n", s.Role, float64(hwm)/mib)
		}
	}
	if fi, err := os.Stat(sdk.LogPath); err == nil {
		fmt.Printf("the sdk's request log: %d bytes written to %s (removed at the end)\n", fi.Size(), sdk.LogPath)
	}
	fmt.Printf("load average at the end: %s\n", loadAverage())
	for i, path := range []string{cfg.profile, cfg.bareProfile} {
		if path != "" {
			fmt.Printf("the %s server's CPU profile of the measured runs is written to %s when it stops: go tool pprof -top %s\n", []*child{sdk, bareSrv}[i].Role, path, path)
		}
	}
	return nil
}

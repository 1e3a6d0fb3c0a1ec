// Command load measures the serve host's direct-call endpoint against a bare
// net/http handler doing the same work (decode the body, run the same
// handler, encode the answer) without the SDK, at several concurrencies, in
// one run, on loopback. Each server runs in its own child process; runs of
// the two alternate, and each figure is the median of the rounds.
//
//	go run ./bench/load                      # defaults: c=1 and c=32, 3 rounds of 4s
//	go run ./bench/load -c 1,8,32 -rounds 5 -duration 5s
//
// It sends at most -max requests or for -duration per run, whichever ends
// first, to 127.0.0.1 only.
//
// -store picks the host's store: memory (the default: host.Options.Store
// nil, store/memory), sqlite (store/sqlite, a file in a temporary directory
// removed at the end), or a postgres:// URL (store/postgres, in a schema
// bench_<random> created for the run, put first in search_path, and dropped
// with all it holds at the end).
//
// The store alone changes little: a direct call outside a session
// (host.CallTool without CallOptions.SessionID, host/call.go) validates the
// input and runs the handler in a scratch workspace, made only if the
// handler asks for it, and reads or writes nothing in the store. -session
// makes every call session-bound: before each run, each worker opens a
// session of its own (POST /<slug>/v1/session, not timed) and sends its
// sessionId in every call's body. Such a call (host/sessioncall.go) is a
// turn of its own: it reads the session, then records turn.started,
// action.result and turn.completed in the store, so every call writes it.
// A worker waits for each answer, so its session never has two turns at
// once.
//
// The sdk host is started (host.Start) as agent-sdk serve starts it, so
// its background work for the store runs during the measurement too.
//
//	go run ./bench/load -store sqlite -session
//	go run ./bench/load -store 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable' -session
//
// The bare handler is the same in every mode, and gets the same body
// without a sessionId: it is the fixed yardstick of the ratios.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	_ "github.com/agentsdk/agentsdk/examples/quickstart/agent/tools"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/postgres"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

const (
	token = "bench-token"
	slug  = "quickstart"
)

var body = []byte(`{"input":{"prUrl":"https://github.com/acme/checkout/pull/42"}}`)

func main() {
	role := flag.String("serve", "", "internal: run a server (sdk or bare) and print its address")
	levels := flag.String("c", "1,32", "concurrency levels, comma-separated")
	rounds := flag.Int("rounds", 3, "rounds per level (runs of sdk and bare alternate)")
	duration := flag.Duration("duration", 4*time.Second, "length of one run")
	maxReq := flag.Int("max", 2_000_000, "most requests in one run")
	profile := flag.String("cpuprofile", "", "write the sdk server's CPU profile to this file")
	storeFlag := flag.String("store", "memory", "the sdk host's store: memory, sqlite (a temporary file), or a postgres:// URL (a schema of the run's own)")
	session := flag.Bool("session", false, "make every sdk call session-bound (one session per worker, sessionId in the body), so that each call writes the store")
	flag.Parse()
	if *role != "" {
		if *profile != "" {
			f, err := os.Create(*profile)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
		if err := runServer(*role, *storeFlag); err != nil {
			fmt.Fprintln(os.Stderr, err)
			pprof.StopCPUProfile()
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := measure(ctx, config{levels: *levels, rounds: *rounds, d: *duration, max: *maxReq, profile: *profile, store: *storeFlag, session: *session})
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

// openStore opens the sdk host's store; nil for memory, which host.New
// then makes (host.Options.Store nil).
func openStore(ctx context.Context, which, state string) (store.Store, error) {
	switch {
	case which == "memory":
		return nil, nil
	case which == "sqlite":
		return sqlite.Open(ctx, filepath.Join(state, "agent.db"))
	case isPostgres(which):
		return postgres.Open(ctx, which)
	}
	return nil, fmt.Errorf("unknown store %q: want memory, sqlite or a postgres:// URL", which)
}

// runServer serves one implementation on a loopback port until stdin closes.
func runServer(role, storeArg string) error {
	var handler http.Handler
	switch role {
	case "sdk":
		set, err := tool.Registered()
		if err != nil {
			return err
		}
		state, err := os.MkdirTemp("", "bench-state")
		if err != nil {
			return err
		}
		defer os.RemoveAll(state)
		st, err := openStore(context.Background(), storeArg, state)
		if err != nil {
			return err
		}
		if st != nil {
			defer st.Close()
		}
		h, err := host.New(set, &host.Options{StateRoot: state, Store: st})
		if err != nil {
			return err
		}
		// Started, as agent-sdk serve starts it: its background work runs
		// while it is measured.
		if err := h.Start(context.Background()); err != nil {
			return err
		}
		defer h.Close()
		// Request logs on, as in production, formatted but not written to a
		// terminal.
		srv, err := serve.New(h, &serve.Options{Slug: slug, Token: token, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			return err
		}
		handler = srv
	case "bare":
		handler = http.HandlerFunc(bare)
	default:
		return fmt.Errorf("unknown server %q", role)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	go func() { io.Copy(io.Discard, os.Stdin); ln.Close() }()
	err = http.Serve(ln, handler)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// bare is what a Go program without the SDK would write: decode, run the
// same logic as inspect_pr, encode.
func bare(w http.ResponseWriter, r *http.Request) {
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

type server struct {
	base  string // http://127.0.0.1:port
	url   string // the endpoint measured
	stdin io.WriteCloser
	cmd   *exec.Cmd
}

func startServer(role, profile, storeArg string) (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-serve", role, "-cpuprofile", profile, "-store", storeArg)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Wait()
		return nil, fmt.Errorf("starting %s server: %w", role, err)
	}
	base := "http://" + strings.TrimSpace(addr)
	url := base + "/inspect_pr"
	if role == "sdk" {
		url = base + "/" + slug + "/v1/tools/inspect_pr"
	}
	return &server{base: base, url: url, stdin: stdin, cmd: cmd}, nil
}

func (s *server) stop() { s.stdin.Close(); s.cmd.Wait() }

// openSessions opens n sessions on the sdk server and returns a call body
// bound to each.
func (s *server) openSessions(ctx context.Context, n int) ([][]byte, error) {
	var in struct {
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	bodies := make([][]byte, n)
	for i := range bodies {
		req, _ := http.NewRequestWithContext(ctx, "POST", s.base+"/"+slug+"/v1/session", strings.NewReader(`{}`))
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

type stats struct {
	rps      float64
	p50, p99 time.Duration
	errors   int
	firstErr string // the first failure, to say why
}

// same returns n copies of the plain call body.
func same(n int) [][]byte {
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = body
	}
	return bodies
}

// load sends requests from one worker per body, each sending its own, for
// d or max requests.
func load(ctx context.Context, url string, bodies [][]byte, d time.Duration, max int) stats {
	c := len(bodies)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c, MaxConnsPerHost: c}}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		errors    int
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
	start := time.Now()
	for _, body := range bodies {
		wg.Go(func() {
			local := make([]time.Duration, 0, 4096)
			bad := 0
			defer func() {
				mu.Lock()
				latencies = append(latencies, local...)
				errors += bad
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
				req.Header.Set("Authorization", "Bearer "+token)
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
	client.CloseIdleConnections()
	slices.Sort(latencies)
	st := stats{rps: float64(len(latencies)) / elapsed.Seconds(), errors: errors, firstErr: firstErr}
	if n := len(latencies); n > 0 {
		st.p50 = latencies[n/2]
		st.p99 = latencies[n*99/100]
	}
	return st
}

func median(xs []stats) stats {
	slices.SortFunc(xs, func(a, b stats) int { return int(a.rps - b.rps) })
	return xs[len(xs)/2]
}

// config is a run's flags.
type config struct {
	levels  string
	rounds  int
	d       time.Duration
	max     int
	profile string
	store   string // memory, sqlite or a postgres:// URL
	session bool
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

func measure(ctx context.Context, cfg config) (err error) {
	storeArg := cfg.store
	var storeLabel string
	switch {
	case cfg.store == "memory":
		storeLabel = "memory (host.Options.Store nil: store/memory)"
	case cfg.store == "sqlite":
		storeLabel = "sqlite (store/sqlite, a file in a temporary directory)"
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
		storeLabel = "postgres (store/postgres, schema " + u.Query().Get("search_path") + " of " + u.Redacted() + ")"
	default:
		return fmt.Errorf("unknown store %q: want memory, sqlite or a postgres:// URL", cfg.store)
	}
	sdk, err := startServer("sdk", cfg.profile, storeArg)
	if err != nil {
		return err
	}
	defer sdk.stop()
	bareSrv, err := startServer("bare", "", "memory")
	if err != nil {
		return err
	}
	defer bareSrv.stop()
	// sdkBodies returns the sdk workers' bodies for a run of c.
	sdkBodies := func(c int) ([][]byte, error) {
		if !cfg.session {
			return same(c), nil
		}
		return sdk.openSessions(ctx, c)
	}
	mode := "outside any session (the store is not touched)"
	if cfg.session {
		mode = "session-bound (a session per worker, opened before each run; every call writes the store)"
	}
	fmt.Printf("sdk store: %s\nsdk calls: %s\n", storeLabel, mode)
	// Warm both up.
	warm, err := sdkBodies(4)
	if err != nil {
		return err
	}
	load(ctx, sdk.url, warm, time.Second, cfg.max)
	load(ctx, bareSrv.url, same(4), time.Second, cfg.max)
	fmt.Printf("%-4s %-6s %12s %10s %10s %8s\n", "c", "server", "req/s", "p50", "p99", "errors")
	for _, field := range strings.Split(cfg.levels, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || c < 1 || c > 1024 {
			return fmt.Errorf("bad concurrency %q", field)
		}
		var s, b []stats
		for range cfg.rounds {
			bodies, err := sdkBodies(c)
			if err != nil {
				return err
			}
			s = append(s, load(ctx, sdk.url, bodies, cfg.d, cfg.max))
			b = append(b, load(ctx, bareSrv.url, same(c), cfg.d, cfg.max))
			if ctx.Err() != nil {
				return errors.New("interrupted")
			}
		}
		for _, st := range slices.Concat(s, b) {
			if st.firstErr != "" {
				fmt.Fprintf(os.Stderr, "c=%d: %d failed requests, the first: %s\n", c, st.errors, st.firstErr)
			}
		}
		ms, mb := median(s), median(b)
		fmt.Printf("%-4d %-6s %12.0f %10s %10s %8d\n", c, "sdk", ms.rps, ms.p50.Round(time.Microsecond), ms.p99.Round(time.Microsecond), ms.errors)
		fmt.Printf("%-4d %-6s %12.0f %10s %10s %8d\n", c, "bare", mb.rps, mb.p50.Round(time.Microsecond), mb.p99.Round(time.Microsecond), mb.errors)
		fmt.Printf("%-4d ratio  %12.2fx (sdk req/s / bare req/s)\n", c, ms.rps/mb.rps)
	}
	return nil
}

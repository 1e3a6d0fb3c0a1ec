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
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "github.com/agentsdk/agentsdk/examples/quickstart/agent/tools"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/tool"
)

const token = "bench-token"

var body = []byte(`{"input":{"prUrl":"https://github.com/acme/checkout/pull/42"}}`)

func main() {
	role := flag.String("serve", "", "internal: run a server (sdk or bare) and print its address")
	levels := flag.String("c", "1,32", "concurrency levels, comma-separated")
	rounds := flag.Int("rounds", 3, "rounds per level (runs of sdk and bare alternate)")
	duration := flag.Duration("duration", 4*time.Second, "length of one run")
	maxReq := flag.Int("max", 2_000_000, "most requests in one run")
	profile := flag.String("cpuprofile", "", "write the sdk server's CPU profile to this file")
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
		if err := runServer(*role); err != nil {
			fmt.Fprintln(os.Stderr, err)
			pprof.StopCPUProfile()
			os.Exit(1)
		}
		return
	}
	if err := measure(*levels, *rounds, *duration, *maxReq, *profile); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// runServer serves one implementation on a loopback port until stdin closes.
func runServer(role string) error {
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
		h, err := host.New(set, &host.Options{StateRoot: state})
		if err != nil {
			return err
		}
		// Request logs on, as in production, formatted but not written to a
		// terminal.
		srv, err := serve.New(h, &serve.Options{Slug: "quickstart", Token: token, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
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
	url   string
	stdin io.WriteCloser
	cmd   *exec.Cmd
}

func startServer(role, profile string) (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-serve", role, "-cpuprofile", profile)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("starting %s server: %w", role, err)
	}
	url := "http://" + strings.TrimSpace(addr)
	if role == "sdk" {
		url += "/quickstart/v1/tools/inspect_pr"
	} else {
		url += "/inspect_pr"
	}
	return &server{url: url, stdin: stdin, cmd: cmd}, nil
}

func (s *server) stop() { s.stdin.Close(); s.cmd.Wait() }

type stats struct {
	rps      float64
	p50, p99 time.Duration
	errors   int
}

// load sends requests from c workers for d or max requests.
func load(url string, c int, d time.Duration, max int) stats {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c, MaxConnsPerHost: c}}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		errors    int
		sent      int
		wg        sync.WaitGroup
	)
	start := time.Now()
	for range c {
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
					}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					bad++
					continue
				}
				local = append(local, time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	client.CloseIdleConnections()
	slices.Sort(latencies)
	st := stats{rps: float64(len(latencies)) / elapsed.Seconds(), errors: errors}
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

func measure(levels string, rounds int, d time.Duration, max int, profile string) error {
	sdk, err := startServer("sdk", profile)
	if err != nil {
		return err
	}
	defer sdk.stop()
	bareSrv, err := startServer("bare", "")
	if err != nil {
		return err
	}
	defer bareSrv.stop()
	// Warm both up.
	load(sdk.url, 4, time.Second, max)
	load(bareSrv.url, 4, time.Second, max)
	fmt.Printf("%-4s %-6s %12s %10s %10s %8s\n", "c", "server", "req/s", "p50", "p99", "errors")
	for _, field := range strings.Split(levels, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || c < 1 || c > 1024 {
			return fmt.Errorf("bad concurrency %q", field)
		}
		var s, b []stats
		for range rounds {
			s = append(s, load(sdk.url, c, d, max))
			b = append(b, load(bareSrv.url, c, d, max))
		}
		ms, mb := median(s), median(b)
		fmt.Printf("%-4d %-6s %12.0f %10s %10s %8d\n", c, "sdk", ms.rps, ms.p50.Round(time.Microsecond), ms.p99.Round(time.Microsecond), ms.errors)
		fmt.Printf("%-4d %-6s %12.0f %10s %10s %8d\n", c, "bare", mb.rps, mb.p50.Round(time.Microsecond), mb.p99.Round(time.Microsecond), mb.errors)
		fmt.Printf("%-4d ratio  %12.2fx (sdk req/s / bare req/s)\n", c, ms.rps/mb.rps)
	}
	return nil
}

// Command attack runs the two attacks of issue 26 (items 1 and 2) on a
// serve host with agent-sdk serve's default limits, and measures what an
// authenticated client sees meanwhile: the share of its probes that
// succeed, and their latency.
//
//	go run ./bench/attack                          # both attacks, 15 s each
//	go run ./bench/attack -attack slowbody -duration 10s
//	go run ./bench/attack -attack hang -conns 1100
//
// The server runs in a child process of its own (this binary re-executed
// with -serve), so that the attackers' CPU is not the server's:
// serve.ListenAndServe with the default limits (--max-conns 1024 and the
// rest) in front of a host with two tools, quick (answers at once)
// hang (ignores its context: blocks until the process ends; a 100 ms
// timeout), a channel route signed like GitHub's
// webhooks (channel.HMACSHA256, X-Hub-Signature-256, 1 MiB), and the
// playground.
//
// The attacks:
//
//   - slowbody: -conns connections without the token, each sending its
//     head and one byte of a body it declares longer (three in four to the
//     signed route, 100 KB; the others to the playground's sign-in form,
//     4000 bytes), each reopened a second after the server closes it.
//   - hang: -workers clients calling hang with the token, each on a new
//     connection, as fast as they are answered (50 ms after a refusal),
//     until -conns calls have been answered at the timeout or the attack
//     ends; every such call leaves a handler running.
//
// During each attack, after a one-second ramp, -probers clients make
// authenticated calls of quick and GET /healthz, each on a new connection
// with a 5 s timeout, and the command prints how many succeeded (200),
// their p50, p99 and slowest latency, how the others failed, and what the
// attackers were answered. The figures depend on the machine's load (printed).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentsdk/agentsdk/bench/internal/harness"
	"github.com/agentsdk/agentsdk/channel"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/tool"
)

const (
	slug  = "agent"
	token = "bench-token"
)

func main() {
	role := flag.String("serve", "", "internal: run the server and print its address")
	attack := flag.String("attack", "slowbody,hang", "the attacks to run, comma-separated: slowbody, hang")
	duration := flag.Duration("duration", 15*time.Second, "length of each attack")
	conns := flag.Int("conns", 1100, "slowbody: connections held; hang: calls left hanging at most")
	workers := flag.Int("workers", 32, "hang: clients calling hang at once")
	probers := flag.Int("probers", 4, "authenticated clients probing during the attack")
	flag.Parse()
	if *role != "" {
		if err := runServer(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	// net/http's client logs each answer the server writes before it reads
	// a request (a refused connection's 503): thousands, in an attack.
	log.SetOutput(io.Discard)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	for _, name := range strings.Split(*attack, ",") {
		run, ok := attacks[strings.TrimSpace(name)]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown attack %q: want slowbody or hang\n", name)
			os.Exit(2)
		}
		if err := measure(ctx, strings.TrimSpace(name), run, config{d: *duration, conns: *conns, workers: *workers, probers: *probers}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

// config is what an attack is run with.
type config struct {
	d                       time.Duration
	conns, workers, probers int
}

// attacker attacks the server at addr until ctx ends, counting what it is
// answered in tally.
type attacker func(ctx context.Context, addr string, c config, tally *tally)

var attacks = map[string]attacker{"slowbody": slowBodies, "hang": hangCalls}

// measure runs one attack on a fresh server, probing it meanwhile.
func measure(ctx context.Context, name string, attack attacker, c config) error {
	child, err := harness.Start("sdk")
	if err != nil {
		return err
	}
	defer child.Stop()
	addr := strings.TrimPrefix(child.Base, "http://")
	fmt.Printf("attack %s: %s, load average %s\n", name, describe(name, c), loadavg())
	actx, cancel := context.WithTimeout(ctx, c.d)
	defer cancel()
	var t tally
	var wg sync.WaitGroup
	wg.Go(func() { attack(actx, addr, c, &t) })
	select { // the ramp
	case <-actx.Done():
	case <-time.After(time.Second):
	}
	probes := probe(actx, child.Base, c.probers)
	wg.Wait()
	for _, p := range probes {
		fmt.Printf("  probes %-8s %5d sent, %5.1f%% succeeded (latency p50 %v, p99 %v, max %v); failed %v\n",
			p.name, p.sent, 100*float64(p.ok)/float64(max(p.sent, 1)), p.pct(50), p.pct(99), p.pct(100), p.failures)
	}
	fmt.Printf("  attackers were answered: %v\n", t.snapshot())
	return nil
}

func describe(name string, c config) string {
	if name == "hang" {
		return fmt.Sprintf("%d clients calling hang (100 ms timeout, ignores its context), up to %d left hanging, for %v", c.workers, c.conns, c.d)
	}
	return fmt.Sprintf("%d connections without the token, one byte of each body, reopened, for %v", c.conns, c.d)
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// tally counts answers by what they were.
type tally struct {
	mu sync.Mutex
	m  map[string]int
}

func (t *tally) add(what string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]int{}
	}
	t.m[what]++
}

func (t *tally) snapshot() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := make([]string, 0, len(t.m))
	for k := range t.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s ×%d; ", k, t.m[k])
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// slowBodies holds c.conns connections sending one byte of their bodies.
func slowBodies(ctx context.Context, addr string, c config, t *tally) {
	heads := []string{
		"POST /" + slug + "/channels/github/webhook HTTP/1.1\r\nHost: x\r\nX-Hub-Signature-256: sha256=00\r\nContent-Length: 100000\r\n\r\n{",
		"POST /" + slug + "/channels/github/webhook HTTP/1.1\r\nHost: x\r\nX-Hub-Signature-256: sha256=00\r\nContent-Length: 100000\r\n\r\n{",
		"POST /" + slug + "/channels/github/webhook HTTP/1.1\r\nHost: x\r\nX-Hub-Signature-256: sha256=00\r\nContent-Length: 100000\r\n\r\n{",
		"POST /" + slug + "/playground/signin HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 4000\r\n\r\nt",
	}
	var wg sync.WaitGroup
	for i := range c.conns {
		wg.Go(func() {
			var d net.Dialer
			for ctx.Err() == nil {
				conn, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					t.add("dial error")
					sleep(ctx, time.Second)
					continue
				}
				stop := context.AfterFunc(ctx, func() { conn.Close() })
				io.WriteString(conn, heads[i%len(heads)])
				buf := make([]byte, 512)
				n, _ := io.ReadAtLeast(conn, buf, 12)
				if ctx.Err() == nil {
					t.add(status(buf[:n]))
				}
				io.Copy(io.Discard, conn) // until the server closes it
				stop()
				conn.Close()
				sleep(ctx, time.Second)
			}
		})
	}
	wg.Wait()
}

// status is the status line's code and the error code of an answer's
// first bytes, or "closed" for none.
func status(b []byte) string {
	s := string(b)
	if !strings.HasPrefix(s, "HTTP/1.1 ") || len(s) < 12 {
		return "closed"
	}
	code := s[9:12]
	if _, rest, ok := strings.Cut(s, `"code":"`); ok {
		if c, _, ok := strings.Cut(rest, `"`); ok {
			return code + " " + c
		}
	}
	return code
}

// hangCalls calls hang with the token until c.conns calls have been left
// hanging.
func hangCalls(ctx context.Context, addr string, c config, t *tally) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	var hung atomic.Int64
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() {
			for ctx.Err() == nil && hung.Load() < int64(c.conns) {
				code, ok := call(ctx, client, "http://"+addr+"/"+slug+"/v1/tools/hang", `{"input":{}}`)
				if ctx.Err() != nil {
					return
				}
				t.add(code)
				if ok {
					hung.Add(1)
				} else {
					sleep(ctx, 50*time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	t.add(fmt.Sprintf("(handlers left hanging: %d)", hung.Load()))
}

// call makes one authenticated POST and returns its status (and error
// code), and whether it was 200.
func call(ctx context.Context, client *http.Client, url, body string) (string, bool) {
	var rd io.Reader
	method := http.MethodGet
	if body != "" {
		rd, method = strings.NewReader(body), http.MethodPost
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return "timeout", false
		}
		return "error", false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	code := fmt.Sprint(resp.StatusCode)
	if _, rest, ok := strings.Cut(string(b), `"code":"`); ok {
		if c, _, ok := strings.Cut(rest, `"`); ok {
			code += " " + c
		}
	}
	return code, resp.StatusCode == http.StatusOK
}

// probes are one kind of probe's results: the latencies are the
// successful ones'.
type probes struct {
	name      string
	sent, ok  int
	latencies []time.Duration
	failures  map[string]int
}

func (p *probes) pct(q int) time.Duration {
	if len(p.latencies) == 0 {
		return 0
	}
	sort.Slice(p.latencies, func(i, j int) bool { return p.latencies[i] < p.latencies[j] })
	i := min(len(p.latencies)-1, len(p.latencies)*q/100)
	return p.latencies[i].Round(100 * time.Microsecond)
}

// probe makes authenticated calls of quick and GETs of /healthz from n
// clients, each on a new connection, until ctx ends.
func probe(ctx context.Context, base string, n int) []*probes {
	kinds := []struct{ name, url, body string }{
		{"quick", base + "/" + slug + "/v1/tools/quick", `{"input":{}}`},
		{"healthz", base + "/healthz", ""},
	}
	out := make([]*probes, len(kinds))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, k := range kinds {
		out[i] = &probes{name: k.name, failures: map[string]int{}}
		for range n {
			wg.Go(func() {
				client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
				for ctx.Err() == nil {
					start := time.Now()
					code, ok := call(context.WithoutCancel(ctx), client, k.url, k.body)
					took := time.Since(start)
					mu.Lock()
					p := out[i]
					p.sent++
					if ok {
						p.ok++
						p.latencies = append(p.latencies, took)
					} else {
						p.failures[code]++
					}
					mu.Unlock()
					sleep(ctx, 20*time.Millisecond)
				}
			})
		}
	}
	wg.Wait()
	return out
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// runServer is the child: the host and its server with agent-sdk serve's
// default limits, until stdin closes.
func runServer() error {
	secret := make([]byte, 16)
	rand.Read(secret)
	os.Setenv("GITHUB_WEBHOOK_SECRET", hex.EncodeToString(secret))
	quick, _ := tool.New("quick", tool.Config{Description: "Answers at once."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "done", nil })
	forever := make(chan struct{}) // never closed: hang's handlers end with the process
	hang, _ := tool.New("hang", tool.Config{Description: "Ignores its context.", Timeout: 100 * time.Millisecond},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			<-forever
			return "late", nil
		})
	set, err := tool.NewSet(quick, hang)
	if err != nil {
		return err
	}
	gh, err := channel.New("github", channel.Config{Routes: []channel.Route{{
		Method: http.MethodPost, Path: "/webhook",
		Auth: channel.HMACSHA256("X-Hub-Signature-256", "sha256=", "GITHUB_WEBHOOK_SECRET"),
		Handler: func(h tool.Handle, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
		},
	}}})
	if err != nil {
		return err
	}
	state, err := os.MkdirTemp("", "bench-attack")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	h, err := host.New(set, &host.Options{StateRoot: state, Channels: []*channel.Channel{gh}})
	if err != nil {
		return err
	}
	defer h.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := h.Start(ctx); err != nil {
		return err
	}
	srv, err := serve.New(h, &serve.Options{Slug: slug, Token: token})
	if err != nil {
		return err
	}
	err = serve.ListenAndServe(ctx, "127.0.0.1:0", srv, &serve.ListenOptions{
		DrainTimeout: time.Second,
		OnListen: func(a net.Addr) {
			fmt.Println(a.String(), "-")
			go harness.Control("", cancel)
		},
	})
	if err != nil && !errors.Is(err, context.DeadlineExceeded) { // hang's handlers never drain
		return err
	}
	return nil
}

package main_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var soakDuration = flag.Duration("soak.duration", 30*time.Second, "TestSoak: how long the steady load runs (10m for the long soak)")

// procSample is the serving process's resources at one moment.
type procSample struct {
	at         time.Duration // since the load started
	rssKiB     int64         // VmRSS
	threads    int64         // OS threads
	fds        int           // open file descriptors
	goroutines int64         // from the procstats tool, run in the process
	heapKiB    int64         // Go heap in use
}

func (s procSample) String() string {
	return fmt.Sprintf("RSS %.1f MiB, heap %.1f MiB, %d goroutines, %d threads, %d fds",
		float64(s.rssKiB)/1024, float64(s.heapKiB)/1024, s.goroutines, s.threads, s.fds)
}

// sampleProc reads the process's RSS and threads from /proc/<pid>/status,
// its open descriptors from /proc/<pid>/fd, and its goroutines and heap
// from the agent's procstats tool.
func sampleProc(t *testing.T, p *agentProc, since time.Time) procSample {
	t.Helper()
	pid := p.cmd.Process.Pid
	s := procSample{at: time.Since(since)}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading the host's status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, _ := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(value)
		if len(fields) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(fields[0], 10, 64)
		switch name {
		case "VmRSS":
			s.rssKiB = n
		case "Threads":
			s.threads = n
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("listing the host's descriptors: %v", err)
	}
	s.fds = len(fds)
	status, v, err := apiDo(context.Background(), p.base, "POST", "/tools/procstats", `{"input":{}}`)
	res, _ := v["result"].(map[string]any)
	g, ok := res["goroutines"].(float64)
	if err != nil || status != 200 || !ok {
		t.Fatalf("procstats: %d %v %v", status, v, err)
	}
	heap, _ := res["heapAlloc"].(float64)
	s.goroutines, s.heapKiB = int64(g), int64(heap)/1024
	return s
}

// soakStats counts a worker kind's requests, errors and latencies.
type soakStats struct {
	mu        sync.Mutex
	requests  map[string]int
	latencies map[string][]time.Duration
	errors    []string
	nErrors   int
}

func (s *soakStats) record(kind string, took time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[kind]++
	s.latencies[kind] = append(s.latencies[kind], took)
	if err != nil {
		s.nErrors++
		if len(s.errors) < 10 {
			s.errors = append(s.errors, fmt.Sprintf("%s: %v", kind, err))
		}
	}
}

// TestSoak runs steady load against a real host — direct calls, session-bound
// calls, KV increments, and new sessions whose model turn a client follows
// on the SSE stream to its end — for -soak.duration (30 s; 10m for the long
// soak) and asserts that every request succeeded, that the counter holds
// every increment, and that memory, goroutines and descriptors stayed flat:
// sampled after a warm-up and at the end, under the same load.
func TestSoak(t *testing.T) {
	dir, bin := chaosAgent(t, false)
	model := newChaosModel(t)
	host := agentSpec{bin: bin, dir: dir, state: t.TempDir(), env: model.env()}.start(t)
	base := host.base
	duration := *soakDuration
	warmUp := min(max(duration/10, 3*time.Second), 30*time.Second)

	stats := &soakStats{requests: map[string]int{}, latencies: map[string][]time.Duration{}}
	// call sends one request and checks its answer; want says what a good
	// answer is. Requests are not cancelled when the load stops: each is
	// answered and counted.
	call := func(kind, method, path, body string, status int, want func(map[string]any) bool) map[string]any {
		start := time.Now()
		got, v, err := apiDo(context.Background(), base, method, path, body)
		if err == nil && (got != status || !want(v)) {
			err = fmt.Errorf("%s %s: %d %v", method, path, got, v)
		}
		stats.record(kind, time.Since(start), err)
		if err != nil {
			return nil
		}
		return v
	}
	okCall := func(v map[string]any) bool { return v["ok"] == true && v["isError"] == false }
	openSession := func() string {
		status, v, err := apiDo(context.Background(), base, "POST", "/session", `{}`)
		id, _ := v["sessionId"].(string)
		if err != nil || status != 201 || id == "" {
			t.Fatalf("opening a session: %d %v %v", status, v, err)
		}
		return id
	}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	increments := 0        // acknowledged, by the one worker that increments
	var pause sync.RWMutex // held to pause the load
	loop := func(body func(n int)) {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				pause.RLock()
				body(n)
				pause.RUnlock()
			}
		})
	}
	// quiet samples the host with no load: no request in flight, and no
	// idle connection of the tests' clients kept open.
	quiet := func(since time.Time) procSample {
		chaosHTTP.CloseIdleConnections()
		followHTTP.CloseIdleConnections()
		time.Sleep(time.Second)
		return sampleProc(t, host, since)
	}
	for i := range 2 {
		loop(func(n int) {
			call("direct call", "POST", "/tools/hello", fmt.Sprintf(`{"input":{"name":"d%d-%d"}}`, i, n), 200, okCall)
		})
		sid := openSession()
		loop(func(n int) {
			call("session call", "POST", "/tools/hello", fmt.Sprintf(`{"input":{"name":"s%d-%d"},"sessionId":%q}`, i, n, sid), 200, okCall)
		})
	}
	loop(func(n int) {
		if call("incr", "POST", "/tools/incr", `{"input":{"key":"soak/counter"}}`, 200, okCall) != nil {
			increments++
		}
	})
	// New sessions with a model turn, each followed on its stream to the
	// turn's end; no more than 800 in the run, under the host's default
	// quota of sessions a principal may create in an hour (1,000).
	every := (warmUp + duration) / 800
	next := time.Now()
	loop(func(n int) {
		time.Sleep(time.Until(next))
		next = time.Now().Add(every)
		if ctx.Err() != nil {
			return
		}
		v := call("new session", "POST", "/session", `{"message":"hello there"}`, 201, func(v map[string]any) bool { return v["sessionId"] != nil })
		sid, _ := v["sessionId"].(string)
		if sid == "" {
			return
		}
		start := time.Now()
		f := &follower{session: sid}
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for fctx.Err() == nil {
				f.mu.Lock()
				n := len(f.events)
				ended := n > 0 && f.events[n-1].Kind == "turn.completed"
				f.mu.Unlock()
				if ended {
					cancel()
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
		f.stream(fctx, base)
		<-done
		if ctx.Err() != nil {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		var err error
		switch kinds := kindList(f.events); {
		case len(f.faults) > 0:
			err = fmt.Errorf("the stream of %s: %s", sid, strings.Join(f.faults, "; "))
		case kinds != "session.created turn.started message message.delta message.delta message model.usage turn.completed":
			err = fmt.Errorf("the stream of %s: %s", sid, kinds)
		}
		stats.record("followed turn", time.Since(start), err)
	})

	// After the warm-up the load pauses for a sample of the host at rest,
	// and again once it stopped: the two are compared. Under load the
	// figures (goroutines above all: requests in flight) are only logged.
	loadStart := time.Now()
	time.Sleep(warmUp)
	pause.Lock()
	first := quiet(loadStart)
	pause.Unlock()
	t.Logf("after a %v warm-up, at rest: %s", warmUp, first)
	for end := time.Now().Add(duration); time.Now().Before(end); {
		time.Sleep(min(duration/6, time.Until(end)))
		s := sampleProc(t, host, loadStart)
		t.Logf("at %v, under load: %s", s.at.Round(time.Second), s)
	}
	stop()
	wg.Wait()
	last := quiet(loadStart)
	t.Logf("after %v of load, at rest: %s", duration, last)

	// Zero errors.
	stats.mu.Lock()
	var kinds []string
	total := 0
	for kind, n := range stats.requests {
		lat := slices.Clone(stats.latencies[kind])
		slices.Sort(lat)
		kinds = append(kinds, fmt.Sprintf("%s %d (%.0f/s, p50 %v, p99 %v)", kind, n, float64(n)/(duration+warmUp).Seconds(),
			lat[len(lat)/2].Round(10*time.Microsecond), lat[len(lat)*99/100].Round(10*time.Microsecond)))
		total += n
	}
	slices.Sort(kinds)
	t.Logf("%d requests in %v, %d errors: %s", total, (duration + warmUp).Round(time.Second), stats.nErrors, strings.Join(kinds, "; "))
	if stats.nErrors > 0 {
		t.Errorf("%d requests failed; the first:\n  %s", stats.nErrors, strings.Join(stats.errors, "\n  "))
	}
	stats.mu.Unlock()
	status, v, err := apiDo(context.Background(), base, "POST", "/tools/incr", `{"input":{"key":"soak/counter","read":true}}`)
	if res, _ := v["result"].(map[string]any); err != nil || status != 200 || res["value"] != float64(increments) {
		t.Errorf("the counter: %d %v %v; %d increments were acknowledged", status, v, err, increments)
	}
	if lines := host.notableLines(); len(lines) > 0 {
		t.Errorf("the host logged %d warnings or errors:\n%s", len(lines), strings.Join(lines[:min(len(lines), 20)], "\n"))
	}

	// Flat: the host at rest after the load is as it was after the
	// warm-up, within generous bounds.
	rssGrowth := last.rssKiB - first.rssKiB
	if limit := max(first.rssKiB/2, 48<<10); rssGrowth > limit {
		t.Errorf("RSS grew by %.1f MiB (from %.1f to %.1f MiB), more than %.1f MiB", float64(rssGrowth)/1024, float64(first.rssKiB)/1024,
			float64(last.rssKiB)/1024, float64(limit)/1024)
	}
	if last.goroutines > first.goroutines+10 {
		t.Errorf("goroutines: %d after the warm-up, %d at the end: a leak", first.goroutines, last.goroutines)
	}
	if last.fds > first.fds+10 {
		t.Errorf("open descriptors: %d after the warm-up, %d at the end: a leak", first.fds, last.fds)
	}
	t.Logf("from the warm-up to the end of %v of load, at rest: RSS %+.1f MiB, goroutines %+d, fds %+d (state directory: %s)", duration,
		float64(rssGrowth)/1024, last.goroutines-first.goroutines, last.fds-first.fds, dirSize(host))
}

// kindList lists the events' kinds.
func kindList(evs []chaosEvent) string {
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	return strings.Join(kinds, " ")
}

// dirSize says how much the host's state directory holds.
func dirSize(p *agentProc) string {
	var state string
	for i, a := range p.cmd.Args {
		if a == "--state" && i+1 < len(p.cmd.Args) {
			state = p.cmd.Args[i+1]
		}
	}
	var size int64
	filepath.Walk(state, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			size += fi.Size()
		}
		return nil
	})
	return fmt.Sprintf("%.1f MiB", float64(size)/(1<<20))
}

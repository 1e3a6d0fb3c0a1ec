// Package session benchmarks the session machinery on the real store and
// real HTTP: event append rate, delivery latency to SSE subscribers, and the
// model loop's own overhead per tool round trip with an instant fake model.
//
//	go test ./bench/session -run xxx -bench . -benchtime 2000x
package session

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/model/openai"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

func openStore(b *testing.B) store.Store {
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "agent.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// BenchmarkAppend appends one event at a time to a session: the rate of
// durable event writes (each its own transaction).
func BenchmarkAppend(b *testing.B) {
	st := openStore(b)
	ctx := context.Background()
	st.CreateSession(ctx, api.Session{ID: "s", Channel: "http", Mode: "local"})
	ev := api.Event{Kind: "message.delta", Data: json.RawMessage(`{"text":"a few words of a streamed answer"}`)}
	b.ResetTimer()
	for b.Loop() {
		if _, err := st.Append(ctx, "s", ev); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkAppendParallel appends from 8 goroutines to 8 sessions.
func BenchmarkAppendParallel(b *testing.B) {
	st := openStore(b)
	ctx := context.Background()
	for i := range 8 {
		st.CreateSession(ctx, api.Session{ID: fmt.Sprint(i), Channel: "http", Mode: "local"})
	}
	ev := api.Event{Kind: "message.delta", Data: json.RawMessage(`{"text":"a few words"}`)}
	var mu sync.Mutex
	next := 0
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		mu.Lock()
		id := fmt.Sprint(next % 8)
		next++
		mu.Unlock()
		for pb.Next() {
			if _, err := st.Append(ctx, id, ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkDelivery measures, for each session-bound call (three events),
// the time from the call's start until every SSE subscriber has read its
// last event over HTTP.
func BenchmarkDelivery(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) { delivery(b, n) })
	}
}

func delivery(b *testing.B, n int) {
	ctx := context.Background()
	st := openStore(b)
	ping, _ := tool.New("ping", tool.Config{Description: "Answers at once."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "pong", nil })
	set, _ := tool.NewSet(ping)
	h, _ := host.New(set, &host.Options{StateRoot: b.TempDir(), Store: st})
	defer h.Close()
	srv, _ := serve.New(h, &serve.Options{Slug: "a", Token: "t"})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Shutdown()
	sess, _, _ := h.Sessions().Create(ctx, host.SessionOptions{})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}}

	seen := make(chan int64, n*4)
	var ready sync.WaitGroup
	ready.Add(n)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	for range n {
		go func() {
			req, _ := http.NewRequestWithContext(sctx, "GET", ts.URL+"/a/v1/session/"+sess.ID+"/events", nil)
			req.Header.Set("Authorization", "Bearer t")
			resp, err := client.Do(req)
			if err != nil {
				ready.Done()
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			first := true
			for sc.Scan() {
				line := sc.Text()
				if strings.HasPrefix(line, "id: ") {
					if first {
						ready.Done() // caught up with session.created
						first = false
						continue
					}
					var id int64
					fmt.Sscan(line[4:], &id)
					seen <- id
				}
			}
		}()
	}
	ready.Wait()
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := h.CallTool(ctx, "ping", nil, &host.CallOptions{SessionID: sess.ID}); err != nil {
			b.Fatal(err)
		}
		last, err := h.Sessions().Get(ctx, sess.ID)
		if err != nil {
			b.Fatal(err)
		}
		for got := 0; got < n; {
			if id := <-seen; id == last.LastSeq {
				got++
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkToolRoundTrip runs turns of 20 round trips each against an
// instant fake model (an HTTP server speaking the provider's streaming
// format) and an instant tool, reporting the time per round trip: model
// call, parsing its stream, storing the events, running the tool, building
// the next request.
func BenchmarkToolRoundTrip(b *testing.B) {
	for _, provider := range []string{"anthropic", "openai"} {
		b.Run(provider, func(b *testing.B) { roundTrips(b, provider) })
	}
}

func roundTrips(b *testing.B, provider string) {
	const steps = 20
	ctx := context.Background()
	fake := fakemodel.New()
	defer fake.Close()
	var p model.Provider
	switch provider {
	case "anthropic":
		p, _ = anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: fake.AnthropicURL(), MaxTokens: 100})
	default:
		p, _ = openai.New(model.Config{Name: "fake", APIKey: "k", BaseURL: fake.OpenAIURL(), MaxTokens: 100})
	}
	ping, _ := tool.New("ping", tool.Config{Description: "Answers at once."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "pong", nil })
	set, _ := tool.NewSet(ping)
	st := openStore(b)
	h, _ := host.New(set, &host.Options{StateRoot: b.TempDir(), Store: st, Model: p, MaxSteps: steps + 1})
	defer h.Close()
	var total time.Duration
	turns := 0
	for b.Loop() {
		b.StopTimer()
		var script []fakemodel.Reply
		for i := range steps {
			script = append(script, fakemodel.Reply{Calls: []fakemodel.Call{{ID: fmt.Sprint("c", i), Name: "ping", Input: `{}`}}})
		}
		fake.Push(append(script, fakemodel.Reply{Text: []string{"done"}})...)
		sess, _, _ := h.Sessions().Create(ctx, host.SessionOptions{})
		b.StartTimer()
		start := time.Now()
		turnID, err := h.Sessions().Send(ctx, sess.ID, "go")
		if err != nil {
			b.Fatal(err)
		}
		for e, err := range h.Sessions().Follow(ctx, sess.ID, 0) {
			if err != nil {
				b.Fatal(err)
			}
			if e.TurnID == turnID && e.Kind == api.KindTurnFailed {
				b.Fatalf("turn failed: %s", e.Data)
			}
			if e.TurnID == turnID && e.Kind == api.KindTurnCompleted {
				break
			}
		}
		total += time.Since(start)
		turns++
	}
	b.ReportMetric(float64(total.Microseconds())/float64(turns*(steps+1)), "µs/roundtrip")
}

// BenchmarkLongSession is a turn of one tool round trip (a 2 KB result)
// in a session already this many events long, on SQLite, against an
// instant fake model with a 16,000-token window, compaction on (its
// summaries written by a second fake) and, for comparison, off (a window
// nothing reaches): the host's CPU per turn (this process's user+system
// time, the fakes' included) and its RSS after the turns.
//
//	go test ./bench/session -run xxx -bench LongSession -benchtime 20x
func BenchmarkLongSession(b *testing.B) {
	for _, mode := range []string{"compaction", "no-compaction"} {
		for _, events := range []int{10, 1_000, 10_000} {
			b.Run(fmt.Sprintf("%s/events=%d", mode, events), func(b *testing.B) { longSession(b, mode == "compaction", events) })
		}
	}
}

func longSession(b *testing.B, compaction bool, events int) {
	ctx := context.Background()
	fake, summaries := fakemodel.New(), fakemodel.New()
	defer fake.Close()
	defer summaries.Close()
	summaries.SetDefault(fakemodel.Reply{Text: []string{strings.Repeat("The user asked questions; each was answered with ping. ", 20)}})
	cfg := model.Config{Provider: "anthropic", Name: "fake", APIKey: "k", BaseURL: fake.AnthropicURL(), MaxTokens: 200, ContextWindow: 16_000}
	if !compaction {
		cfg.ContextWindow = 1 << 40
	}
	p, _ := anthropic.New(cfg)
	sp, _ := anthropic.New(model.Config{Name: "fake-summaries", APIKey: "k", BaseURL: summaries.AnthropicURL(), MaxTokens: 2048})
	result := strings.Repeat("pong ", 400)
	ping, _ := tool.New("ping", tool.Config{Description: "Answers at once."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return result, nil })
	set, _ := tool.NewSet(ping)
	h, err := host.New(set, &host.Options{StateRoot: b.TempDir(), Store: openStore(b), Model: p, ModelConfig: cfg, MaxSteps: 4,
		Compaction: host.CompactionOptions{Model: sp}})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	sess, _, _ := h.Sessions().Create(ctx, host.SessionOptions{})
	var last int64 // the session's last seq
	turn := func(n int) {
		fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "call_0", Name: "ping", Input: `{}`}}}, fakemodel.Reply{Text: []string{fmt.Sprint("answer ", n)}})
		turnID, err := h.Sessions().Send(ctx, sess.ID, fmt.Sprint("question ", n))
		if err != nil {
			b.Fatal(err)
		}
		for e, err := range h.Sessions().Follow(ctx, sess.ID, last) {
			if err != nil {
				b.Fatal(err)
			}
			if e.TurnID == turnID && e.Kind == api.KindTurnFailed {
				b.Fatalf("turn failed: %s", e.Data)
			}
			if e.TurnID == turnID && e.Kind == api.KindTurnCompleted {
				last = e.Seq
				break
			}
		}
	}
	n := 0
	for ; last < int64(events); n++ {
		turn(n)
	}
	runtime.GC()
	before := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		turn(n)
		n++
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-before).Microseconds())/float64(b.N)/1000, "cpu-ms/turn")
	b.ReportMetric(float64(rssBytes())/(1<<20), "rss-MiB")
	compactions := 0
	for e, err := range h.Sessions().Follow(ctx, sess.ID, 0) {
		if err != nil {
			b.Fatal(err)
		}
		if e.Kind == api.KindContextCompacted {
			compactions++
		}
		if e.Seq == last {
			break
		}
	}
	b.ReportMetric(float64(last), "events")
	b.ReportMetric(float64(compactions), "compactions")
}

// cpuTime is this process's user and system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssBytes is this process's resident set now (Linux; 0 elsewhere).
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, resident int64
	fmt.Sscan(string(b), &size, &resident)
	return resident * int64(os.Getpagesize())
}

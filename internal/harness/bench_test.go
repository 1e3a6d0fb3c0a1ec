package harness_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/internal/harnesstest"
)

// BenchmarkStart measures a harness's start-up as a turn pays it: the
// process started and initialised, and a session opened (new; then load,
// in later processes on the same HOME, after a prompt in the first), with
// the resident memory of the process tree after that first prompt
// (rss-MB). The first iteration is cold (a new HOME: cold-init-ms, and
// first-new-ms for its session/new); the later ones are warm (the HOME
// the first left: warm-init-ms, and load-ms for their session/load). Run
// with -benchtime=Nx, N ≥ 2.
//
//	go test ./internal/harness -run '^$' -bench Start -benchtime 5x
func BenchmarkStart(b *testing.B) {
	for _, c := range []struct {
		name string
		spec func(testing.TB, *fakemodel.Server) harness.Spec
	}{{"claude-code", harnesstest.Claude}, {"codex", harnesstest.Codex}, {"gemini", harnesstest.Gemini}} {
		b.Run(c.name, func(b *testing.B) {
			fake := fakemodel.New()
			defer fake.Close()
			spec := c.spec(b, fake)
			ws, home := b.TempDir(), b.TempDir()
			ctx := context.Background()
			var id string
			var cold, warm, open, load time.Duration
			var rss float64
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				p, err := harness.Start(ctx, harness.Options{Spec: spec, Workspace: ws, Home: home})
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if i == 0 {
					cold = t1.Sub(t0)
				} else {
					warm += t1.Sub(t0)
				}
				if id == "" || !p.CanLoad() {
					if id, err = p.NewSession(ctx); err != nil {
						b.Fatal(err)
					}
					open += time.Since(t1)
					// A harness keeps a session once it has had a prompt.
					fake.Push(fakemodel.Reply{Text: []string{"hi"}})
					if _, err := p.Prompt(ctx, "hi"); err != nil {
						b.Fatal(err)
					}
				} else {
					if err := p.LoadSession(ctx, id); err != nil {
						b.Logf("session/load: %v", err)
						id = ""
					}
					load += time.Since(t1)
				}
				if i == 0 {
					rss = harnesstest.RSS(harnesstest.Procs(func(h string) bool { return h == home }))
				}
				p.Close()
			}
			n := float64(b.N)
			b.ReportMetric(float64(cold.Milliseconds()), "cold-init-ms")
			b.ReportMetric(float64(open.Milliseconds()), "first-new-ms")
			if b.N > 1 {
				b.ReportMetric(float64(warm.Milliseconds())/(n-1), "warm-init-ms")
				b.ReportMetric(float64(load.Milliseconds())/(n-1), "load-ms")
			}
			b.ReportMetric(rss, "rss-MB")
		})
	}
}

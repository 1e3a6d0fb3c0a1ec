package evals_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/evals"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/pgtest"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/postgres"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// drivers are the stores that run durable jobs.
var drivers = []string{"sqlite", "postgres"}

// openStore opens a fresh store of a driver, closed when the test ends.
func openStore(t testing.TB, driver string) store.Store {
	t.Helper()
	var st store.Store
	var err error
	switch driver {
	case "sqlite":
		st, err = sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "agent.db"))
	case "postgres":
		st, err = postgres.Open(context.Background(), pgtest.Schema(t))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// evalBed is a host with its evals: the host's methods, and the evals'
// under the names the host had for them.
type evalBed struct {
	*host.Host
	evals *evals.Service
}

// newEvalBed makes a host of set and registers its evals, without
// starting it.
func newEvalBed(set *tool.Set, opts *host.Options) (*evalBed, error) {
	h, err := host.New(set, opts)
	if err != nil {
		return nil, err
	}
	ev, err := evals.New(h, nil)
	if err != nil {
		h.Close()
		return nil, err
	}
	return &evalBed{Host: h, evals: ev}, nil
}

func (b *evalBed) RunEval(ctx context.Context, req api.EvalRunRequest, principal string) (api.EvalBatch, error) {
	return b.evals.Run(ctx, req, principal)
}

func (b *evalBed) GetEval(ctx context.Context, id string) (api.EvalBatch, error) {
	return b.evals.Get(ctx, id)
}

func (b *evalBed) ListEvals(ctx context.Context, p store.Page) ([]api.EvalBatch, string, error) {
	return b.evals.List(ctx, p)
}

// startHost starts a host of set on st, with its evals, whose model is
// the Anthropic API at modelURL (a fake); it is closed when the test
// ends. The state root defaults to a temporary directory, LeaseTTL to a
// second.
func startHost(t testing.TB, st store.Store, set *tool.Set, modelURL string, opts host.Options) *evalBed {
	t.Helper()
	p, err := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: modelURL, MaxTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	if opts.StateRoot == "" {
		opts.StateRoot = t.TempDir()
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = time.Second
	}
	opts.Store, opts.Model = st, p
	b, err := newEvalBed(set, &opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func kinds(evs []api.Event) string {
	var k []string
	for _, e := range evs {
		k = append(k, string(e.Kind))
	}
	return strings.Join(k, " ")
}

func find(evs []api.Event, kind api.Kind) []api.Event {
	var out []api.Event
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

package host_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// modelHost builds a host of set on SQLite in a temporary state directory,
// its model a fake provider answering script; opts' other fields apply.
// Both are closed when the test ends.
func modelHost(t *testing.T, set *tool.Set, opts host.Options, script ...fakemodel.Reply) (*host.Host, *fakemodel.Server) {
	t.Helper()
	state := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(state, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	fake := fakemodel.New(script...)
	t.Cleanup(fake.Close)
	p, err := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: fake.AnthropicURL(), MaxTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	opts.StateRoot, opts.Store, opts.Model = state, st, p
	h, err := host.New(set, &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(); st.Close() })
	return h, fake
}

package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/client"
	"github.com/agentsdk/agentsdk/evals"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

const (
	testSlug  = "agent"
	testToken = "client-test-token"
)

// startHost is the one place that builds the host under test: a real host
// with a SQLite store in state and a model provider pointed at fake,
// behind the real HTTP API on an httptest server. Gated direct calls
// answer 202 at once. stop shuts it all down.
func startHost(state string, fake *fakemodel.Server, tools ...*tool.Tool) (srv *httptest.Server, stop func(), err error) {
	ctx := context.Background()
	set, err := tool.NewSet(tools...)
	if err != nil {
		return nil, nil, err
	}
	st, err := sqlite.Open(ctx, filepath.Join(state, "agent.db"))
	if err != nil {
		return nil, nil, err
	}
	p, err := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: fake.AnthropicURL(), MaxTokens: 10})
	if err != nil {
		return nil, nil, err
	}
	h, err := host.New(set, &host.Options{StateRoot: state, Store: st, Model: p})
	if err != nil {
		return nil, nil, err
	}
	ev, err := evals.New(h, nil)
	if err != nil {
		return nil, nil, err
	}
	if err := h.Start(ctx); err != nil {
		return nil, nil, err
	}
	handler, err := serve.New(h, &serve.Options{Slug: testSlug, Token: testToken, ApprovalWait: -1, Evals: ev})
	if err != nil {
		return nil, nil, err
	}
	srv = httptest.NewServer(handler)
	return srv, func() { handler.Shutdown(); srv.Close(); h.Close(); st.Close() }, nil
}

// The tools of the host under test.
type (
	greetInput struct {
		Name string `json:"name"`
	}
	promoteInput struct {
		Service     string `json:"service"`
		Environment string `json:"environment"`
	}
	keepInput struct {
		Name string `json:"name"`
		Text string `json:"text"`
	}
)

func testTools() []*tool.Tool {
	greet, err1 := tool.New("greet", tool.Config{Description: "Greet someone."}, func(ctx context.Context, call *tool.Call, in greetInput) (any, error) {
		return "Hello, " + in.Name + "!", nil
	})
	fail, err2 := tool.New("fail", tool.Config{Description: "Always fails."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
		return nil, errors.New("the PR does not exist")
	})
	promote, err3 := tool.New("promote", tool.Config{
		Description:   "Promote a build.",
		NeedsApproval: tool.When(func(in promoteInput) bool { return in.Environment == "production" }),
	}, func(ctx context.Context, call *tool.Call, in promoteInput) (any, error) {
		return map[string]string{"promoted": in.Service, "to": in.Environment}, nil
	})
	keep, err4 := tool.New("keep", tool.Config{Description: "Keep text as an artifact of the session."}, func(ctx context.Context, call *tool.Call, in keepInput) (any, error) {
		info, err := call.Artifacts.Put(ctx, in.Name, strings.NewReader(in.Text), &tool.FilePutOptions{ContentType: "text/html"})
		return info.Name, err
	})
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		panic(err)
	}
	return []*tool.Tool{greet, fail, promote, keep}
}

// testBundle is what a test of the client works with.
type testBundle struct {
	client *client.Client
	server *httptest.Server
	fake   *fakemodel.Server
	url    string // http://127.0.0.1:port/<slug>
}

// setup starts a host whose model answers with script, and a client of it.
func setup(t *testing.T, script ...fakemodel.Reply) *testBundle {
	t.Helper()
	fake := fakemodel.New(script...)
	t.Cleanup(fake.Close)
	srv, stop, err := startHost(t.TempDir(), fake, testTools()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	url := srv.URL + "/" + testSlug
	c, err := client.New(url, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &testBundle{client: c, server: srv, fake: fake, url: url}
}

// exampleHost starts a host for the examples, or exits.
func exampleHost(script ...fakemodel.Reply) (url string, stop func()) {
	fake := fakemodel.New(script...)
	state, err := os.MkdirTemp("", "client-example")
	if err == nil {
		var srv *httptest.Server
		var stopHost func()
		if srv, stopHost, err = startHost(state, fake, testTools()...); err == nil {
			return srv.URL + "/" + testSlug, func() { stopHost(); fake.Close(); os.RemoveAll(state) }
		}
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
	return "", nil
}

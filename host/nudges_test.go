package host_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-github/v88/github"
	"github.com/slack-go/slack"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/platform"
	"github.com/agentsdk/agentsdk/store/memory"
	"github.com/agentsdk/agentsdk/tool"
)

// fakePostMessage is Slack's chat.postMessage, counting the posts.
func fakePostMessage(t *testing.T, posts *atomic.Int32, fail *atomic.Bool) *slack.Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/chat.postMessage" || fail.Load() {
			w.Write([]byte(`{"ok":false,"error":"channel_not_found"}`))
			return
		}
		posts.Add(1)
		w.Write([]byte(`{"ok":true,"channel":"C1","ts":"1700000000.000100"}`))
	}))
	t.Cleanup(srv.Close)
	return slack.New("xoxb-test", slack.OptionAPIURL(srv.URL+"/"))
}

// TestSlackNudges: hosts on one database asking with one key at once post
// once; after a failed post the key is free again.
func TestSlackNudges(t *testing.T) {
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			var posts atomic.Int32
			var fail atomic.Bool
			client := fakePostMessage(t, &posts, &fail)
			var hosts []*host.Host
			for _, st := range openStores(t, driver, 2) {
				h, _ := timerHost(t, st, emptySet(t), host.Options{Slack: client})
				hosts = append(hosts, h)
			}
			ask := func(h *host.Host, key string) (bool, error) {
				// The handle's services are a tool's call.Host.
				return h.Handle().Host.SlackNudges.Ask(context.Background(), key, "U1", "Did the deploy work?", time.Minute)
			}
			var wg sync.WaitGroup
			var postedN atomic.Int32
			for i := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					posted, err := ask(hosts[i%2], "deploy-42")
					if err != nil {
						t.Error(err)
					}
					if posted {
						postedN.Add(1)
					}
				}()
			}
			wg.Wait()
			if posts.Load() != 1 || postedN.Load() != 1 {
				t.Fatalf("%d posts, %d answered posted; want 1 and 1", posts.Load(), postedN.Load())
			}
			fail.Store(true)
			if posted, err := ask(hosts[0], "other"); posted || err == nil {
				t.Fatalf("a failed post: %v %v", posted, err)
			}
			fail.Store(false)
			if posted, err := ask(hosts[1], "other"); !posted || err != nil {
				t.Fatalf("after a failed post, the key stayed claimed: %v %v", posted, err)
			}
		})
	}
}

// TestPlatformClients: the clients given as host.Options.Slack and GitHub
// are the ones a tool reaches with platform.Slack and platform.GitHub;
// without them, those refuse with tool.ErrNotConfigured.
func TestPlatformClients(t *testing.T) {
	t.Parallel()
	sc := slack.New("xoxb-test")
	gc, err := github.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(emptySet(t), &host.Options{StateRoot: t.TempDir(), Store: memory.New(), Slack: sc, GitHub: gc})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if s := h.Handle().Host; platform.Slack(s) != sc || platform.GitHub(s) != gc {
		t.Errorf("platform.Slack, platform.GitHub = %p, %p; want the clients given, %p, %p", platform.Slack(s), platform.GitHub(s), sc, gc)
	}

	bare, err := host.New(emptySet(t), &host.Options{StateRoot: t.TempDir(), Store: memory.New()})
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	if _, _, err := platform.GitHub(bare.Handle().Host).PullRequests.Get(context.Background(), "acme", "shop", 1); !errors.Is(err, tool.ErrNotConfigured) {
		t.Errorf("GitHub without a client: %v", err)
	}
}

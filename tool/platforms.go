package tool

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/google/go-github/v88/github"
	"github.com/slack-go/slack"
)

// SlackNudges asks people questions in Slack at most once per key within a
// window, across every host and restart (call.Host.SlackNudges): the key is
// claimed durably before the message is posted.
type SlackNudges interface {
	// Ask posts text to a channel or a user (as a direct message) unless a
	// question with this key was asked within window, by any host. posted
	// says whether this call posted it; false with a nil error means it was
	// asked already. A failed post frees the key.
	Ask(ctx context.Context, key, channelOrUser, text string, window time.Duration) (posted bool, err error)
}

var (
	errSlackNotConfigured  = fmt.Errorf("slack: %w: add slack: to agent/agent.yaml and set the bot token's environment variable (SLACK_BOT_TOKEN by default); see README, Slack", ErrNotConfigured)
	errGitHubNotConfigured = fmt.Errorf("github: %w: add github: to agent/agent.yaml with a token (tokenEnv, GITHUB_TOKEN by default) or a GitHub App (app: {id, installationId, privateKeyEnv}); see README, GitHub", ErrNotConfigured)
)

// refuse is an http.RoundTripper that answers every request with err: the
// transport of an unconfigured platform client, so that each call says how
// to configure it instead of reaching the platform.
type refuse struct{ err error }

func (r refuse) RoundTrip(*http.Request) (*http.Response, error) { return nil, r.err }

// unconfiguredSlack is call.Host.Slack when agent.yaml has no slack:.
var unconfiguredSlack = slack.New("", slack.OptionHTTPClient(&http.Client{Transport: refuse{errSlackNotConfigured}}))

// unconfiguredGitHub is call.Host.GitHub when agent.yaml has no github:.
var unconfiguredGitHub = func() *github.Client {
	c, err := github.NewClient(github.WithTransport(refuse{errGitHubNotConfigured}))
	if err != nil {
		panic(err) // no option that can fail
	}
	return c
}()

type unconfiguredNudges struct{}

func (unconfiguredNudges) Ask(context.Context, string, string, string, time.Duration) (bool, error) {
	return false, errSlackNotConfigured
}

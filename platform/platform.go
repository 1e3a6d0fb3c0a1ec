// Package platform gives tools the host's clients of third-party platforms,
// typed: [Slack] (slack-go) and [GitHub] (go-github). Package tool holds
// them untyped in [tool.Services.Platforms], so that tool — and with it
// the protocol (api), the typed client and the CLI — links no platform's
// SDK; a tool that uses one imports this package:
//
//	pr, _, err := platform.GitHub(call.Host).PullRequests.Get(ctx, owner, repo, number)
//
// The accessors never return nil: for a platform agent.yaml does not
// configure they return a real client whose every call fails, without
// reaching the network, with an error wrapping [tool.ErrNotConfigured]
// that says how to configure it.
package platform

import (
	"fmt"
	"net/http"

	"github.com/google/go-github/v88/github"
	"github.com/slack-go/slack"

	"github.com/agentsdk/agentsdk/tool"
)

// Slack returns the host's Slack client, with the bot token of agent.yaml's
// slack: (s.Platforms[tool.PlatformSlack]). Without slack:, every call of
// the client it returns fails saying how to configure Slack.
func Slack(s tool.Services) *slack.Client {
	switch c := s.Platforms[tool.PlatformSlack].(type) {
	case nil:
	case *slack.Client:
		if c != nil {
			return c
		}
	default:
		return refusingSlack(wrongType(tool.PlatformSlack, "*slack.Client", c))
	}
	return unconfiguredSlack
}

// GitHub returns the host's GitHub client, with a token or as a GitHub App
// installation per agent.yaml's github: (s.Platforms[tool.PlatformGitHub]).
// Without github:, every call of the client it returns fails saying how to
// configure GitHub.
func GitHub(s tool.Services) *github.Client {
	switch c := s.Platforms[tool.PlatformGitHub].(type) {
	case nil:
	case *github.Client:
		if c != nil {
			return c
		}
	default:
		return refusingGitHub(wrongType(tool.PlatformGitHub, "*github.Client", c))
	}
	return unconfiguredGitHub
}

var (
	errSlackNotConfigured  = fmt.Errorf("slack: %w: add slack: to agent/agent.yaml and set the bot token's environment variable (SLACK_BOT_TOKEN by default); see README, Slack", tool.ErrNotConfigured)
	errGitHubNotConfigured = fmt.Errorf("github: %w: add github: to agent/agent.yaml with a token (tokenEnv, GITHUB_TOKEN by default) or a GitHub App (app: {id, installationId, privateKeyEnv}); see README, GitHub", tool.ErrNotConfigured)

	// unconfiguredSlack is Slack's client when agent.yaml has no slack:.
	unconfiguredSlack = refusingSlack(errSlackNotConfigured)
	// unconfiguredGitHub is GitHub's client when agent.yaml has no github:.
	unconfiguredGitHub = refusingGitHub(errGitHubNotConfigured)
)

// wrongType is the error of a platform's key holding something other than
// its client: a mistake of whoever built the services, not of agent.yaml.
func wrongType(key, want string, got any) error {
	return fmt.Errorf("%s: %w: tool.Services.Platforms[%q] holds a %T, not a %s", key, tool.ErrNotConfigured, key, got, want)
}

// refuse is an http.RoundTripper that answers every request with err: the
// transport of an unconfigured platform client, so that each call says how
// to configure it instead of reaching the platform.
type refuse struct{ err error }

func (r refuse) RoundTrip(*http.Request) (*http.Response, error) { return nil, r.err }

func refusingSlack(err error) *slack.Client {
	return slack.New("", slack.OptionHTTPClient(&http.Client{Transport: refuse{err}}))
}

func refusingGitHub(err error) *github.Client {
	c, nerr := github.NewClient(github.WithTransport(refuse{err}))
	if nerr != nil {
		panic(nerr) // no option that can fail
	}
	return c
}

package tool

import (
	"context"
	"fmt"
	"time"
)

// Keys of [Services.Platforms]: the names of the platforms whose clients
// the host holds. Package platform reads them with typed accessors.
const (
	// PlatformSlack is the key of the host's *slack.Client (slack-go).
	PlatformSlack = "slack"
	// PlatformGitHub is the key of the host's *github.Client (go-github).
	PlatformGitHub = "github"
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

// errSlackNotConfigured is call.Host.SlackNudges's error when agent.yaml
// has no slack:; package platform's unconfigured Slack client says the
// same (a test there checks it).
var errSlackNotConfigured = fmt.Errorf("slack: %w: add slack: to agent/agent.yaml and set the bot token's environment variable (SLACK_BOT_TOKEN by default); see README, Slack", ErrNotConfigured)

type unconfiguredNudges struct{}

func (unconfiguredNudges) Ask(context.Context, string, string, string, time.Duration) (bool, error) {
	return false, errSlackNotConfigured
}

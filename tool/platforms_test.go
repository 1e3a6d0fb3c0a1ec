package tool

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// Unconfigured platform clients are real clients whose every call says how
// to configure them.
func TestUnconfiguredPlatforms(t *testing.T) {
	s := Services{}.withDefaults()
	_, _, err := s.Slack.PostMessageContext(context.Background(), "C1")
	if !errors.Is(err, ErrNotConfigured) || !strings.Contains(err.Error(), "SLACK_BOT_TOKEN") {
		t.Errorf("Slack: %v", err)
	}
	_, _, err = s.GitHub.PullRequests.Get(context.Background(), "acme", "shop", 1)
	if !errors.Is(err, ErrNotConfigured) || !strings.Contains(err.Error(), "github:") {
		t.Errorf("GitHub: %v", err)
	}
	if _, err := s.SlackNudges.Ask(context.Background(), "k", "U1", "hi", 0); !errors.Is(err, ErrNotConfigured) {
		t.Errorf("SlackNudges: %v", err)
	}
}

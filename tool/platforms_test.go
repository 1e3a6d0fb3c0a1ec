package tool

import (
	"context"
	"errors"
	"testing"
)

// Unconfigured Slack nudges say how to configure Slack; the platform
// clients are package platform's (see its tests).
func TestUnconfiguredNudges(t *testing.T) {
	s := Services{}.withDefaults()
	if _, err := s.SlackNudges.Ask(context.Background(), "k", "U1", "hi", 0); !errors.Is(err, ErrNotConfigured) {
		t.Errorf("SlackNudges: %v", err)
	}
}

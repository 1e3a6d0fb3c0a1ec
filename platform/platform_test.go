package platform_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v88/github"
	"github.com/slack-go/slack"

	"github.com/agentsdk/agentsdk/platform"
	"github.com/agentsdk/agentsdk/tool"
)

// A configured client is returned as it was given.
func TestConfigured(t *testing.T) {
	t.Parallel()
	sc := slack.New("xoxb-test")
	gc, err := github.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	s := tool.Services{Platforms: map[string]any{tool.PlatformSlack: sc, tool.PlatformGitHub: gc}}
	if got := platform.Slack(s); got != sc {
		t.Errorf("Slack = %p, want %p", got, sc)
	}
	if got := platform.GitHub(s); got != gc {
		t.Errorf("GitHub = %p, want %p", got, gc)
	}
}

// Unconfigured (no map, no key, a nil client of the right type) or
// misconfigured (a value of another type), every call fails with an error
// wrapping tool.ErrNotConfigured that says what to do. Only the refusing
// transport makes such an error: no request left the process.
func TestUnconfigured(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		platforms  map[string]any
		slack, git string // what each error must say
	}{
		{"no map", nil, "SLACK_BOT_TOKEN", "add github: to agent/agent.yaml"},
		{"no key", map[string]any{"other": 1}, "SLACK_BOT_TOKEN", "add github: to agent/agent.yaml"},
		{"typed nil", map[string]any{tool.PlatformSlack: (*slack.Client)(nil), tool.PlatformGitHub: (*github.Client)(nil)},
			"SLACK_BOT_TOKEN", "add github: to agent/agent.yaml"},
		{"wrong type", map[string]any{tool.PlatformSlack: "xoxb-token", tool.PlatformGitHub: http.DefaultClient},
			`Platforms["slack"] holds a string, not a *slack.Client`, `Platforms["github"] holds a *http.Client, not a *github.Client`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tool.Services{Platforms: tc.platforms}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, _, err := platform.Slack(s).PostMessageContext(ctx, "C1", slack.MsgOptionText("hi", false))
			if !errors.Is(err, tool.ErrNotConfigured) || !strings.Contains(err.Error(), tc.slack) {
				t.Errorf("Slack: %v; want tool.ErrNotConfigured saying %q", err, tc.slack)
			}
			_, _, err = platform.GitHub(s).PullRequests.Get(ctx, "acme", "shop", 1)
			if !errors.Is(err, tool.ErrNotConfigured) || !strings.Contains(err.Error(), tc.git) {
				t.Errorf("GitHub: %v; want tool.ErrNotConfigured saying %q", err, tc.git)
			}
		})
	}
}

// The unconfigured Slack client says what call.Host.SlackNudges says.
func TestSlackTextAgreesWithNudges(t *testing.T) {
	t.Parallel()
	h := tool.NewHandle(tool.Services{}, nil)
	_, nudgeErr := h.Host.SlackNudges.Ask(context.Background(), "k", "U1", "hi", time.Hour)
	_, _, clientErr := platform.Slack(h.Host).PostMessageContext(context.Background(), "C1")
	if nudgeErr == nil || clientErr == nil || !strings.HasSuffix(clientErr.Error(), nudgeErr.Error()) {
		t.Errorf("the Slack client says\n\t%v\nthe nudges say\n\t%v", clientErr, nudgeErr)
	}
}

// A tool reaches the host's GitHub client in one line. Here the agent has
// no github:, so the call says how to configure it.
func ExampleGitHub() {
	handler := func(ctx context.Context, call *tool.Call) error {
		_, _, err := platform.GitHub(call.Host).PullRequests.Get(ctx, "acme", "shop", 42)
		return err
	}
	call := tool.NewCall(tool.CallInfo{ID: "tool_pr_x", Tool: "pr"})
	err := handler(context.Background(), call)
	fmt.Println(errors.Is(err, tool.ErrNotConfigured))
	fmt.Println(err)
	// Output:
	// true
	// Get "https://api.github.com/repos/acme/shop/pulls/42": github: service not configured: add github: to agent/agent.yaml with a token (tokenEnv, GITHUB_TOKEN by default) or a GitHub App (app: {id, installationId, privateKeyEnv}); see README, GitHub
}

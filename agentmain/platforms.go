package agentmain

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/agentsdk/agentsdk/agentconfig"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/platformconf"
	"github.com/agentsdk/agentsdk/slackbot"
)

// platformsFor sets the GitHub and Slack clients (host.Options.GitHub and
// Slack, which tools reach through package platform) from agent.yaml's
// github: and slack:, and returns the built-in slack channel's bot (nil
// without slack:), whose channel is added to opts. Its secrets come from
// the environment variables agent.yaml names. A host that serves no
// channel (a direct call, serving false) makes do without the Slack
// settings it lacks: platform.Slack(call.Host) then says it is not
// configured, rather than every call being refused.
func platformsFor(cfg agentconfig.Config, configPath string, opts *host.Options, logger *slog.Logger, serving bool) (*slackbot.Bot, error) {
	gh, err := platformconf.GitHub(cfg.GitHub, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", configPath, err)
	}
	opts.GitHub = gh
	if cfg.Slack == nil {
		return nil, nil
	}
	token, secret, apiURL, err := platformconf.Slack(cfg.Slack, os.Getenv)
	if err != nil && !serving {
		logger.Warn("Slack is not configured", "err", err)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", configPath, err)
	}
	if !strings.HasPrefix(token, "xoxb-") {
		logger.Warn("the Slack token is not a bot token (xoxb-…): the slack channel posts as whoever it belongs to")
	}
	bot, err := slackbot.New(slackbot.Config{BotToken: token, SigningSecret: secret, APIURL: apiURL,
		ApprovalsChannel: cfg.Slack.Approvals.Channel, Allow: cfg.Slack.Approvals.Allow, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("reading %s: slack: %w", configPath, err)
	}
	opts.Slack = bot.Client()
	opts.Channels = append(opts.Channels, bot.Channel())
	return bot, nil
}

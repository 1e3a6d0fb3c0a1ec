package platformconf

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"

	"github.com/slack-go/slack"

	"github.com/agentsdk/agentsdk/agentconfig"
)

// Default environment variables of slack:.
const (
	// DefaultSlackBotTokenEnv holds the bot token when slack: names no
	// botTokenEnv.
	DefaultSlackBotTokenEnv = "SLACK_BOT_TOKEN"
	// DefaultSlackSigningSecretEnv holds the signing secret when slack:
	// names no signingSecretEnv.
	DefaultSlackSigningSecretEnv = "SLACK_SIGNING_SECRET"
)

// Slack reads the Slack app's credentials that agent.yaml's slack: names
// and returns them with the Web API's URL; all "" (and no error) when cfg
// is nil: Slack is not configured.
//
// token is the bot token, from botTokenEnv (SLACK_BOT_TOKEN by default:
// "Bot User OAuth Token" on the app's OAuth & Permissions page);
// signingSecret verifies the requests Slack sends to the channel's events
// and interactivity URLs, from signingSecretEnv (SLACK_SIGNING_SECRET by
// default: "Signing Secret" on the app's Basic Information page). Either
// unset or empty, holding spaces inside, or both keys naming the same
// variable, is an error naming the agent.yaml key and the variable; no
// error repeats a value.
//
// A bot token begins with "xoxb-". Another token (a user token, xoxp-, or
// a test server's) is accepted, since it works with the Web API, but the
// bot's identity then is not the bot user's: a caller may want to log a
// warning when strings.HasPrefix(token, "xoxb-") is false.
//
// apiURL is apiURL from agent.yaml (a proxy, or a test server) or
// https://slack.com/api/ (slack.APIURL); it must be an http or https URL
// with a host, and is returned ending with "/", as slack.OptionAPIURL
// wants (slack-go appends the method name: apiURL+"chat.postMessage").
func Slack(cfg *agentconfig.Slack, getenv func(string) string) (token, signingSecret, apiURL string, err error) {
	if cfg == nil {
		return "", "", "", nil
	}
	tokenEnv, secretEnv := cfg.BotTokenEnv, cfg.SigningSecretEnv
	if tokenEnv == "" {
		tokenEnv = DefaultSlackBotTokenEnv
	}
	if secretEnv == "" {
		secretEnv = DefaultSlackSigningSecretEnv
	}
	if tokenEnv == secretEnv {
		return "", "", "", fmt.Errorf("agent.yaml: slack.botTokenEnv and slack.signingSecretEnv both name %s; the bot token and the signing secret are two values in two variables", tokenEnv)
	}
	if token, err = slackSecret("botTokenEnv", tokenEnv, getenv(tokenEnv),
		`the Slack app's "Bot User OAuth Token" (xoxb-…, on its OAuth & Permissions page after installing it to the workspace)`); err != nil {
		return "", "", "", err
	}
	if signingSecret, err = slackSecret("signingSecretEnv", secretEnv, getenv(secretEnv),
		`the Slack app's "Signing Secret" (on its Basic Information page)`); err != nil {
		return "", "", "", err
	}
	apiURL = slack.APIURL
	if cfg.APIURL != "" {
		u, perr := url.Parse(cfg.APIURL)
		switch {
		case perr != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
			return "", "", "", fmt.Errorf("agent.yaml: slack.apiURL: %q is not an http or https URL with a host: want e.g. https://slack.com/api/ (the default)", cfg.APIURL)
		case u.User != nil:
			return "", "", "", errors.New("agent.yaml: slack.apiURL: holds credentials; give the bot token in the environment variable named by botTokenEnv instead")
		case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
			return "", "", "", fmt.Errorf("agent.yaml: slack.apiURL: %q has a query or fragment; want e.g. https://slack.com/api/", cfg.APIURL)
		}
		apiURL = u.String()
		if !strings.HasSuffix(apiURL, "/") {
			apiURL += "/"
		}
	}
	return token, signingSecret, apiURL, nil
}

// slackSecret checks a secret read from the variable name (agent.yaml's
// slack.<key>), described by what.
func slackSecret(key, name, value, what string) (string, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return "", fmt.Errorf("agent.yaml: slack.%s: environment variable %s is empty or not set: set it to %s", key, name, what)
	}
	if strings.IndexFunc(v, unicode.IsSpace) >= 0 || strings.IndexFunc(v, unicode.IsControl) >= 0 {
		return "", fmt.Errorf("agent.yaml: slack.%s: environment variable %s has spaces or control characters inside; it should hold only %s", key, name, what)
	}
	return v, nil
}

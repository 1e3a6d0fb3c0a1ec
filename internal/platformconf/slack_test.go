package platformconf

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/agentsdk/agentsdk/agentconfig"
)

const (
	testBotToken = "xoxb-2712345678901-4812345678901-Zk3cN1qLw8ReTtYbUuVvWwXx"
	testSecret   = "8f742231b10e8888abcd99yyyzzz85a5"
)

func TestSlackNotConfigured(t *testing.T) {
	tok, sec, api, err := Slack(nil, env(map[string]string{"SLACK_BOT_TOKEN": testBotToken, "SLACK_SIGNING_SECRET": testSecret}))
	if tok != "" || sec != "" || api != "" || err != nil {
		t.Fatalf("Slack(nil) = %q, %q, %q, %v; want all empty", tok, sec, api, err)
	}
}

func TestSlack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     agentconfig.Slack
		env     map[string]string
		tok     string
		wantAPI string
	}{
		{"defaults", agentconfig.Slack{}, map[string]string{"SLACK_BOT_TOKEN": testBotToken + "\n", "SLACK_SIGNING_SECRET": " " + testSecret},
			testBotToken, "https://slack.com/api/"},
		{"named variables", agentconfig.Slack{BotTokenEnv: "ACME_SLACK_TOKEN", SigningSecretEnv: "ACME_SLACK_SECRET"},
			map[string]string{"ACME_SLACK_TOKEN": testBotToken, "ACME_SLACK_SECRET": testSecret, "SLACK_BOT_TOKEN": "xoxb-other"},
			testBotToken, "https://slack.com/api/"},
		{"apiURL without slash", agentconfig.Slack{APIURL: "http://127.0.0.1:8089/api"},
			map[string]string{"SLACK_BOT_TOKEN": testBotToken, "SLACK_SIGNING_SECRET": testSecret}, testBotToken, "http://127.0.0.1:8089/api/"},
		{"apiURL with slash", agentconfig.Slack{APIURL: "https://slack-proxy.example.com/api/"},
			map[string]string{"SLACK_BOT_TOKEN": testBotToken, "SLACK_SIGNING_SECRET": testSecret}, testBotToken, "https://slack-proxy.example.com/api/"},
		{"a user token is accepted", agentconfig.Slack{},
			map[string]string{"SLACK_BOT_TOKEN": "xoxp-1234-5678-abcdef", "SLACK_SIGNING_SECRET": testSecret}, "xoxp-1234-5678-abcdef", "https://slack.com/api/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			tok, sec, api, err := Slack(&cfg, env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if tok != tc.tok || sec != testSecret || api != tc.wantAPI {
				t.Errorf("got %q, %q, %q; want %q, %q, %q", tok, sec, api, tc.tok, testSecret, tc.wantAPI)
			}
		})
	}
}

func TestSlackErrors(t *testing.T) {
	both := map[string]string{"SLACK_BOT_TOKEN": testBotToken, "SLACK_SIGNING_SECRET": testSecret}
	for _, tc := range []struct {
		name string
		cfg  agentconfig.Slack
		env  map[string]string
		want []string
	}{
		{"no token", agentconfig.Slack{}, map[string]string{"SLACK_SIGNING_SECRET": testSecret}, []string{"slack.botTokenEnv", "SLACK_BOT_TOKEN", "not set"}},
		{"blank token", agentconfig.Slack{}, map[string]string{"SLACK_BOT_TOKEN": " ", "SLACK_SIGNING_SECRET": testSecret}, []string{"slack.botTokenEnv", "SLACK_BOT_TOKEN"}},
		{"no secret", agentconfig.Slack{}, map[string]string{"SLACK_BOT_TOKEN": testBotToken}, []string{"slack.signingSecretEnv", "SLACK_SIGNING_SECRET", "not set"}},
		{"named token unset", agentconfig.Slack{BotTokenEnv: "ACME_SLACK_TOKEN"}, both, []string{"slack.botTokenEnv", "ACME_SLACK_TOKEN"}},
		{"named secret unset", agentconfig.Slack{SigningSecretEnv: "ACME_SLACK_SECRET"}, both, []string{"slack.signingSecretEnv", "ACME_SLACK_SECRET"}},
		{"one variable for both", agentconfig.Slack{BotTokenEnv: "SLACK", SigningSecretEnv: "SLACK"}, map[string]string{"SLACK": testBotToken},
			[]string{"slack.botTokenEnv", "slack.signingSecretEnv", "SLACK"}},
		{"token with a space", agentconfig.Slack{}, map[string]string{"SLACK_BOT_TOKEN": "xoxb-12 34", "SLACK_SIGNING_SECRET": testSecret}, []string{"SLACK_BOT_TOKEN", "spaces"}},
		{"apiURL ftp", agentconfig.Slack{APIURL: "ftp://slack.com/api/"}, both, []string{"slack.apiURL", "ftp://slack.com/api/"}},
		{"apiURL without scheme", agentconfig.Slack{APIURL: "slack.com/api"}, both, []string{"slack.apiURL"}},
		{"apiURL with credentials", agentconfig.Slack{APIURL: "https://u:p4ss@slack.example.com/api/"}, both, []string{"slack.apiURL", "credentials"}},
		{"apiURL with a query", agentconfig.Slack{APIURL: "https://slack.com/api/?a=b"}, both, []string{"slack.apiURL", "query"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			tok, sec, api, err := Slack(&cfg, env(tc.env))
			if err == nil {
				t.Fatalf("no error (%q, %q, %q)", tok, sec, api)
			}
			if tok != "" || sec != "" || api != "" {
				t.Errorf("values with the error: %q, %q, %q", tok, sec, api)
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			for _, secret := range []string{testBotToken, testSecret, "xoxb-12", "p4ss"} {
				if strings.Contains(msg, secret) {
					t.Errorf("error %q repeats a secret", msg)
				}
			}
		})
	}
}

// The values work as slack-go takes them: the token reaches the Web API,
// at apiURL+method (hence the trailing slash).
func TestSlackClient(t *testing.T) {
	var auth, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// slack-go sends auth.test's token in the form; other methods in
		// the Authorization header.
		auth, path = r.Header.Get("Authorization"), r.URL.Path
		if tok := r.PostFormValue("token"); tok != "" {
			auth = "Bearer " + tok
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write([]byte(`{"ok":true,"url":"https://acme.slack.com/","team":"Acme","user":"reviewer","team_id":"T0123ABCD","user_id":"U0456EFGH","bot_id":"B0789IJKL","is_enterprise_install":false}`))
	}))
	defer srv.Close()
	tok, _, api, err := Slack(&agentconfig.Slack{APIURL: srv.URL + "/api"}, env(map[string]string{"SLACK_BOT_TOKEN": testBotToken, "SLACK_SIGNING_SECRET": testSecret}))
	if err != nil {
		t.Fatal(err)
	}
	c := slack.New(tok, slack.OptionAPIURL(api))
	res, err := c.AuthTestContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.BotID != "B0789IJKL" || path != "/api/auth.test" || auth != "Bearer "+testBotToken {
		t.Fatalf("auth.test: %+v at %s with %q", res, path, auth)
	}
}

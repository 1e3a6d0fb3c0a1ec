// Package platformconf builds the host's platform clients from agent.yaml's
// github: and slack: sections and the environment variables they name:
// the GitHub client tools reach with platform.GitHub(call.Host) (go-github,
// with a token or as a GitHub App installation) and the Slack bot's
// credentials. Secrets are read from the
// environment, never from the file, and never appear in an error. Every
// mistake is an error naming the agent.yaml key or the variable, so that
// the host refuses to start rather than fail on a tool's first call.
package platformconf

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"
	"unicode"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v88/github"

	"github.com/agentsdk/agentsdk/agentconfig"
)

// Default environment variables of github:.
const (
	// DefaultGitHubTokenEnv holds the token when github: names no
	// tokenEnv and no app.
	DefaultGitHubTokenEnv = "GITHUB_TOKEN"
	// DefaultGitHubAppPrivateKeyEnv holds the App's private key when
	// github.app names no privateKeyEnv.
	DefaultGitHubAppPrivateKeyEnv = "GITHUB_APP_PRIVATE_KEY"
)

// GitHub returns the GitHub client agent.yaml's github: describes, or nil
// (and no error) when cfg is nil: GitHub is not configured and the host
// keeps its refusing client.
//
// With app:, the client authenticates as a GitHub App installation
// (ghinstallation): each request carries an installation token, made by
// POST /app/installations/{installationId}/access_tokens with a JWT
// signed by the App's private key, kept and made again a minute before it
// expires (an hour after it was made). The private key's variable
// (privateKeyEnv, GITHUB_APP_PRIVATE_KEY by default) holds the key itself
// — the PEM text GitHub downloads when a key is generated, with real
// newlines or with "\n" escapes as some secret stores write it — or,
// when its value does not begin with "-----BEGIN", the path of that .pem
// file (a mounted secret).
//
// Without app:, the client sends the token from tokenEnv (GITHUB_TOKEN by
// default) as "Authorization: Bearer <token>"; giving both tokenEnv and
// app is an error.
//
// baseURL points the client at GitHub Enterprise Server:
// https://github.example.com/ or https://github.example.com/api/v3/ both
// mean the REST API at /api/v3/ and uploads at /api/uploads/ (go-github's
// WithEnterpriseURLs); installation tokens are made there too. It must be
// an http or https URL with a host and no credentials, query or fragment.
// https://github.com and https://api.github.com mean github.com.
//
// A variable that is unset or empty, a token with spaces inside, a key
// that is not an RSA private key in PEM, an id that is not positive, or a
// bad baseURL is an error naming the agent.yaml key and the variable.
// The client has no timeout of its own: requests end with their context
// (a tool call's has the tool's timeout).
func GitHub(cfg *agentconfig.GitHub, getenv func(string) string) (*github.Client, error) {
	return newGitHub(cfg, getenv, http.DefaultTransport)
}

// newGitHub is GitHub over the transport tr (the tests' reaches a fake
// api.github.com).
func newGitHub(cfg *agentconfig.GitHub, getenv func(string) string, tr http.RoundTripper) (*github.Client, error) {
	if cfg == nil {
		return nil, nil
	}
	var opts []github.ClientOptionsFunc
	if cfg.BaseURL != "" {
		base, upload, err := enterpriseURLs(cfg.BaseURL)
		if err != nil {
			return nil, err
		}
		if base != "" {
			opts = append(opts, github.WithEnterpriseURLs(base, upload))
		}
	}

	if cfg.App == nil {
		name := cfg.TokenEnv
		if name == "" {
			name = DefaultGitHubTokenEnv
		}
		token := strings.TrimSpace(getenv(name))
		if token == "" {
			return nil, fmt.Errorf("agent.yaml: github.tokenEnv: environment variable %s is empty or not set: set it to a GitHub token (a fine-grained personal access token, or an installation token), or give github.app to act as a GitHub App", name)
		}
		if strings.IndexFunc(token, unicode.IsSpace) >= 0 || strings.IndexFunc(token, unicode.IsControl) >= 0 {
			return nil, fmt.Errorf("agent.yaml: github.tokenEnv: environment variable %s has spaces or control characters inside; a GitHub token has none", name)
		}
		opts = append(opts, github.WithTransport(tr), github.WithAuthToken(token))
		return github.NewClient(opts...)
	}

	app := cfg.App
	if cfg.TokenEnv != "" {
		return nil, errors.New("agent.yaml: github: give tokenEnv (a token) or app (a GitHub App installation), not both")
	}
	if app.ID <= 0 {
		return nil, fmt.Errorf("agent.yaml: github.app.id: %d is not a GitHub App id; give the App ID shown under About on the app's settings page (a positive number)", app.ID)
	}
	if app.InstallationID <= 0 {
		return nil, fmt.Errorf("agent.yaml: github.app.installationId: %d is not an installation id; give the number at the end of the installation's settings URL (…/settings/installations/<id>)", app.InstallationID)
	}
	name := app.PrivateKeyEnv
	if name == "" {
		name = DefaultGitHubAppPrivateKeyEnv
	}
	key, err := privateKey(name, getenv(name))
	if err != nil {
		return nil, err
	}
	itr, err := ghinstallation.New(tr, app.ID, app.InstallationID, key)
	if err != nil {
		// ghinstallation's error says why the key did not parse; it
		// holds none of the key.
		return nil, fmt.Errorf("agent.yaml: github.app.privateKeyEnv: environment variable %s does not hold a usable RSA private key in PEM (the .pem file GitHub gives when a private key is generated on the app's settings page): %v", name, err)
	}
	c, err := github.NewClient(append(opts, github.WithTransport(itr))...)
	if err != nil {
		return nil, err
	}
	// ghinstallation wants the API's root without the trailing slash:
	// https://api.github.com, or https://host/api/v3 on Enterprise Server.
	itr.BaseURL = strings.TrimSuffix(c.BaseURL(), "/")
	return c, nil
}

// privateKey reads an App's private key from the value of the variable
// name: the PEM text, or the path of a PEM file. The value is a secret: no
// error repeats it.
func privateKey(name, value string) ([]byte, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return nil, fmt.Errorf("agent.yaml: github.app.privateKeyEnv: environment variable %s is empty or not set: set it to the GitHub App's private key (the contents of the .pem file GitHub gives when a private key is generated), or to that file's path", name)
	}
	if strings.HasPrefix(v, "-----BEGIN") {
		if !strings.Contains(v, "\n") && strings.Contains(v, `\n`) {
			v = strings.ReplaceAll(v, `\n`, "\n") // escaped newlines, as some secret stores and .env files hold them
		}
		return []byte(v), nil
	}
	b, err := os.ReadFile(v)
	if err != nil {
		why := err
		var pe *fs.PathError
		if errors.As(err, &pe) {
			why = pe.Err // without the path: the value may be a mangled key
		}
		return nil, fmt.Errorf("agent.yaml: github.app.privateKeyEnv: environment variable %s holds neither a PEM private key (-----BEGIN RSA PRIVATE KEY-----…) nor the path of a readable key file (%v)", name, why)
	}
	return b, nil
}

// enterpriseURLs checks baseURL and returns the base and upload URLs to
// give go-github's WithEnterpriseURLs; "" when baseURL is github.com's.
func enterpriseURLs(baseURL string) (base, upload string, err error) {
	u, err := url.Parse(baseURL)
	switch {
	case err != nil:
		return "", "", fmt.Errorf("agent.yaml: github.baseURL: %q is not a URL: want http(s)://host/ (GitHub Enterprise Server): %v", baseURL, err)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return "", "", fmt.Errorf("agent.yaml: github.baseURL: %q is not an http or https URL with a host: want e.g. https://github.example.com/api/v3/ (GitHub Enterprise Server)", baseURL)
	case u.User != nil:
		return "", "", errors.New("agent.yaml: github.baseURL: holds credentials; give the token in the environment variable named by tokenEnv instead")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", "", fmt.Errorf("agent.yaml: github.baseURL: %q has a query or fragment; want e.g. https://github.example.com/api/v3/", baseURL)
	}
	if h := strings.ToLower(u.Hostname()); (h == "github.com" || h == "api.github.com") && strings.Trim(u.Path, "/") == "" {
		return "", "", nil // github.com: the default URLs
	}
	root := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v3") + "/"
	up := *u
	up.Path, up.RawPath = root+"api/uploads/", ""
	return u.String(), up.String(), nil
}

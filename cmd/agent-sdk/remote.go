package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/internal/command"
	"github.com/agentsdk/agentsdk/internal/token"
)

// remote talks to a running host's HTTP API, as `--url` asks.
type remote struct {
	base  string // http://host:port/<slug>/v1
	token string
}

// newRemote resolves a --url and the token: --token, $AGENT_SDK_TOKEN, or
// the one a host serving from the same state directory generated.
func newRemote(rawURL, explicitToken, stateDir string) (*remote, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, exitWith(command.ExitRefused, "--url must look like http://127.0.0.1:3000/<slug>, not %q", rawURL)
	}
	path := strings.TrimSuffix(u.Path, "/")
	path = strings.TrimSuffix(path, "/v1")
	if path == "" {
		return nil, exitWith(command.ExitRefused, "--url needs the agent's slug: http://%s/<slug>", u.Host)
	}
	tok, _, err := token.Find(explicitToken, stateDir)
	if err != nil {
		return nil, exitWith(command.ExitRefused, "%v", err)
	}
	u.Path = path + "/v1"
	u.RawQuery, u.Fragment = "", ""
	return &remote{base: u.String(), token: tok}, nil
}

// remote returns the client of the host at rawURL, finding the token as
// the host does, with the state directory of --state or --dir.
func (f *agentFlags) remote(rawURL, explicitToken string) (*remote, error) {
	state, err := f.stateDir()
	if err != nil {
		return nil, err
	}
	return newRemote(rawURL, explicitToken, state)
}

// do sends a request and returns the status and body.
func (r *remote) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, rd)
	if err != nil {
		return 0, nil, exitWith(command.ExitRefused, "%v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	client := &http.Client{Timeout: 10 * time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, exitWith(command.ExitFailure, "reaching the host: %v", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return 0, nil, exitWith(command.ExitFailure, "reading the host's answer: %v", err)
	}
	return resp.StatusCode, data, nil
}

// apiFailure turns an error response into an exit, with the API's message.
func apiFailure(status int, body []byte) error {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	if status == http.StatusUnauthorized {
		msg += " (pass --token, set $AGENT_SDK_TOKEN, or run from the agent's directory so its <state>/token is found)"
	}
	code := command.ExitRefused
	if status >= 500 {
		code = command.ExitFailure
	}
	return &exitError{code: code, msg: fmt.Sprintf("%s (HTTP %d)", msg, status)}
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/client"
	"github.com/agentsdk/agentsdk/internal/command"
	"github.com/agentsdk/agentsdk/internal/token"
)

// requestTimeout bounds each request to a running host but its event
// stream.
const requestTimeout = 10 * time.Minute

// newRemote returns the client of the host at a --url, with the token:
// --token, $AGENT_SDK_TOKEN, or the one a host serving from the same
// state directory generated. client.New checks the URL too; the CLI words
// its own errors, about the flag.
func newRemote(rawURL, explicitToken, stateDir string) (*client.Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, exitWith(command.ExitRefused, "--url must look like http://127.0.0.1:3000/<slug>, not %q", rawURL)
	}
	if strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1") == "" {
		return nil, exitWith(command.ExitRefused, "--url needs the agent's slug: http://%s/<slug>", u.Host)
	}
	tok, _, err := token.Find(explicitToken, stateDir)
	if err != nil {
		return nil, exitWith(command.ExitRefused, "%v", err)
	}
	u.RawQuery, u.Fragment = "", ""
	// Reconnects: -1: a followed stream ends when the host ends it (it shut
	// down), as it always has for the CLI; the Go client resumes instead.
	c, err := client.New(u.String(), tok, &client.Options{HTTPClient: &http.Client{Timeout: requestTimeout}, Reconnects: -1, UserAgent: api.CLIUserAgent})
	if err != nil {
		return nil, exitWith(command.ExitRefused, "%v", err)
	}
	return c, nil
}

// remote returns the client of the host at rawURL, finding the token as
// the host does, with the state directory of --state or --dir.
func (f *agentFlags) remote(rawURL, explicitToken string) (*client.Client, error) {
	state, err := f.stateDir()
	if err != nil {
		return nil, err
	}
	return newRemote(rawURL, explicitToken, state)
}

// remoteError turns an error of the client into an exit: an error answer
// with the API's message and status, the host out of reach, an answer
// that is not JSON, or whatever else went wrong.
func remoteError(err error) error {
	var (
		status *client.StatusError
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &status):
		return apiFailure(status)
	case errors.As(err, &syntax):
		return exitWith(command.ExitFailure, "the host's answer is not JSON: %v", syntax)
	case errors.As(err, &typ):
		return exitWith(command.ExitFailure, "the host's answer is not JSON: %v", typ)
	}
	if reach, ok := err.(*url.Error); ok {
		return exitWith(command.ExitFailure, "reaching the host: %v", reach)
	}
	return exitWith(command.ExitFailure, "%v", err)
}

// apiFailure turns an error answer into an exit, with the API's message.
func apiFailure(e *client.StatusError) error {
	msg := e.Err.Message
	if e.Status == http.StatusUnauthorized {
		msg += " (pass --token, set $AGENT_SDK_TOKEN, or run from the agent's directory so its <state>/token is found)"
	}
	code := command.ExitRefused
	if e.Status >= 500 {
		code = command.ExitFailure
	}
	return &exitError{code: code, msg: fmt.Sprintf("%s (HTTP %d)", msg, e.Status)}
}

// printAnswer prints a JSON answer as `call` always has: indented, with
// <, > and & as they are.
func printAnswer(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printBody prints an answer's body as it came: indented if it is JSON.
func printBody(w io.Writer, body []byte) {
	var pretty bytes.Buffer
	if json.Indent(&pretty, body, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(body)
	}
	w.Write(append(bytes.TrimSpace(pretty.Bytes()), '\n'))
}

// printListing prints a --json listing as the CLI always has: indented,
// each object's keys sorted and <, > and & escaped (the listings used to
// be decoded into maps). Keep it so: scripts read it.
func printListing(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var plain any
	if err := json.Unmarshal(b, &plain); err != nil {
		return err
	}
	return command.PrintJSON(w, plain)
}

// plainJSON returns a tool's JSON (an input, a result) for a line of
// text: compact, its objects' keys sorted.
func plainJSON(raw json.RawMessage) []byte {
	var v any
	json.Unmarshal(raw, &v)
	b, _ := json.Marshal(v)
	return b
}

package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// Defaults of [Options].
const (
	UserAgentDefault  = "agentsdk-client"
	ReconnectsDefault = 5
)

// maxAnswerBytes bounds a JSON answer; maxErrorBytes an error answer.
const (
	maxAnswerBytes = 256 << 20
	maxErrorBytes  = 1 << 20
)

// Options configure a [Client]. The zero value, or nil, means defaults.
type Options struct {
	// HTTPClient sends the requests; nil means a client of its own, with
	// no timeout. Its Timeout, if any, bounds each request but not the
	// stream of [Client.Events], which lasts until its context ends.
	HTTPClient *http.Client
	// UserAgent is sent with every request; "" means UserAgentDefault.
	UserAgent string
	// Reconnects is how many times in a row [Client.Events] reconnects a
	// stream that dropped before it gives up; zero means
	// ReconnectsDefault, negative never reconnects.
	Reconnects int
}

// Client calls the HTTP API of one agent's host. It is safe for
// concurrent use.
type Client struct {
	base       string // http://host:port/<slug>/v1
	token      string
	hc         *http.Client
	stream     *http.Client // hc without its timeout, for event streams
	userAgent  string
	reconnects int
}

// New returns a client of the host at baseURL, http://host:port/<slug>
// (a trailing / or /v1 is accepted), sending token as its bearer token
// ("" sends none). The token's surrounding white space is trimmed, so that
// a token read from a file (a host's <state>/token ends with a newline)
// works as it is; a token with a control character inside it is refused,
// since no HTTP header can carry it.
func New(baseURL, token string, opts *Options) (*Client, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.UserAgent == "" {
		o.UserAgent = UserAgentDefault
	}
	switch {
	case o.Reconnects == 0:
		o.Reconnects = ReconnectsDefault
	case o.Reconnects < 0:
		o.Reconnects = 0
	}
	base, err := parseBase(baseURL)
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	token, err = bearerToken(token)
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	stream := *o.HTTPClient
	stream.Timeout = 0
	return &Client{base: base, token: token, hc: o.HTTPClient, stream: &stream, userAgent: o.UserAgent, reconnects: o.Reconnects}, nil
}

// bearerToken is token without its surrounding white space, or an error
// saying where a character no Authorization header can carry is.
func bearerToken(token string) (string, error) {
	token = strings.TrimSpace(token)
	for i, r := range token {
		if r < 0x20 || r == 0x7f {
			return "", fmt.Errorf("the token has a control character (%U) at byte %d: a bearer token is printable text, as in <state>/token", r, i)
		}
	}
	return token, nil
}

// parseBase checks a base URL and returns the API's root: …/<slug>/v1.
func parseBase(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("base URL %q: the scheme must be http or https", raw)
	}
	if u.Host == "" {
		return "", fmt.Errorf("base URL %q has no host", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("base URL %q: drop the query and fragment", raw)
	}
	path := strings.TrimSuffix(u.Path, "/")
	path = strings.TrimSuffix(path, "/v1")
	if path == "" {
		return "", fmt.Errorf("base URL %q needs the agent's slug: %s://%s/<slug>", raw, u.Scheme, u.Host)
	}
	u.Path, u.RawPath = path+"/v1", ""
	return u.String(), nil
}

// routes are the API's routes by name.
var routes = func() map[string]api.Route {
	m := make(map[string]api.Route, len(api.Routes))
	for _, r := range api.Routes {
		m[r.Name] = r
	}
	return m
}()

// endpoint returns the method and URL of the named route, its {wildcards}
// replaced in order by args, path-escaped, and the query appended.
func (c *Client) endpoint(route string, args []string, q query) (string, string) {
	r, ok := routes[route]
	if !ok {
		panic("client: no route " + route)
	}
	segs := strings.Split(r.Path, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") {
			if len(args) == 0 {
				panic("client: too few arguments for route " + route)
			}
			segs[i], args = escapeSegment(args[0]), args[1:]
		}
	}
	if len(args) != 0 {
		panic("client: too many arguments for route " + route)
	}
	u := c.base + strings.Join(segs, "/")
	if len(q) > 0 {
		u += "?" + q.encode()
	}
	return r.Method, u
}

// escapeSegment escapes a path segment, dots included when they would make
// it . or .., which a server would clean away.
func escapeSegment(s string) string {
	if s == "." || s == ".." {
		return strings.Repeat("%2E", len(s))
	}
	return url.PathEscape(s)
}

// query is a URL query that keeps its parameters in the order added.
type query []string // name, value, name, value, …

// add appends name=value, unless value is "".
func (q query) add(name, value string) query {
	if value == "" {
		return q
	}
	return append(q, name, value)
}

func (q query) encode() string {
	var b strings.Builder
	for i := 0; i < len(q); i += 2 {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(q[i]) + "=" + url.QueryEscape(q[i+1]))
	}
	return b.String()
}

// send sends a request to a route and returns the response if its status
// is 2xx, else the error answer as a *StatusError. Errors reaching the
// host are the *url.Error of net/http, as they are.
func (c *Client) send(ctx context.Context, hc *http.Client, route string, args []string, q query, body any, header http.Header) (*http.Response, error) {
	method, u := c.endpoint(route, args, q)
	var b []byte
	if body != nil {
		var err error
		if b, err = encodeJSON(body); err != nil {
			return nil, fmt.Errorf("encoding the request to %s: %w", u, err)
		}
	}
	key := ""
	if routes[route].Idempotent && header.Get(IdempotencyHeader) == "" {
		key = newIdempotencyKey()
	}
	for attempt := 0; ; attempt++ {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequestWithContext(ctx, method, u, rd)
		if err != nil {
			return nil, fmt.Errorf("building the request to %s: %w", u, err)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		req.Header.Set("User-Agent", c.userAgent)
		if key != "" {
			req.Header.Set(IdempotencyHeader, key)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := hc.Do(req)
		if err != nil {
			// A request with an Idempotency-Key is safe to send again when
			// the connection failed: the host answers a retry with the
			// first answer, running nothing twice.
			if (key != "" || header.Get(IdempotencyHeader) != "") && attempt < len(retryDelays) && ctx.Err() == nil && retryable(err) {
				select {
				case <-time.After(retryDelays[attempt]):
					continue
				case <-ctx.Done():
				}
			}
			return nil, err
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			defer resp.Body.Close()
			return nil, readError(resp)
		}
		return resp, nil
	}
}

// IdempotencyHeader carries a request's Idempotency-Key. The client sends
// a fresh one with every request of a route that takes one
// ([api.Route.Idempotent]: a tool call, a new session, a message, an eval
// run) unless the caller's header has one, and sends the request again
// with it when the connection fails: the host answers the retry with the
// first answer.
const IdempotencyHeader = api.IdempotencyHeader

// retryDelays are the waits before the retries of a request with an
// Idempotency-Key whose connection failed.
var retryDelays = []time.Duration{200 * time.Millisecond, time.Second}

// newIdempotencyKey returns a random key.
func newIdempotencyKey() string {
	var b [16]byte
	rand.Read(b[:])
	return "idem_" + hex.EncodeToString(b[:])
}

// call sends a request and decodes a 2xx answer into out.
func (c *Client) call(ctx context.Context, route string, args []string, q query, body, out any) error {
	resp, err := c.send(ctx, c.hc, route, args, q, body, nil)
	if err != nil {
		return err
	}
	return decodeAnswer(resp, out)
}

// decodeAnswer reads a JSON answer into out and closes it.
func decodeAnswer(resp *http.Response, out any) error {
	defer resp.Body.Close()
	data, err := readAnswer(resp)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decoding the answer of %s %s: %w", resp.Request.Method, resp.Request.URL.Redacted(), err)
	}
	return nil
}

func readAnswer(resp *http.Response) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s %s: %w", resp.Request.Method, resp.Request.URL.Redacted(), err)
	}
	if len(data) > maxAnswerBytes {
		return nil, fmt.Errorf("reading the answer of %s %s: larger than %d bytes", resp.Request.Method, resp.Request.URL.Redacted(), maxAnswerBytes)
	}
	return data, nil
}

// encodeJSON encodes a request body, leaving <, > and & as they are.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

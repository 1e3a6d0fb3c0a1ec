package main

// The servers, requests and answer checks shared by the command (main.go)
// and the in-process benchmarks (mcp_test.go).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/tool"
)

const (
	slug       = "bench"
	token      = "bench-token"
	toolName   = "echo"
	mcpPath    = "/" + slug + "/mcp"
	directPath = "/" + slug + "/v1/tools/" + toolName

	// protocolDefault is the MCP protocol version sent unless -protocol
	// says otherwise: the newest one the SDK's stateful transport speaks,
	// and what its clients negotiate with a stateful server.
	protocolDefault = "2025-11-25"
	// protocolNew is the version go-sdk v1.8 clients send a stateless
	// server: per-request _meta and the Mcp-Method/Mcp-Name headers.
	protocolNew = "2026-07-28"

	// benchText is what every call echoes.
	benchText = "hello from the MCP bench"
)

// echoInput and echoOutput are the echo tool's input and result, the same
// for every server.
type echoInput struct {
	Text string `json:"text"`
}

type echoOutput struct {
	Text string `json:"text"`
}

// echo is the tool's work, the same on every server.
func echo(in echoInput) echoOutput { return echoOutput(in) }

// newOurs returns our server (serve.New) with the echo tool as a server
// tool, its host started as agent-sdk serve starts it, state under dir,
// and request logs in the text format agent-sdk serve writes by default
// (--log-format text), to logTo. close stops the host.
func newOurs(dir string, logTo io.Writer) (srv *serve.Server, close func(), err error) {
	t, err := tool.New(toolName, tool.Config{Description: "Echo the text."},
		func(ctx context.Context, call *tool.Call, in echoInput) (any, error) { return echo(in), nil })
	if err != nil {
		return nil, nil, err
	}
	set, err := tool.NewSet(t)
	if err != nil {
		return nil, nil, err
	}
	logger := slog.New(slog.NewTextHandler(logTo, nil))
	h, err := host.New(set, &host.Options{StateRoot: dir, Logger: logger})
	if err != nil {
		return nil, nil, err
	}
	if err := h.Start(context.Background()); err != nil {
		return nil, nil, err
	}
	srv, err = serve.New(h, &serve.Options{Slug: slug, Token: token, Logger: logger})
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	return srv, func() { h.Close() }, nil
}

// sdkSchema is the echo tool's input schema on the SDK's server when the
// tool is added raw.
const sdkSchema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`

// newSDKServer returns the MCP Go SDK's server with the echo tool. Typed,
// the tool is added as the SDK's documentation shows, with mcp.AddTool
// and typed input and output: the SDK infers both schemas, validates the
// input and the output against them, and returns the output as structured
// content and as JSON text. Raw, it is added with Server.AddTool, a JSON
// schema the SDK does not check arguments against, and a handler that
// decodes the arguments with encoding/json and returns the result as JSON
// text, as our endpoint registers its tools: less work for the SDK.
func newSDKServer(typed bool) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: slug, Version: "1"}, nil)
	if typed {
		mcp.AddTool(srv, &mcp.Tool{Name: toolName, Description: "Echo the text."},
			func(ctx context.Context, req *mcp.CallToolRequest, in echoInput) (*mcp.CallToolResult, echoOutput, error) {
				return nil, echo(in), nil
			})
		return srv
	}
	srv.AddTool(&mcp.Tool{Name: toolName, Description: "Echo the text.", InputSchema: json.RawMessage(sdkSchema)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in echoInput
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				res := &mcp.CallToolResult{}
				res.SetError(err)
				return res, nil
			}
			out, err := json.Marshal(echo(in))
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil
		})
	return srv
}

// newSDKHandler returns the SDK's streamable HTTP handler for a server of
// newSDKServer, at mcpPath. Options nil is the SDK's default: stateful
// (a session made by initialize, named by Mcp-Session-Id), answers as SSE.
func newSDKHandler(typed bool, opts *mcp.StreamableHTTPOptions) http.Handler {
	srv := newSDKServer(typed)
	mux := http.NewServeMux()
	mux.Handle(mcpPath, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts))
	return mux
}

// callTemplate is a tools/call request as a client sends it: its headers
// and its body, split around the JSON-RPC id, which a client makes unique
// per request.
type callTemplate struct {
	header         http.Header
	prefix, suffix string // body = prefix + id + suffix
}

func (t *callTemplate) body(id int64) []byte {
	b := make([]byte, 0, len(t.prefix)+20+len(t.suffix))
	b = append(b, t.prefix...)
	b = strconv.AppendInt(b, id, 10)
	return append(b, t.suffix...)
}

// mcpHeader is what every MCP POST carries: the two content types a
// streamable HTTP client accepts, the protocol version, and, when not "",
// the bearer token and the session.
func mcpHeader(version, bearer, session string) http.Header {
	h := http.Header{
		"Accept":               {"application/json, text/event-stream"},
		"Content-Type":         {"application/json"},
		"Mcp-Protocol-Version": {version},
	}
	if bearer != "" {
		h.Set("Authorization", "Bearer "+bearer)
	}
	if session != "" {
		h.Set("Mcp-Session-Id", session)
	}
	return h
}

// plainCall is a tools/call of echo as a client speaking version (before
// 2026-07-28) sends it.
func plainCall(version, bearer, session, text string) *callTemplate {
	args, _ := json.Marshal(map[string]any{"name": toolName, "arguments": echoInput{Text: text}})
	return &callTemplate{header: mcpHeader(version, bearer, session),
		prefix: `{"jsonrpc":"2.0","id":`, suffix: `,"method":"tools/call","params":` + string(args) + `}`}
}

// directCall is a direct call of echo: POST /bench/v1/tools/echo.
func directCall(text string) (header http.Header, body []byte) {
	body, _ = json.Marshal(map[string]any{"input": echoInput{Text: text}})
	return http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + token}}, body
}

// initializeBody is an initialize request for version.
func initializeBody(id int, version string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "initialize", "params": map[string]any{
		"protocolVersion": version, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "agent-sdk-bench", "version": "1"}}})
	return b
}

// initializedBody is the notification a client sends after initialize.
const initializedBody = `{"jsonrpc":"2.0","method":"notifications/initialized"}`

// recordedRequest is one HTTP request a client sent.
type recordedRequest struct {
	header http.Header
	body   []byte
}

// recorder is a RoundTripper that adds the bearer token and keeps every
// request it passes on.
type recorder struct {
	next http.RoundTripper
	reqs []recordedRequest
}

func (rt *recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	rt.reqs = append(rt.reqs, recordedRequest{header: r.Header.Clone(), body: body})
	return rt.next.RoundTrip(r)
}

// captureCall connects the MCP Go SDK's client, speaking version, to the
// endpoint at url (ours), calls echo once, and returns that tools/call as
// a template (its headers as sent, less those of the HTTP client itself,
// and its body with the id cut out), the methods of every request the
// client sent, in order, and the call's result text.
func captureCall(ctx context.Context, url, version, text string) (tmpl *callTemplate, methods []string, result string, err error) {
	rec := &recorder{next: http.DefaultTransport}
	c := mcp.NewClient(&mcp.Implementation{Name: "agent-sdk-bench", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rec}, DisableStandaloneSSE: true, MaxRetries: -1}
	s, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, nil, "", fmt.Errorf("connecting the SDK client (%s): %w", version, err)
	}
	defer s.Close()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: toolName, Arguments: echoInput{Text: text}})
	if err != nil {
		return nil, nil, "", fmt.Errorf("the SDK client's tools/call (%s): %w", version, err)
	}
	if res.IsError || len(res.Content) != 1 {
		return nil, nil, "", fmt.Errorf("the SDK client's tools/call (%s): %+v", version, res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		result = tc.Text
	}
	for _, r := range rec.reqs {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(r.body, &msg) != nil {
			continue
		}
		methods = append(methods, msg.Method)
		if msg.Method != "tools/call" || tmpl != nil {
			continue
		}
		h := r.header.Clone()
		for _, k := range []string{"Content-Length", "User-Agent", "Accept-Encoding"} {
			h.Del(k)
		}
		tmpl = &callTemplate{header: h, prefix: `{"jsonrpc":"2.0","id":`, suffix: `,"method":"tools/call","params":` + string(msg.Params) + `}`}
	}
	if tmpl == nil {
		return nil, methods, "", errors.New("the SDK client sent no tools/call")
	}
	return tmpl, methods, result, nil
}

// rpcResponse is a JSON-RPC response to a tools/call.
type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError    bool   `json:"isError"`
		ResultType string `json:"resultType"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// rpcMessage returns the JSON-RPC message of an MCP answer: the body of a
// JSON one, the data of the (last) message event of an SSE one.
func rpcMessage(contentType string, body []byte) ([]byte, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "application/json":
		return body, nil
	case "text/event-stream":
		var data []byte
		sc := bufio.NewScanner(bytes.NewReader(body))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				data = []byte(strings.TrimSpace(d))
			}
		}
		if data == nil {
			return nil, fmt.Errorf("an event stream without data: %q", body)
		}
		return data, nil
	}
	return nil, fmt.Errorf("answer of type %q: %q", contentType, body)
}

// checkCallAnswer checks an MCP answer to a tools/call of echo with text
// and id: a result, not isError, whose one text content is echo's result
// as JSON. It returns the JSON-RPC message.
func checkCallAnswer(status int, contentType string, body []byte, id int64, text string) (*rpcResponse, error) {
	if status != http.StatusOK {
		return nil, fmt.Errorf("tools/call answered %d: %s", status, bytes.TrimSpace(body))
	}
	msg, err := rpcMessage(contentType, body)
	if err != nil {
		return nil, err
	}
	var res rpcResponse
	if err := json.Unmarshal(msg, &res); err != nil {
		return nil, fmt.Errorf("tools/call answer %q: %w", msg, err)
	}
	want, _ := json.Marshal(echo(echoInput{Text: text}))
	switch {
	case res.Error != nil:
		return nil, fmt.Errorf("tools/call answered JSON-RPC error %d: %s", res.Error.Code, res.Error.Message)
	case string(res.ID) != strconv.FormatInt(id, 10):
		return nil, fmt.Errorf("tools/call answer has id %s, want %d: %s", res.ID, id, msg)
	case res.Result == nil || res.Result.IsError || len(res.Result.Content) != 1 ||
		res.Result.Content[0].Type != "text" || res.Result.Content[0].Text != string(want):
		return nil, fmt.Errorf("tools/call answered %s; want one text content %s", msg, want)
	}
	return &res, nil
}

// checkDirectAnswer checks the answer to a direct call of echo with text.
func checkDirectAnswer(status int, body []byte, text string) error {
	var out struct {
		OK      bool            `json:"ok"`
		IsError bool            `json:"isError"`
		Result  json.RawMessage `json:"result"`
	}
	want, _ := json.Marshal(echo(echoInput{Text: text}))
	if status != http.StatusOK || json.Unmarshal(body, &out) != nil || !out.OK || out.IsError || string(out.Result) != string(want) {
		return fmt.Errorf("direct call answered %d %s; want ok with result %s", status, bytes.TrimSpace(body), want)
	}
	return nil
}

package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/tool"
)

// The MCP endpoint, /<slug>/mcp: the agent's server tools over MCP
// streamable HTTP, on the official Go SDK (stateless, JSON responses). It
// is behind the same bearer token as the API (ServeHTTP checks it, and
// reads the body under the same limits, before the endpoint sees the
// request), and an Origin allow-list. A tools/call goes through
// Host.CallTool, as a direct call over HTTP does: the same validation,
// approval gating, timeouts and result normalisation. Single tools/call
// requests take a fast path (mcpfast.go) that answers what the SDK would,
// without its per-request cost; everything else is the SDK's.

// mcpPath is the endpoint's path under /<slug>.
const mcpPath = "/mcp"

// mcpEndpoint serves /<slug>/mcp.
type mcpEndpoint struct {
	s       *Server
	sdk     http.Handler
	sdkSSE  http.Handler    // the SDK's handler answering as a stream: for requests with a progress token
	tools   map[string]bool // the server tools, which are all the endpoint lists
	typed   map[string]bool // those with an output schema: their results carry structuredContent
	origins map[string]bool // allowed Origin values besides loopback ones

	serverInfo []byte // the JSON of the server's mcp.Implementation

	metaMu sync.RWMutex    // guards metaOK
	metaOK map[string]bool // _meta values known to decode (mcpfast.go)

	noFast   bool         // tests: leave every request to the SDK
	fastHits atomic.Int64 // tests: requests the fast path answered
}

// newMCP makes the endpoint for s's host.
func newMCP(s *Server, origins []string) (*mcpEndpoint, error) {
	e := &mcpEndpoint{s: s, tools: map[string]bool{}, typed: map[string]bool{}, origins: map[string]bool{}}
	for _, o := range origins {
		norm, err := normalOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("allowed MCP origin %q: %w", o, err)
		}
		e.origins[norm] = true
	}
	impl := &mcp.Implementation{Name: s.slug, Title: "agent-sdk: " + s.slug, Version: sdkVersion()}
	info, err := json.Marshal(impl)
	if err != nil {
		return nil, fmt.Errorf("encoding the MCP server's info: %w", err)
	}
	e.serverInfo = info
	srv := mcp.NewServer(impl, nil)
	for _, info := range s.host.Tools().Infos() {
		if info.Execution != tool.Server {
			continue // agent tools run in a turn's workspace, not here
		}
		t := &mcp.Tool{Name: info.Name, Description: info.Description, InputSchema: info.InputSchema}
		if objectSchema(info.OutputSchema) {
			// MCP's outputSchema and structuredContent are objects; a
			// tool whose results are a number or a list answers in text
			// only (Gemini CLI refuses a structuredContent of 3).
			t.OutputSchema = info.OutputSchema
			e.typed[info.Name] = true
		}
		if err := addTool(srv, t, e.handle); err != nil {
			return nil, err
		}
		e.tools[info.Name] = true
	}
	e.sdk = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	// A call with a progress token is answered as an event stream, so that
	// its notifications/progress can go ahead of the result.
	e.sdkSSE = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true})
	return e, nil
}

// sdkVersion is this module's version as built into the binary, or
// "devel".
func sdkVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == modulePath && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				return d.Version
			}
		}
	}
	return "devel"
}

// modulePath is this module's path.
const modulePath = "github.com/agentsdk/agentsdk"

// addTool registers a tool, turning the SDK's panic on a schema it
// refuses into an error.
func addTool(srv *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("listing tool %s on the MCP endpoint: %v", t.Name, p)
		}
	}()
	srv.AddTool(t, h)
	return nil
}

func (e *mcpEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if msg := e.refuseOrigin(r); msg != "" {
		writeError(w, api.Errorf(api.CodeForbidden, "%s", msg))
		return
	}
	if b, ok := r.Body.(*prereadBody); ok && r.Method == http.MethodPost {
		if twice, id := envelopeTwice(b.data); twice != "" {
			refuseEnvelope(w, twice, id)
			return
		}
	}
	if !e.noFast && e.fast(w, r) {
		e.fastHits.Add(1)
		return
	}
	if b, ok := r.Body.(*prereadBody); ok && bytes.Contains(b.data, []byte(`"progressToken"`)) {
		e.sdkSSE.ServeHTTP(w, r)
		return
	}
	e.sdk.ServeHTTP(w, r)
}

// handle is the SDK's tools/call handler.
func (e *mcpEndpoint) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var header http.Header
	if req.Extra != nil {
		header = req.Extra.Header
	}
	var progress func(api.Payload)
	if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		progress = func(p api.Payload) {
			// notifications/progress carries progress; live output has no
			// place in it.
			if pr, ok := p.(api.ActionProgress); ok {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: pr.Done, Total: pr.Total, Message: pr.Message})
			}
		}
	}
	res, rpcErr := e.call(withModelCallID(ctx, req.Params.Meta), req.Params.Name, req.Params.Arguments, header, nil, progress)
	if rpcErr != nil {
		return nil, rpcErr
	}
	return res, nil
}

// call runs a tools/call through the host, as a direct call — or, made
// with a runner token (its header says), as the call of that runner's
// cloud turn. Whatever the tool did (an error, a panic, a timeout, invalid
// input, a refusal) is a result with isError, which the model can read and
// act on; a call that could not be made at all is a JSON-RPC error with a
// proper code. It acts for admitted, the principal ServeHTTP admitted
// the request as, when known (the fast path); else the header's
// credential is checked again (the SDK hands a tool's handler the
// request's header, not its context).
func (e *mcpEndpoint) call(ctx context.Context, name string, args json.RawMessage, header http.Header, admitted *Principal, progress func(api.Payload)) (*mcp.CallToolResult, *jsonrpc.Error) {
	if !e.tools[name] {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
	}
	var p Principal
	var err error
	if admitted != nil {
		p = *admitted
	} else {
		p, err = e.s.principalFor(ctx, header)
	}
	if err == nil {
		err = e.s.mayCall(p, name)
	}
	if err != nil {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: api.AsError(err).Message}}, IsError: true}, nil
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	var out *api.Outcome
	sc, inTurn := e.s.bearerScope(header)
	switch {
	case inTurn && sc.Harness:
		out, err = e.s.host.CallInTurn(ctx, name, args, host.InTurn{SessionID: sc.Session, TurnID: sc.Turn, Token: sc.Token, Harness: true,
			ModelCallID: modelCallIDOf(ctx), Progress: progress})
	case inTurn:
		out, err = e.s.host.CallInTurn(ctx, name, args, host.InTurn{SessionID: sc.Session, TurnID: sc.Turn, Token: sc.Token,
			CallID: header.Get(CallIDRequestHeader), ModelCallID: header.Get(ModelCallIDRequestHeader), Progress: progress})
	default:
		out, err = e.s.host.CallTool(ctx, name, args, &host.CallOptions{Wait: e.s.wait, Principal: p.ID, Progress: progress})
	}
	var pending *host.ApprovalPendingError
	switch {
	case errors.As(err, &pending):
		return e.pendingResult(pending.CallID), nil
	case err != nil:
		apiErr := api.AsError(err)
		switch apiErr.Code {
		case api.CodeUnknownTool, api.CodeAgentTool:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: apiErr.Message}
		case api.CodeInternal, api.CodeSessionNotFound, api.CodeNoRunningTurn, api.CodeBadRequest:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: apiErr.Message}
		}
		// Invalid input, a quota: the model can correct or report it.
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: apiErr.Message}}, IsError: true}, nil
	}
	text := resultText(out.Result)
	if inTurn && sc.Harness {
		text = harnessText(text)
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: out.IsError}
	if e.typed[name] && !out.IsError {
		// Checked against the output schema already (tool.Run).
		res.StructuredContent = out.Result
	}
	return res, nil
}

// objectSchema reports whether a JSON Schema is of objects.
func objectSchema(schema json.RawMessage) bool {
	var s struct {
		Type any `json:"type"`
	}
	return schema != nil && json.Unmarshal(schema, &s) == nil && s.Type == "object"
}

// pendingResult answers a call parked for a person's decision that was not
// decided within the approval wait: not a result yet, so isError, with
// what happened and where its outcome will be.
func (e *mcpEndpoint) pendingResult(callID string) *mcp.CallToolResult {
	p := e.s.pendingBody(callID)
	text := fmt.Sprintf("not run yet: call %s awaits a person's approval (agent-sdk approve %s, or %s); its outcome will be at %s",
		callID, callID, p.Approve, p.Outcome)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: p, IsError: true}
}

// resultText is a normalised result as MCP text content: a JSON string as
// the string, anything else as its JSON.
func resultText(result json.RawMessage) string {
	if len(result) > 0 && result[0] == '"' {
		var s string
		if json.Unmarshal(result, &s) == nil {
			return s
		}
	}
	if len(result) == 0 {
		return "null"
	}
	return string(result)
}

// refuseOrigin says why a request is refused for its Origin or Host, or
// "". A request without Origin (not from a browser) passes; one with an
// Origin must come from a loopback origin or an allowed one, so that a web
// page — also one on a DNS-rebound name that resolves here — cannot call
// tools. As the SDK does, a request to a loopback address naming a
// non-loopback Host is refused too.
func (e *mcpEndpoint) refuseOrigin(r *http.Request) string {
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && isLoopbackAddr(local.String()) && !isLoopbackHost(r.Host) {
		return fmt.Sprintf("forbidden: Host %q on a loopback connection (a DNS-rebinding attempt?)", r.Host)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	norm, err := normalOrigin(origin)
	if err == nil {
		u, _ := url.Parse(norm)
		if e.origins[norm] || isLoopbackHost(u.Host) {
			return ""
		}
	}
	return fmt.Sprintf("forbidden: Origin %q is not allowed on the MCP endpoint (serve --mcp-origin)", origin)
}

// normalOrigin returns an origin as scheme://host[:port], lower-case.
func normalOrigin(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return "", err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return "", errors.New("not an origin (want scheme://host[:port])")
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// isLoopbackHost reports whether a Host value (host[:port]) names this
// machine's loopback: localhost, 127.0.0.0/8 or ::1.
func isLoopbackHost(hostport string) bool {
	h := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// isLoopbackAddr reports whether a connection's local address is a
// loopback one.
func isLoopbackAddr(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

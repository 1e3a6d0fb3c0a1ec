// Package mcpconn connects an agent's host to the MCP servers authored in
// its agent.yaml, through the official MCP Go SDK: stdio servers started by
// command, and streamable-HTTP servers by URL. It implements [tool.MCP]:
// connections start on first use, are reused, restart after a crash, and
// close with Close.
package mcpconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsdk/agentsdk/agentconfig"
	"github.com/agentsdk/agentsdk/tool"
)

// Open connects to servers for the agent binary: it is the OpenMCP of
// agentmain.Options, which agent-sdk sets in the generated main of agents
// whose agent.yaml has mcp: servers.
func Open(servers map[string]agentconfig.MCPServer, logger *slog.Logger) (tool.MCP, error) {
	return New(servers, logger)
}

// Conns is the host's connections, safe for concurrent use.
type Conns struct {
	servers map[string]agentconfig.MCPServer
	client  *mcp.Client
	logger  *slog.Logger
	mu      sync.Mutex
	live    map[string]*mcp.ClientSession
	closed  bool
}

// New returns connections to servers; none is started yet.
func New(servers map[string]agentconfig.MCPServer, logger *slog.Logger) (*Conns, error) {
	for name, s := range servers {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("mcp server %s: %w", name, err)
		}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Conns{
		servers: servers,
		client:  mcp.NewClient(&mcp.Implementation{Name: "agent-sdk", Version: "1"}, nil),
		logger:  logger,
		live:    map[string]*mcp.ClientSession{},
	}, nil
}

// Names lists the configured servers, sorted.
func (c *Conns) Names() []string {
	names := make([]string, 0, len(c.servers))
	for n := range c.servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// bearer adds headers to every request of a streamable-HTTP server.
type bearer struct {
	headers map[string]string
	next    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range b.headers {
		r.Header.Set(k, v)
	}
	return b.next.RoundTrip(r)
}

// session returns a live connection to a server, starting one if need be.
func (c *Conns) session(ctx context.Context, name string) (*mcp.ClientSession, error) {
	s, ok := c.servers[name]
	if !ok {
		return nil, fmt.Errorf("mcp: no server named %q (configured: %v)", name, c.Names())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("mcp: the host is shutting down")
	}
	if cs := c.live[name]; cs != nil {
		return cs, nil
	}
	var t mcp.Transport
	if s.Command != "" {
		cmd := exec.Command(s.Command, s.Args...)
		cmd.Env = os.Environ()
		for k, v := range s.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		t = &mcp.CommandTransport{Command: cmd}
	} else {
		headers := map[string]string{}
		for k, v := range s.Headers {
			headers[k] = v
		}
		if s.BearerToken != "" {
			headers["Authorization"] = "Bearer " + s.BearerToken
		}
		t = &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: &http.Client{Transport: bearer{headers, http.DefaultTransport}}}
	}
	// The connection outlives this call: it must not end with ctx.
	cs, err := c.client.Connect(context.WithoutCancel(ctx), t, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp: connecting to %s: %w", name, err)
	}
	c.live[name] = cs
	c.logger.Info("connected to MCP server", "server", name)
	return cs, nil
}

// drop forgets a connection that failed, so that the next use reconnects.
func (c *Conns) drop(name string, cs *mcp.ClientSession) {
	c.mu.Lock()
	if c.live[name] == cs {
		delete(c.live, name)
	}
	c.mu.Unlock()
	cs.Close()
}

// ListTools lists a server's tools.
func (c *Conns) ListTools(ctx context.Context, name string) ([]tool.MCPTool, error) {
	cs, err := c.session(ctx, name)
	if err != nil {
		return nil, err
	}
	res, err := cs.ListTools(ctx, &mcp.ListToolsParams{})
	if err != nil {
		c.drop(name, cs)
		return nil, fmt.Errorf("mcp: listing the tools of %s: %w", name, err)
	}
	out := make([]tool.MCPTool, 0, len(res.Tools))
	for _, t := range res.Tools {
		schema, _ := json.Marshal(t.InputSchema)
		out = append(out, tool.MCPTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return out, nil
}

// CallTool calls a server's tool. When the server fails (it crashed, the
// connection broke), the answer is an isError result and the connection is
// dropped: the next call starts a new one.
func (c *Conns) CallTool(ctx context.Context, name, toolName string, args any) (tool.Result, error) {
	cs, err := c.session(ctx, name)
	if err != nil {
		return tool.Result{}, err
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: toolName, Arguments: args})
	if err != nil {
		c.drop(name, cs)
		if ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		return tool.Result{Content: []tool.Content{tool.Text(fmt.Sprintf("MCP server %s failed during %s: %v", name, toolName, err))}, IsError: true}, nil
	}
	// tool.Result has the CallToolResult shape: go through JSON.
	b, err := json.Marshal(res)
	if err != nil {
		return tool.Result{}, fmt.Errorf("mcp: reading the result of %s: %w", toolName, err)
	}
	var out tool.Result
	if err := json.Unmarshal(b, &out); err != nil {
		return tool.Result{}, fmt.Errorf("mcp: reading the result of %s: %w", toolName, err)
	}
	if out.Content == nil {
		out.Content = []tool.Content{}
	}
	return out, nil
}

// Close closes every connection (stopping stdio servers).
func (c *Conns) Close() error {
	c.mu.Lock()
	c.closed = true
	live := c.live
	c.live = map[string]*mcp.ClientSession{}
	c.mu.Unlock()
	var errs []error
	for _, cs := range live {
		errs = append(errs, cs.Close())
	}
	return errors.Join(errs...)
}

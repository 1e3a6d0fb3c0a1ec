package serve

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"

	"github.com/agentsdk/agentsdk/host"
)

// Harness turns (a session whose runtime is a coding-agent harness) reach
// the agent's server tools over this server's MCP endpoint, with a
// harness token: a runner token (runner.go) whose scope says harness,
// good while this host runs that turn (host.RunsHarnessTurn). The
// harness's calls are announced, gated and recorded by the host
// (host.InTurn.Harness).

// HarnessMCP returns what harness turns are given to reach the MCP
// endpoint of this server listening at addr (its loopback address when
// it listens on every interface): for host.Host.SetHarnessMCP.
func (s *Server) HarnessMCP(addr net.Addr) func(sessionID, turnID string) (host.HarnessMCPServer, bool) {
	hostPort := addr.String()
	if ta, ok := addr.(*net.TCPAddr); ok {
		ip := ta.IP
		switch {
		case ip == nil || ip.IsUnspecified() && ip.To4() != nil:
			ip = net.IPv4(127, 0, 0, 1)
		case ip.IsUnspecified():
			ip = net.IPv6loopback
		}
		hostPort = net.JoinHostPort(ip.String(), strconv.Itoa(ta.Port))
	}
	url := "http://" + hostPort + "/" + s.slug + mcpPath
	return func(sessionID, turnID string) (host.HarnessMCPServer, bool) {
		tok := s.runnerToken(runnerScope{Session: sessionID, Turn: turnID, Harness: true})
		return host.HarnessMCPServer{URL: url, Headers: map[string]string{"Authorization": "Bearer " + tok}}, true
	}
}

// harnessText is a result's text as a harness is given it: a text that
// reads as JSON other than an object (3, [1,2], "42") is wrapped in one,
// {"result": …}, since Gemini CLI's MCP client parses a text result as
// JSON into structuredContent, which must be an object, and fails the
// call otherwise.
func harnessText(text string) string {
	var v any
	if json.Unmarshal([]byte(text), &v) != nil {
		return text
	}
	if _, isObject := v.(map[string]any); isObject {
		return text
	}
	b, err := json.Marshal(map[string]json.RawMessage{"result": json.RawMessage(strings.TrimSpace(text))})
	if err != nil {
		return text
	}
	return string(b)
}

// modelCallIDKey carries, in a tools/call's context, the id the harness
// gave the call (Claude Code's _meta "claudecode/toolUseId").
type modelCallIDKey struct{}

// withModelCallID returns ctx carrying a call's _meta's model call id.
func withModelCallID(ctx context.Context, meta map[string]any) context.Context {
	if id, ok := meta["claudecode/toolUseId"].(string); ok && id != "" && len(id) <= 128 {
		return context.WithValue(ctx, modelCallIDKey{}, id)
	}
	return ctx
}

// modelCallIDOf is the model call id ctx carries, or "".
func modelCallIDOf(ctx context.Context) string {
	id, _ := ctx.Value(modelCallIDKey{}).(string)
	return id
}

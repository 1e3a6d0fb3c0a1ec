package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsdk/agentsdk/internal/jsonscan"
)

// The fast path for tools/call. The SDK's stateless handler builds a
// session for each request and decodes the body several times, each time
// with a fresh 32 KiB buffer (../shared/research/mcp-endpoint.md): about
// 0.1× a bare handler. A single, plain tools/call of a listed tool — what
// MCP clients send for nearly every request after the first — is answered
// here instead: one scan of the body, the same function the SDK's handler
// calls (mcpEndpoint.call), and the answer the SDK would give. Anything
// else, or anything unusual about a tools/call (a batch, a progress token,
// escaped keys, a repeated key, an unknown tool, a header the SDK checks
// in ways this path does not), is left to the SDK, which answers it as it
// always does; TestMCPFastPathAgrees checks both give the same answers.

// Protocol versions the fast path answers.
const (
	mcpVersion20251125 = "2025-11-25"
	mcpVersion20250618 = "2025-06-18"
	mcpVersion20260728 = "2026-07-28" // per-request _meta, Mcp-Method and Mcp-Name headers, resultType
)

// metaProtocolVersion is the _meta key of a 2026-07-28 request's version.
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// fastCall is a tools/call the fast path takes.
type fastCall struct {
	id      []byte // the request id's JSON text: a plain string or an integer
	name    string
	args    []byte // the arguments' JSON text, nil if absent
	version string
}

// fast answers a single tools/call as the SDK would; false leaves the
// request to the SDK.
func (e *mcpEndpoint) fast(w http.ResponseWriter, r *http.Request) bool {
	c, ok := e.fastRequest(r)
	if !ok {
		return false
	}
	admitted := principalOf(r)
	res, rpcErr := e.call(r.Context(), c.name, c.args, r.Header, &admitted, nil)
	var result []byte
	if rpcErr == nil {
		var err error
		if result, err = json.Marshal(res); err != nil {
			return false // cannot happen for the results call makes; the SDK would fail alike
		}
	}
	h := w.Header()
	h["Cache-Control"] = []string{"no-cache, no-transform"}
	h["Content-Type"] = []string{"application/json"}
	w.WriteHeader(http.StatusOK) // the SDK's status for -32603, the only error call returns for a listed tool
	buf := bytes.NewBuffer(make([]byte, 0, len(result)+len(e.serverInfo)+128))
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(c.id)
	switch {
	case rpcErr != nil:
		errJSON, _ := json.Marshal(rpcErr)
		buf.WriteString(`,"error":`)
		buf.Write(errJSON)
	case c.version >= mcpVersion20260728:
		// What a 2026-07-28 result carries besides: the server's info in
		// _meta, and resultType complete.
		buf.WriteString(`,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":`)
		buf.Write(e.serverInfo)
		buf.WriteByte('}')
		if body := result[1 : len(result)-1]; len(bytes.TrimSpace(body)) > 0 {
			buf.WriteByte(',')
			buf.Write(body)
		}
		buf.WriteString(`,"resultType":"complete"}`)
	default:
		buf.WriteString(`,"result":`)
		buf.Write(result)
	}
	buf.WriteString("}\n")
	w.Write(buf.Bytes())
	return true
}

// fastRequest reads a request the fast path takes, or says it is not one.
func (e *mcpEndpoint) fastRequest(r *http.Request) (fastCall, bool) {
	var c fastCall
	h := r.Header
	if r.Method != http.MethodPost || baseType(h.Get("Content-Type")) != "application/json" || !acceptsBoth(h["Accept"]) ||
		len(h["Last-Event-Id"]) > 0 || len(h["Mcp-Protocol-Version"]) != 1 {
		return c, false
	}
	c.version = h["Mcp-Protocol-Version"][0]
	switch c.version {
	case mcpVersion20251125, mcpVersion20250618:
		if len(h["Mcp-Method"]) > 0 || len(h["Mcp-Name"]) > 0 {
			return c, false
		}
	case mcpVersion20260728:
		if len(h["Mcp-Method"]) != 1 || h["Mcp-Method"][0] != "tools/call" || len(h["Mcp-Name"]) != 1 {
			return c, false
		}
	default:
		return c, false
	}
	for k := range h {
		if strings.HasPrefix(k, "Mcp-Param-") {
			return c, false
		}
	}
	body, ok := r.Body.(*prereadBody)
	if !ok {
		return c, false
	}
	// The request: exactly these members, each once, with plain keys.
	var top [4][]byte // jsonrpc, id, method, params
	if !members(body.data, []string{"jsonrpc", "id", "method", "params"}, top[:], true) ||
		string(top[0]) != `"2.0"` || !plainID(top[1]) || string(top[2]) != `"tools/call"` {
		return c, false
	}
	c.id = top[1]
	var params [3][]byte // name, arguments, _meta
	if !members(top[3], []string{"name", "arguments", "_meta"}, params[:], false) {
		return c, false
	}
	name, meta := params[0], params[2]
	if c.args = params[1]; c.args != nil && c.args[0] != '{' {
		return c, false
	}
	n, ok := plainString(name)
	if !ok || !e.tools[n] {
		return c, false
	}
	c.name = n
	if c.version == mcpVersion20260728 {
		if h["Mcp-Name"][0] != n || !e.metaFits(meta, c.version) {
			return c, false
		}
	} else if meta != nil {
		return c, false
	}
	return c, true
}

// members reads a JSON object whose keys are all among keys, plain and
// not repeated, setting values[i] to the value of keys[i]; all says every
// key must be there.
func members(data []byte, keys []string, values [][]byte, all bool) bool {
	var seen uint
	err := jsonscan.Object(data, func(key []byte, plain bool, value []byte) error {
		for i, k := range keys {
			if string(key) == k {
				if !plain || seen&(1<<i) != 0 {
					return errNotFast
				}
				seen |= 1 << i
				values[i] = value
				return nil
			}
		}
		return errNotFast
	})
	return err == nil && (!all || seen == 1<<len(keys)-1)
}

// metaFits reports whether a 2026-07-28 request's _meta names the version
// of its header and asks for nothing this path does not do (progress).
func (e *mcpEndpoint) metaFits(meta []byte, version string) bool {
	if meta == nil {
		return false
	}
	var seen uint8
	err := jsonscan.Object(meta, func(key []byte, plain bool, value []byte) error {
		if !plain {
			return errNotFast
		}
		bit := uint8(0)
		switch string(key) {
		case metaProtocolVersion:
			bit = 1
			if v, ok := plainString(value); !ok || v != version {
				return errNotFast
			}
		case metaClientCapabilities:
			// Required, and decoded by the SDK: one it cannot decode is an error.
			bit = 2
			if !e.metaDecodes(value, decodesAsCapabilities) {
				return errNotFast
			}
		case metaClientInfo:
			bit = 4
			if !e.metaDecodes(value, decodesAsImplementation) {
				return errNotFast
			}
		case "progressToken":
			return errNotFast
		}
		if seen&bit != 0 {
			return errNotFast
		}
		seen |= bit
		return nil
	})
	return err == nil && seen&3 == 3
}

// metaDecodes reports whether a _meta value is an object that decode
// accepts. A client sends the same few values with every request: those
// that decoded are remembered (up to metaCacheMax), so that each is
// decoded once rather than on every call.
func (e *mcpEndpoint) metaDecodes(value []byte, decode func([]byte) bool) bool {
	if value[0] != '{' {
		return false
	}
	e.metaMu.RLock()
	ok := e.metaOK[string(value)]
	e.metaMu.RUnlock()
	if ok {
		return true
	}
	if !decode(value) {
		return false
	}
	e.metaMu.Lock()
	if e.metaOK == nil {
		e.metaOK = map[string]bool{}
	}
	if len(e.metaOK) < metaCacheMax {
		e.metaOK[string(value)] = true
	}
	e.metaMu.Unlock()
	return true
}

// metaCacheMax bounds the _meta values remembered as decoding.
const metaCacheMax = 256

func decodesAsCapabilities(v []byte) bool {
	// The SDK decodes into ClientCapabilities plus a roots member; roots
	// is an object (or null) either way.
	var caps struct {
		mcp.ClientCapabilities
		Roots *struct {
			ListChanged bool `json:"listChanged,omitempty"`
		} `json:"roots,omitempty"`
	}
	return json.Unmarshal(v, &caps) == nil
}

func decodesAsImplementation(v []byte) bool {
	var info mcp.Implementation
	return json.Unmarshal(v, &info) == nil
}

// The _meta keys of a 2026-07-28 request the SDK reads.
const (
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
)

// errNotFast stops a scan: the request is the SDK's.
var errNotFast = errors.New("not a request for the fast path")

// plainID reports whether an id is one the fast path echoes as it came: a
// string without escapes, or a non-negative integer that fits int64.
func plainID(v []byte) bool {
	if _, ok := plainString(v); ok {
		return true
	}
	if len(v) == 0 || len(v) > 18 || (v[0] == '0' && len(v) > 1) {
		return false
	}
	for _, b := range v {
		if b < '0' || b > '9' {
			return false
		}
	}
	return true
}

// plainString returns a JSON string's value if it has no escapes.
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' || bytes.IndexByte(v, '\\') >= 0 {
		return "", false
	}
	return string(v[1 : len(v)-1]), true
}

// baseType returns a media type without its parameters, lower-case.
func baseType(v string) string {
	base, _, _ := strings.Cut(v, ";")
	return strings.ToLower(strings.TrimSpace(base))
}

// acceptsBoth reports whether Accept values name both application/json
// and text/event-stream, as the SDK requires (its wildcards count too).
func acceptsBoth(values []string) bool {
	jsonOK, streamOK := false, false
	for _, v := range values {
		for raw := range strings.SplitSeq(v, ",") {
			switch baseType(raw) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

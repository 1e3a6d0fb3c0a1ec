package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/agentsdk/agentsdk/internal/jsonscan"
)

// Duplicate members of an MCP request's JSON-RPC envelope. REST bodies
// that name a field twice are refused (decodeJSON); so is an MCP message
// that names a member of its envelope twice: its own (jsonrpc, id,
// method, params), its params' (name, arguments, _meta, …) or its
// _meta's. The SDK decodes the envelope with encoding/json, which lets
// the last of two equal keys win and matches keys in any case, so
// {"name":"safe","Name":"deploy"} would call deploy while a proxy, a log
// or an approver that reads the first sees safe. A tool's arguments are
// the tool's: its validation refuses their duplicate keys, as an isError
// result.

// envelopeTwice returns what an MCP message (or each message of a batch)
// names twice, as "field \"name\" of params", and the message's id (JSON
// text; nil when it has none that can be read); "" if nothing repeats or
// the body is not JSON (which the SDK refuses as it does).
func envelopeTwice(body []byte) (twice string, id []byte) {
	s := jsonscan.Scanner{Data: body}
	s.Space()
	if s.Peek() != '[' {
		return messageTwice(body)
	}
	s.Consume('[')
	for s.Space(); !s.Consume(']'); s.Space() {
		start := s.Pos
		if !s.Skip() {
			return "", nil
		}
		if twice, _ := messageTwice(s.Data[start:s.Pos]); twice != "" {
			return twice + " of a message of the batch", nil
		}
		s.Space()
		s.Consume(',')
	}
	return "", nil
}

// messageTwice is envelopeTwice of one message.
func messageTwice(msg []byte) (string, []byte) {
	var params, id []byte
	ids := 0
	twice := membersTwice(msg, func(k string, v []byte) {
		switch k {
		case "params":
			params = v
		case "id":
			id, ids = v, ids+1
		}
	})
	if ids != 1 || len(id) == 0 || (id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9')) {
		id = nil
	}
	if twice != "" {
		return fmt.Sprintf("field %s", twice), id
	}
	if len(params) == 0 || params[0] != '{' {
		return "", id
	}
	var meta []byte
	if twice := membersTwice(params, func(k string, v []byte) {
		if k == "_meta" {
			meta = v
		}
	}); twice != "" {
		return fmt.Sprintf("field %s of params", twice), id
	}
	if len(meta) == 0 || meta[0] != '{' {
		return "", id
	}
	if twice := membersTwice(meta, func(string, []byte) {}); twice != "" {
		return fmt.Sprintf("field %s of params._meta", twice), id
	}
	return "", id
}

// membersTwice calls each with every member of a JSON object (its key
// folded as encoding/json matches keys) and returns the first key that
// repeats one before it, quoted; "" if none does, or data is no object.
func membersTwice(data []byte, each func(key string, value []byte)) string {
	seen := map[string]bool{}
	var twice string
	err := jsonscan.Object(data, func(raw []byte, plain bool, value []byte) error {
		key := string(raw)
		if !plain {
			if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &key) != nil {
				return jsonscan.ErrSyntax
			}
		}
		folded := strings.ToLower(strings.ToUpper(key))
		each(folded, value)
		if seen[folded] {
			twice = quoteKey([]byte(key))
			return jsonscan.ErrSyntax
		}
		seen[folded] = true
		return nil
	})
	if twice == "" && err != nil {
		return ""
	}
	return twice
}

// refuseEnvelope answers a message whose envelope names a member twice
// with the JSON-RPC error Invalid Request: to its id, as the SDK answers
// a request's error (200, application/json), or, with no id to answer
// to, with id null and 400, as the SDK refuses a message it cannot read.
func refuseEnvelope(w http.ResponseWriter, twice string, id []byte) {
	status := http.StatusOK
	if id == nil {
		id, status = []byte("null"), http.StatusBadRequest
	}
	rpcErr, _ := json.Marshal(&jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
		Message: "invalid request: " + twice + " appears twice; a JSON-RPC message names each member once"})
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	b.WriteString(`,"error":`)
	b.Write(rpcErr)
	b.WriteString("}\n")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

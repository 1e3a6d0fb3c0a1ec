package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/httpjson"
	"github.com/agentsdk/agentsdk/internal/jsonscan"
)

// writeError writes any error in the API's one error shape, with the
// status of its code (api.AsError: an *api.Error as it is, anything else
// internal).
func writeError(w http.ResponseWriter, err error) { httpjson.Error(w, err) }

// writeJSON answers status with v as JSON (httpjson.Write).
func writeJSON(w http.ResponseWriter, status int, v any) { httpjson.Write(w, status, v) }

// readBody returns a request's body: the one ServeHTTP read (admit), or,
// for a body a handler put back, read now under the limit.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if b, ok := r.Body.(*prereadBody); ok {
		return b.data, nil
	}
	return s.bearerBody.read(w, r)
}

// bodyRule is how a request body is read: at most max bytes, within
// timeout of its headers (0: no limit), a limit timeoutName names in the
// error of a body that misses it.
type bodyRule struct {
	max         int64
	timeout     time.Duration
	timeoutName string
}

// read reads a request body, refusing one over the limit.
func (b bodyRule) read(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body := r.Body
	if r.ContentLength <= 0 || r.ContentLength > b.max {
		// A declared length within the limit needs no other: the body
		// ends there.
		body = http.MaxBytesReader(w, r.Body, b.max)
	}
	data, err := readAll(body, r.ContentLength, b.max)
	if err != nil {
		var (
			tooBig  *http.MaxBytesError
			timeout net.Error
		)
		switch {
		case errors.As(err, &tooBig):
			return nil, api.AsError(tooBig)
		case errors.As(err, &timeout) && timeout.Timeout():
			return nil, api.Errorf(api.CodeRequestTimeout, "the request body did not arrive within %s of its headers (%s)", b.timeout, b.timeoutName)
		}
		return nil, api.Errorf(api.CodeBadRequest, "reading request body: %w", err)
	}
	return data, nil
}

// preread reads r's body whole before any handler runs, under rule: a
// connection's read deadline while the body arrives, lifted once it has
// (the server keeps reading the connection, to notice a client that goes
// away, and an expired deadline would cancel the request).
func preread(w http.ResponseWriter, r *http.Request, rule bodyRule) (*prereadBody, error) {
	rc := http.NewResponseController(w)
	if rule.timeout > 0 {
		rc.SetReadDeadline(time.Now().Add(rule.timeout)) // unsupported only off a real connection (tests)
	}
	data, err := rule.read(w, r)
	if err != nil {
		return nil, err
	}
	if rule.timeout > 0 {
		rc.SetReadDeadline(time.Time{})
	}
	r.ContentLength = int64(len(data))
	b := &prereadBody{data: data}
	b.Reset(data)
	return b, nil
}

// prereadBody is a request body read by ServeHTTP; readBody takes its
// bytes as they are, and it reads as any body for other uses.
type prereadBody struct {
	bytes.Reader // of data; one allocation with it
	data         []byte
}

func (*prereadBody) Close() error { return nil }

// readAll reads r whole, sizing its buffer from the declared length when
// there is one within the limit.
func readAll(r io.Reader, declared, limit int64) ([]byte, error) {
	if declared <= 0 || declared > limit {
		return io.ReadAll(r)
	}
	buf := make([]byte, declared, declared+1)
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("body shorter than its Content-Length: %w", err)
		}
		return nil, err
	}
	return buf, nil
}

// malformed is the error of a request body that is not what the endpoint
// takes.
func malformed(format string, a ...any) *api.Error {
	return api.Errorf(api.CodeMalformedJSON, "request body: "+format, a...)
}

// decodeJSON decodes a small JSON object body strictly: no unknown fields,
// nothing after the object.
func decodeJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return malformed("%s", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return malformed("unexpected data after the JSON object")
	}
	// encoding/json lets the last of two equal keys win, and matches
	// names in any case: {"approved":false,"Approved":true} would read as
	// approved. A body that names a field twice is refused.
	seen := map[string]bool{}
	var twice error
	jsonscan.Object(body, func(key []byte, plain bool, value []byte) error {
		k := strings.ToLower(string(key))
		if seen[k] {
			twice = malformed("field %s appears twice", quoteKey(key))
			return twice
		}
		seen[k] = true
		return nil
	})
	return twice
}

// parseCallRequest reads {"input": …, "sessionId": "…"}, refusing anything
// else: malformed JSON, other fields, trailing data. It slices the input out
// of the body without decoding it; the tool's validation does that once.
func parseCallRequest(body []byte) (api.CallRequest, error) {
	var req api.CallRequest
	if len(bytes.TrimSpace(body)) == 0 {
		return req, malformed(`empty; send a JSON object such as {"input": {…}}`)
	}
	var fieldErr error
	seenInput, seenSession := false, false
	err := jsonscan.Object(body, func(key []byte, plain bool, value []byte) error {
		switch {
		case plain && (string(key) == "input" && seenInput || string(key) == "sessionId" && seenSession):
			fieldErr = malformed("field %s appears twice", quoteKey(key))
			return fieldErr
		case plain && string(key) == "input":
			seenInput, req.Input = true, value
		case plain && string(key) == "sessionId":
			seenSession = true
			if string(value) == "null" {
				return nil
			}
			var id string // not req.SessionID: its address would move req to the heap on every call
			if err := json.Unmarshal(value, &id); err != nil {
				fieldErr = malformed("sessionId must be a string")
				return fieldErr
			}
			req.SessionID = id
		default:
			fieldErr = malformed("unknown field %s: only input and sessionId are allowed", quoteKey(key))
			return fieldErr
		}
		return nil
	})
	if fieldErr != nil {
		return req, fieldErr
	}
	if err != nil {
		var syntax *json.SyntaxError
		if jerr := json.Unmarshal(body, new(any)); errors.As(jerr, &syntax) {
			return req, malformed("%v (at byte %d)", syntax, syntax.Offset)
		}
		return req, malformed(`must be a JSON object such as {"input": {…}}`)
	}
	return req, nil
}

func quoteKey(key []byte) string {
	if len(key) > 64 {
		key = key[:64]
	}
	return strconv.Quote(string(key))
}

// queryInt reads a whole-number query parameter within [lo, hi].
func queryInt(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, api.Errorf(api.CodeBadQuery, "%s must be a whole number from %d to %d", name, lo, hi)
	}
	return n, nil
}

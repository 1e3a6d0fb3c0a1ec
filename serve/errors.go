package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/jsonscan"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// apiError is the one shape of every error the API returns:
// {"ok":false,"error":{"code":…,"message":…,…}}.
type apiError struct {
	Status     int              `json:"-"`
	Code       string           `json:"code"`
	Message    string           `json:"message"`
	Available  []string         `json:"available,omitempty"`  // unknown_tool
	Violations []tool.Violation `json:"violations,omitempty"` // invalid_input
	Approval   *store.Approval  `json:"approval,omitempty"`   // already_resolved: the first decision
	CallID     string           `json:"callId,omitempty"`
}

func decodeOutcome(b []byte, out *host.Outcome) error { return json.Unmarshal(b, out) }

func (e *apiError) Error() string { return e.Message }

// callError maps a refused direct call to its status and code.
func callError(err error) *apiError {
	var (
		unknown  *tool.UnknownToolError
		agent    *tool.AgentToolError
		invalid  *tool.InputError
		approval *host.ApprovalRequiredError
	)
	switch {
	case errors.As(err, &unknown):
		return &apiError{Status: http.StatusNotFound, Code: "unknown_tool", Message: err.Error(), Available: nonNil(unknown.Available)}
	case errors.As(err, &agent):
		return &apiError{Status: http.StatusBadRequest, Code: "agent_tool", Message: err.Error()}
	case errors.As(err, &invalid):
		return &apiError{Status: http.StatusBadRequest, Code: "invalid_input", Message: err.Error(), Violations: invalid.Violations}
	case errors.As(err, &approval):
		return &apiError{Status: http.StatusForbidden, Code: "approval_required", Message: err.Error()}
	}
	return sessionError(err)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// readBody reads a request body, refusing one over the limit.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	body, err := readAll(http.MaxBytesReader(w, r.Body, s.maxBody), r.ContentLength, s.maxBody)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large",
				Message: fmt.Sprintf("request body is larger than %d bytes", tooBig.Limit)}
		}
		return nil, &apiError{Status: http.StatusBadRequest, Code: "bad_request", Message: "reading request body: " + err.Error()}
	}
	return body, nil
}

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

// parseCallRequest reads {"input": …, "sessionId": "…"}, refusing anything
// else: malformed JSON, other fields, trailing data. It slices the input out
// of the body without decoding it; the tool's validation does that once.
func parseCallRequest(body []byte) (CallRequest, *apiError) {
	var req CallRequest
	malformed := func(msg string) *apiError {
		return &apiError{Status: http.StatusBadRequest, Code: "malformed_json", Message: "request body: " + msg}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return req, malformed(`empty; send a JSON object such as {"input": {…}}`)
	}
	var fieldErr *apiError
	err := jsonscan.Object(body, func(key []byte, plain bool, value []byte) error {
		switch {
		case plain && string(key) == "input":
			req.Input = value
		case plain && string(key) == "sessionId":
			if string(value) == "null" {
				return nil
			}
			if err := json.Unmarshal(value, &req.SessionID); err != nil {
				fieldErr = malformed("sessionId must be a string")
				return fieldErr
			}
		default:
			fieldErr = malformed(fmt.Sprintf("unknown field %s: only input and sessionId are allowed", quoteKey(key)))
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
			return req, malformed(fmt.Sprintf("%v (at byte %d)", syntax, syntax.Offset))
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

type errorBody struct {
	OK    bool      `json:"ok"`
	Error *apiError `json:"error"`
}

func writeError(w http.ResponseWriter, err *apiError) {
	writeJSON(w, err.Status, errorBody{Error: err})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		b.Reset()
		b.WriteString(`{"ok":false,"error":{"code":"internal","message":"encoding the response failed"}}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/agentsdk/agentsdk/host"
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
}

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
	case errors.Is(err, host.ErrNoSessions):
		return &apiError{Status: http.StatusBadRequest, Code: "sessions_unavailable", Message: err.Error()}
	}
	return &apiError{Status: http.StatusInternalServerError, Code: "internal", Message: err.Error()}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// decodeBody decodes a JSON object body into v, refusing bodies over the
// limit, malformed JSON, unknown fields and trailing data.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) *apiError {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &apiError{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large",
				Message: fmt.Sprintf("request body is larger than %d bytes", tooBig.Limit)}
		}
		return &apiError{Status: http.StatusBadRequest, Code: "bad_request", Message: "reading request body: " + err.Error()}
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return &apiError{Status: http.StatusBadRequest, Code: "malformed_json",
			Message: `request body must be a JSON object, such as {"input": {…}}`}
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &apiError{Status: http.StatusBadRequest, Code: "malformed_json", Message: "request body: " + err.Error()}
	}
	if dec.InputOffset() != int64(len(trimmed)) {
		return &apiError{Status: http.StatusBadRequest, Code: "malformed_json", Message: "request body: unexpected data after the JSON object"}
	}
	return nil
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

package client

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentsdk/agentsdk/api"
)

// StatusError is an error answer of the host: its HTTP status and the
// API's error. It unwraps to the [*api.Error], so that
// errors.Is(err, api.ErrSessionBusy) and errors.As(err, &apiErr) work.
type StatusError struct {
	// Status is the answer's HTTP status.
	Status int
	// Err is the API's error. For an answer that is not one (a proxy's
	// HTML page), its Code follows from the status (internal for a 5xx)
	// and its Message is the body's text, or the status text when the
	// body is empty.
	Err *api.Error
	// Body is the answer's body as it came, up to 1 MiB.
	Body []byte
}

// Error returns the API's message and the status: "… (HTTP 404)".
func (e *StatusError) Error() string { return fmt.Sprintf("%s (HTTP %d)", e.Err.Message, e.Status) }

// Unwrap returns Err.
func (e *StatusError) Unwrap() error { return e.Err }

// readError reads an error answer.
func readError(resp *http.Response) *StatusError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
	e := &StatusError{Status: resp.StatusCode, Body: body}
	var ans api.ErrorResponse
	if json.Unmarshal(body, &ans) == nil && ans.Error != nil && ans.Error.Code != "" {
		e.Err = ans.Error
		return e
	}
	msg := strings.TrimSpace(string(body))
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	e.Err = &api.Error{Code: codeOf(resp.StatusCode), Message: msg}
	return e
}

// codeOf is the code of an error answer that does not carry one.
func codeOf(status int) api.Code {
	switch {
	case status == http.StatusUnauthorized:
		return api.CodeUnauthorized
	case status == http.StatusNotFound:
		return api.CodeNotFound
	case status == http.StatusMethodNotAllowed:
		return api.CodeMethodNotAllowed
	case status == http.StatusRequestEntityTooLarge:
		return api.CodeBodyTooLarge
	case status >= 500:
		return api.CodeInternal
	}
	return api.CodeBadRequest
}

// PendingError is the answer to a direct call of a tool that needs
// approval for its input (HTTP 202): the call is parked until someone
// decides ([Client.Approve], [Client.Deny]); [Client.WaitCall] waits for
// its outcome.
type PendingError struct {
	api.CallPending
}

// Error says which call waits.
func (e *PendingError) Error() string {
	return fmt.Sprintf("call %s is waiting for approval", e.CallID)
}

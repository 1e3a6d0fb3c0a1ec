package gemini

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/agentsdk/agentsdk/model"
)

// exchange is what the transport saw of one request's answer, which the
// SDK's errors do not carry: the HTTP status, the headers (Retry-After),
// and the error that broke off the body.
type exchange struct {
	status  int
	header  http.Header
	readErr error
}

type exchangeKey struct{}

// transport records each answer on the exchange of its request's context.
// It also takes the body's read errors from the SDK, which would log them
// (through the standard log package) before passing them on, and ends the
// body there instead: Stream reports the error itself.
type transport struct{ base http.RoundTripper }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	x, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if err != nil || x == nil {
		return resp, err
	}
	x.status, x.header = resp.StatusCode, resp.Header
	resp.Body = &body{ReadCloser: resp.Body, x: x}
	return resp, nil
}

type body struct {
	io.ReadCloser
	x *exchange
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.x.readErr = err
		return n, io.EOF
	}
	return n, err
}

// classify makes a *model.Error of a failed call: the API's error with
// its status and message, or what the connection or the context did.
func classify(ctx context.Context, x *exchange, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		e := model.Unanswered(ctxErr)
		e.Message = ""
		return e
	}
	if x.readErr != nil { // the real cause of a stream cut short
		err = x.readErr
	}
	apiErr, ok := errors.AsType[genai.APIError](err)
	if !ok {
		if p, ok := errors.AsType[*genai.APIError](err); ok && p != nil {
			apiErr, ok = *p, true
		}
	}
	if !ok {
		return model.Unanswered(err)
	}
	// The answer's status, or the code of an error sent in the stream.
	status := x.status
	if status >= 200 && status < 300 || status == 0 {
		status = apiErr.Code
	}
	e := &model.Error{Status: status, Message: apiErr.Message, Err: err}
	e.Reason = model.ReasonForStatus(status, status == http.StatusBadRequest && tooLong(apiErr.Message))
	if e.Reason == model.ReasonInvalidRequest && keyInvalid(apiErr.Details) {
		e.Reason = model.ReasonAuth // Gemini answers a wrong key with 400
	}
	e.RetryAfter = retryAfter(x.header, apiErr.Details)
	return e
}

// tooLong reports whether an INVALID_ARGUMENT message says the request
// does not fit the model's window: "The input token count (1200293)
// exceeds the maximum number of tokens allowed (1048576)."
func tooLong(message string) bool {
	m := strings.ToLower(message)
	return strings.Contains(m, "input token count") && strings.Contains(m, "exceeds the maximum")
}

// keyInvalid reports whether the error's details hold a
// google.rpc.ErrorInfo with the reason API_KEY_INVALID.
func keyInvalid(details []map[string]any) bool {
	for _, d := range details {
		if d["@type"] == "type.googleapis.com/google.rpc.ErrorInfo" && d["reason"] == "API_KEY_INVALID" {
			return true
		}
	}
	return false
}

// retryAfter is the wait the answer asked for: its Retry-After header
// (seconds or an HTTP date), else a google.rpc.RetryInfo detail's
// retryDelay ("19s", "0.5s"); 0 when it said nothing.
func retryAfter(h http.Header, details []map[string]any) time.Duration {
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
			return time.Duration(s * float64(time.Second))
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(time.Until(t), 0)
		}
	}
	for _, d := range details {
		if d["@type"] != "type.googleapis.com/google.rpc.RetryInfo" {
			continue
		}
		if s, ok := d["retryDelay"].(string); ok {
			if dur, err := time.ParseDuration(s); err == nil && dur >= 0 {
				return dur
			}
		}
	}
	return 0
}

package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentsdk/agentsdk/model"
)

// codeContextLength is the error code of a request too long for the
// model's window.
const codeContextLength = "context_length_exceeded"

// failure is an error answer, as the server sent it: the SDK cannot read
// every compatible server's error body (it fails on {"error": "…"} and
// keeps no status then).
type failure struct {
	status int
	header http.Header
	body   []byte
}

// record is a middleware keeping an error answer in f.
func (f *failure) record(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	if err != nil || resp.StatusCode < 400 {
		return resp, err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	f.status, f.header, f.body = resp.StatusCode, resp.Header, b
	return resp, nil
}

// classify makes a failed call a *model.Error (see the package
// documentation); f is the error answer, if there was one.
func classify(err error, f *failure) error {
	apiErr, isAPI := errors.AsType[*sdk.Error](err)
	if isAPI || f.status != 0 {
		status, code, msg := f.status, "", ""
		if isAPI {
			status, code, msg = apiErr.StatusCode, apiErr.Code, apiErr.Message
		}
		if msg == "" {
			msg = bodyMessage(f.body)
		}
		if msg == "" {
			msg = http.StatusText(status)
		}
		e := &model.Error{Reason: model.ReasonForStatus(status, code == codeContextLength), Status: status, Message: msg, Err: err}
		if f.header != nil {
			e.RetryAfter = model.RetryAfter(f.header, time.Now())
		}
		return e
	}
	if streamErr, ok := errors.AsType[*ssestream.StreamError](err); ok {
		return eventError(streamErr)
	}
	return model.Unanswered(err)
}

// apiErrorBody is an error as the API and compatible servers write it.
type apiErrorBody struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"` // a string at OpenAI; some servers send the status
}

// eventError classifies an error event inside a stream that began 200 OK,
// by its code and type.
func eventError(streamErr *ssestream.StreamError) *model.Error {
	var body struct {
		Error apiErrorBody `json:"error"`
	}
	_ = json.Unmarshal(streamErr.Event.Data, &body)
	e := &model.Error{Reason: model.ReasonProvider, Message: body.Error.Message, Err: streamErr}
	if e.Message == "" {
		e.Message = strings.TrimSpace(string(streamErr.Event.Data))
	}
	code, _ := body.Error.Code.(string)
	switch {
	case code == codeContextLength:
		e.Reason = model.ReasonContextLength
	case code == "rate_limit_exceeded" || body.Error.Type == "requests" || body.Error.Type == "tokens":
		e.Reason = model.ReasonRateLimited
	case body.Error.Type == "server_error" || body.Error.Type == "service_unavailable":
		e.Reason = model.ReasonOverloaded
	}
	return e
}

// bodyMessage is the message of an error body the SDK could not read
// (a compatible server's {"error": "…"} or {"message": "…"}), or its text.
func bodyMessage(b []byte) string {
	var body struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(b, &body) == nil {
		var s string
		if json.Unmarshal(body.Error, &s) == nil && s != "" {
			return s
		}
		if body.Message != "" {
			return body.Message
		}
	}
	if len(b) > 1<<10 {
		b = b[:1<<10]
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), ""))
}

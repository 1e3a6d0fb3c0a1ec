package model

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Reason classifies why a model call failed, so that a client can act on
// it; the provider's own message is kept beside it ([Error.Message]). The
// values are the api package's failure codes of the same names.
type Reason string

// The reasons a model call fails.
const (
	// ReasonRateLimited: the provider refused for the rate (429).
	ReasonRateLimited Reason = "rate_limited"
	// ReasonOverloaded: the provider is overloaded or failing for now
	// (500, 502, 503, 504, Anthropic's 529, a reset connection).
	ReasonOverloaded Reason = "overloaded"
	// ReasonContextLength: the request does not fit the model's window.
	ReasonContextLength Reason = "context_length_exceeded"
	// ReasonAuth: the key is missing, wrong or lacks permission (401, 403).
	ReasonAuth Reason = "auth_failed"
	// ReasonInvalidRequest: the provider refused the request as malformed
	// (400, 404, 413, 422 other than the context length).
	ReasonInvalidRequest Reason = "invalid_request"
	// ReasonTimeout: the model did not answer within the model timeout.
	ReasonTimeout Reason = "timeout"
	// ReasonProvider: anything else the provider or the connection did.
	ReasonProvider Reason = "provider_error"
)

// Error is a failed model call, classified. Providers return it from
// Stream for every failure they can classify; [Classify] makes one of
// any error.
type Error struct {
	Reason Reason
	// Status is the HTTP status of the provider's answer; 0 when there
	// was none (a reset connection, a timeout).
	Status int
	// RetryAfter is how long the provider asked to wait before trying
	// again (Retry-After, retry-after-ms); 0 when it did not say.
	RetryAfter time.Duration
	// Message is the provider's own message, as it wrote it.
	Message string
	// Err is the underlying error (the SDK's), if any.
	Err error
}

// Error says what failed, with the provider's message.
func (e *Error) Error() string {
	switch {
	case e.Status != 0 && e.Message != "":
		return fmt.Sprintf("%s (%d): %s", e.Reason, e.Status, e.Message)
	case e.Message != "":
		return fmt.Sprintf("%s: %s", e.Reason, e.Message)
	case e.Err != nil:
		return fmt.Sprintf("%s: %v", e.Reason, e.Err)
	}
	return string(e.Reason)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether trying the same request again may succeed:
// rate limits and overloads.
func (e *Error) Retryable() bool {
	return e.Reason == ReasonRateLimited || e.Reason == ReasonOverloaded
}

// Classify returns err as an *Error: itself if it is one (or wraps one),
// else a provider_error carrying it.
func Classify(err error) *Error {
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	return &Error{Reason: ReasonProvider, Message: err.Error(), Err: err}
}

// ReasonForStatus classifies an HTTP status a provider answered with;
// contextLength says the provider's error body said the request is too
// long for the model (each provider words it its own way).
func ReasonForStatus(status int, contextLength bool) Reason {
	switch {
	case contextLength:
		return ReasonContextLength
	case status == 429:
		return ReasonRateLimited
	case status == 401 || status == 403:
		return ReasonAuth
	case status == 500 || status == 502 || status == 503 || status == 504 || status == 529:
		return ReasonOverloaded
	case status >= 400 && status < 500:
		return ReasonInvalidRequest
	}
	return ReasonProvider
}

// Unanswered classifies a call that failed without the provider's answer:
// the model timeout, a cancelled call, a reset or cut connection
// (overloaded, worth a retry); anything else is a provider_error.
func Unanswered(err error) *Error {
	e := &Error{Reason: ReasonProvider, Message: err.Error(), Err: err}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		e.Reason = ReasonTimeout
	case errors.Is(err, context.Canceled):
	case IsBrokenConnection(err):
		e.Reason = ReasonOverloaded
	}
	return e
}

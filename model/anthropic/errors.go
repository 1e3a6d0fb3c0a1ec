package anthropic

import (
	"errors"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/shared"

	"github.com/agentsdk/agentsdk/model"
)

// classify makes a failed call a *model.Error (see the package
// documentation).
func classify(err error) error {
	if apiErr, ok := errors.AsType[*sdk.Error](err); ok {
		return apiError(apiErr)
	}
	return model.Unanswered(err)
}

// apiError classifies an error the API answered: by its status, or by its
// type when it came as an event in a stream already under way.
func apiError(apiErr *sdk.Error) *model.Error {
	typ := apiErr.Type()
	msg := apiErr.Message
	if msg == "" {
		msg = strings.TrimSpace(apiErr.RawJSON())
	}
	status := apiErr.StatusCode
	if msg == "" {
		msg = http.StatusText(status)
	}
	contextLength := typ == shared.ErrorTypeInvalidRequestError && strings.Contains(strings.ToLower(msg), "prompt is too long")
	e := &model.Error{Message: msg, Err: apiErr}
	if status >= 400 {
		e.Reason, e.Status = model.ReasonForStatus(status, contextLength), status
	} else {
		e.Reason = reasonForType(typ, contextLength)
	}
	if apiErr.Response != nil {
		e.RetryAfter = model.RetryAfter(apiErr.Response.Header, time.Now())
	}
	return e
}

// reasonForType classifies an error event of a stream by its type.
func reasonForType(typ shared.ErrorType, contextLength bool) model.Reason {
	switch {
	case contextLength:
		return model.ReasonContextLength
	case typ == shared.ErrorTypeRateLimitError:
		return model.ReasonRateLimited
	case typ == shared.ErrorTypeOverloadedError || typ == shared.ErrorTypeAPIError || typ == shared.ErrorTypeTimeoutError:
		return model.ReasonOverloaded
	case typ == shared.ErrorTypeAuthenticationError || typ == shared.ErrorTypePermissionError:
		return model.ReasonAuth
	case typ == shared.ErrorTypeInvalidRequestError || typ == shared.ErrorTypeNotFoundError || typ == "request_too_large":
		return model.ReasonInvalidRequest
	}
	return model.ReasonProvider
}

package api

import (
	"errors"
	"fmt"
	"net/http"
	"sort"

	"github.com/agentsdk/agentsdk/tool"
)

// Code is the machine-readable kind of an [Error]. Each code has one HTTP
// status ([Code.Status]) and a description ([Code.Description]), from one
// table; the README's error table is checked against it.
type Code string

// Error codes.
const (
	CodeUnauthorized     Code = "unauthorized"
	CodeNotFound         Code = "not_found"
	CodeMethodNotAllowed Code = "method_not_allowed"
	CodeBadRequest       Code = "bad_request"
	CodeBodyTooLarge     Code = "body_too_large"
	CodeMalformedJSON    Code = "malformed_json"
	CodeBadQuery         Code = "bad_query"
	CodeBadCursor        Code = "bad_cursor"
	CodeUnknownTool      Code = "unknown_tool"
	CodeAgentTool        Code = "agent_tool"
	CodeInvalidInput     Code = "invalid_input"
	CodeSessionNotFound  Code = "session_not_found"
	CodeSessionBusy      Code = "session_busy"
	CodeNoRunningTurn    Code = "no_running_turn"
	CodeEmptyMessage     Code = "empty_message"
	CodeInvalidChannel   Code = "invalid_channel"
	CodeUnknownRuntime   Code = "unknown_runtime"
	CodeApprovalNotFound Code = "approval_not_found"
	CodeAlreadyResolved  Code = "already_resolved"
	CodeApprovalExpired  Code = "approval_expired"
	CodeArtifactNotFound Code = "artifact_not_found"
	CodeBadName          Code = "bad_name"
	CodeInternal         Code = "internal"

	CodeBadIdempotencyKey     Code = "bad_idempotency_key"
	CodeIdempotencyKeyReused  Code = "idempotency_key_reused"
	CodeIdempotencyInProgress Code = "idempotency_in_progress"
	CodeQuotaExceeded         Code = "quota_exceeded"

	CodeRequestTimeout Code = "request_timeout"
	CodeOverCapacity   Code = "over_capacity"
	CodeUnhealthy      Code = "unhealthy"
	CodeForbidden      Code = "forbidden"

	CodeToolBusy      Code = "tool_busy"
	CodeToolOverrun   Code = "tool_overrun"
	CodeInvalidMode   Code = "invalid_mode"
	CodeLeaseLost     Code = "lease_lost"
	CodeInvalidReport Code = "invalid_report"
	CodeOverBudget    Code = "budget_exceeded"
	CodeMessageTooBig Code = "message_too_large"

	CodeScheduleNotFound Code = "schedule_not_found"
	CodeScheduleBusy     Code = "schedule_busy"
	CodeNoJobs           Code = "no_jobs"
	CodeEvalNotFound     Code = "eval_not_found"
	CodeInvalidEval      Code = "invalid_eval"

	CodeKeyNotFound Code = "key_not_found"
	CodeInvalidKey  Code = "invalid_key"

	CodeRequesterCannotApprove Code = "requester_cannot_approve"
	CodeNotAnApprover          Code = "not_an_approver"
	CodeAlreadyApprovedByYou   Code = "already_approved_by_you"
	CodeOnBehalfNotAllowed     Code = "on_behalf_not_allowed"
	CodeEditNotAllowed         Code = "edit_not_allowed"
)

type codeInfo struct {
	status int
	about  string
}

// codes is the one table of codes, statuses and meanings.
var codes = map[Code]codeInfo{
	CodeUnauthorized:     {http.StatusUnauthorized, "missing or wrong bearer token, or an API key that is unknown, revoked or expired"},
	CodeNotFound:         {http.StatusNotFound, "no such endpoint"},
	CodeMethodNotAllowed: {http.StatusMethodNotAllowed, "the endpoint exists for other methods (see Allow)"},
	CodeBadRequest:       {http.StatusBadRequest, "the request body could not be read"},
	CodeBodyTooLarge:     {http.StatusRequestEntityTooLarge, "the request body is over the host's limit"},
	CodeMalformedJSON:    {http.StatusBadRequest, "the request body is not the JSON object the endpoint takes"},
	CodeBadQuery:         {http.StatusBadRequest, "a query parameter (or Last-Event-ID) is out of range"},
	CodeBadCursor:        {http.StatusBadRequest, "a cursor the host did not make"},
	CodeUnknownTool:      {http.StatusNotFound, "no tool has that name (available lists them)"},
	CodeAgentTool:        {http.StatusBadRequest, "an agent tool: it runs only inside a model turn"},
	CodeInvalidInput:     {http.StatusBadRequest, "the input does not match the tool's schema (violations lists each path)"},
	CodeSessionNotFound:  {http.StatusNotFound, "no session has that id"},
	CodeSessionBusy:      {http.StatusConflict, "another turn is running in the session"},
	CodeNoRunningTurn:    {http.StatusConflict, "cancel found no running turn"},
	CodeEmptyMessage:     {http.StatusBadRequest, "a message with no text"},
	CodeInvalidChannel:   {http.StatusBadRequest, "a channel name that is not 1 to 64 letters, digits, '_' or '-'"},
	CodeUnknownRuntime:   {http.StatusBadRequest, "a session's runtime that the host does not run: native, or a harness of agent.yaml's harnesses (the message lists them)"},
	CodeApprovalNotFound: {http.StatusNotFound, "no gated call has that id (in that session)"},
	CodeAlreadyResolved:  {http.StatusConflict, "someone decided first, or its turn was cancelled (approval holds the call as it stands)"},
	CodeApprovalExpired:  {http.StatusGone, "the call expired before anyone decided"},
	CodeArtifactNotFound: {http.StatusNotFound, "the session has no artifact of that name"},
	CodeBadName:          {http.StatusBadRequest, "an artifact name that is not a clean relative path"},
	CodeInternal:         {http.StatusInternalServerError, "the host failed; its log says why"},

	CodeBadIdempotencyKey:     {http.StatusBadRequest, "an Idempotency-Key that is not 1 to 255 printable ASCII characters"},
	CodeIdempotencyKeyReused:  {http.StatusUnprocessableEntity, "the Idempotency-Key was used with another request (method, path, body, or a stream asked for by Accept: text/event-stream or not)"},
	CodeIdempotencyInProgress: {http.StatusConflict, "the first request with this Idempotency-Key is still running; retry later"},
	CodeQuotaExceeded:         {http.StatusTooManyRequests, "the principal holds as many open sessions, parked calls or running eval batches as the host allows"},

	CodeRequestTimeout: {http.StatusRequestTimeout, "the request body did not arrive within the host's body timeout"},
	CodeOverCapacity:   {http.StatusServiceUnavailable, "the host is at its limit of connections, event streams or bodies read without its token; retry after Retry-After"},
	CodeUnhealthy:      {http.StatusServiceUnavailable, "/healthz, /readyz: the host cannot reach its store or open a file in its state directory (the message says which); /readyz also while it shuts down"},
	CodeForbidden:      {http.StatusForbidden, "the MCP endpoint refuses the request's Origin, or a non-loopback Host on a loopback connection; or a playground request changing state without its CSRF token; or the caller's roles lack the route's permission, or the tool's callers (the message names what is missing)"},

	CodeToolBusy:      {http.StatusTooManyRequests, "the tool is running as many calls as it allows (MaxConcurrent, Exclusive) and none ended within its BusyWait; retry later"},
	CodeToolOverrun:   {http.StatusServiceUnavailable, "the tool has as many handlers still running past their timeout as the host allows (--max-overrun); its direct calls are refused until one returns"},
	CodeInvalidMode:   {http.StatusBadRequest, "a session mode that is not local or cloud"},
	CodeLeaseLost:     {http.StatusConflict, "the runner no longer holds the turn (it ended, or its lease ran out)"},
	CodeInvalidReport: {http.StatusBadRequest, "a runner's report with an event it may not write, or one that does not decode"},
	CodeOverBudget:    {http.StatusTooManyRequests, "a cloud turn's next model call would pass a usage limit of agent.yaml's limits: (the runner ends the turn failed, budget_exceeded)"},
	CodeMessageTooBig: {http.StatusRequestEntityTooLarge, "a message over the host's limit (--max-message-bytes, 1 MiB by default)"},

	CodeScheduleNotFound:       {http.StatusNotFound, "the agent has no schedule of that name"},
	CodeScheduleBusy:           {http.StatusConflict, "the schedule's previous run is still going and its overlap policy is skip"},
	CodeEvalNotFound:           {http.StatusNotFound, "no eval batch has that id"},
	CodeInvalidEval:            {http.StatusBadRequest, "an eval with no cases, a case with neither message nor conversation, or a check that is not exactly one kind (invalid lists each)"},
	CodeKeyNotFound:            {http.StatusNotFound, "no API key has that id"},
	CodeInvalidKey:             {http.StatusBadRequest, "a key request without a name, with an unknown role, or with an expiry that is not a positive duration (90d, 720h)"},
	CodeRequesterCannotApprove: {http.StatusForbidden, "four-eyes: the tool's approver policy says NotRequester, and the decider started the call or opened its session"},
	CodeNotAnApprover:          {http.StatusForbidden, "the tool's approver policy names the roles that may decide, and the decider has none of them (a Slack user: none mapped by agent.yaml's auth.slack)"},
	CodeAlreadyApprovedByYou:   {http.StatusConflict, "the call needs approvals from several principals (its quorum) and this one has approved it already"},
	CodeOnBehalfNotAllowed:     {http.StatusForbidden, "a decision saying by or onBehalfOf from a principal that is not an admin: the decider is the request's principal (an admin names another with onBehalfOf; its by is malformed_json)"},
	CodeEditNotAllowed:         {http.StatusForbidden, "an approval with a changed input for a tool whose approver policy says NoEdit"},
	CodeNoJobs:                 {http.StatusServiceUnavailable, "the host's store runs no durable jobs (the in-memory store): schedules, reminders and evals need SQLite or PostgreSQL"},
}

// Status returns the code's HTTP status; 500 for a code not in the table.
func (c Code) Status() int {
	if i, ok := codes[c]; ok {
		return i.status
	}
	return http.StatusInternalServerError
}

// Description says in a few words when the code is returned.
func (c Code) Description() string { return codes[c].about }

// Codes lists every error code, sorted.
func Codes() []Code {
	out := make([]Code, 0, len(codes))
	for c := range codes {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Error is the one error type of the API: a code, a message for people,
// and details for some codes. Hosts return it for every refusal; the HTTP
// server writes it as {"ok": false, "error": {…}} with the code's status;
// the client returns it for an error answer. errors.Is matches errors by
// code: errors.Is(err, api.ErrSessionBusy).
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// Available lists the tools, for unknown_tool.
	Available []string `json:"available,omitempty"`
	// Violations lists what is wrong with the input, for invalid_input.
	Violations []tool.Violation `json:"violations,omitempty"`
	// Approval is the first decision, for already_resolved.
	Approval *Approval `json:"approval,omitempty"`
	// CallID names the call the error is about, where there is one.
	CallID string `json:"callId,omitempty"`

	err error // the cause, for errors.As
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.err }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Status returns the HTTP status of the error's code.
func (e *Error) Status() int { return e.Code.Status() }

// Errorf returns an *Error with code and a message formatted as
// fmt.Errorf does; an error wrapped with %w is its cause.
func Errorf(code Code, format string, a ...any) *Error {
	err := fmt.Errorf(format, a...)
	return &Error{Code: code, Message: err.Error(), err: errors.Unwrap(err)}
}

// Wrap returns err as an *Error with code, keeping err as the cause and
// its text as the message.
func Wrap(code Code, err error) *Error {
	return &Error{Code: code, Message: err.Error(), err: err}
}

// Sentinels for errors.Is, one per code a caller branches on. Each matches
// any *Error with its code.
var (
	ErrSessionNotFound  = &Error{Code: CodeSessionNotFound, Message: "session not found"}
	ErrSessionBusy      = &Error{Code: CodeSessionBusy, Message: "another turn is running in this session"}
	ErrNoRunningTurn    = &Error{Code: CodeNoRunningTurn, Message: "no turn is running in this session"}
	ErrEmptyMessage     = &Error{Code: CodeEmptyMessage, Message: `send {"message": "…"} with some text`}
	ErrInvalidChannel   = &Error{Code: CodeInvalidChannel, Message: "invalid channel: use 1 to 64 letters, digits, '_' or '-'"}
	ErrApprovalNotFound = &Error{Code: CodeApprovalNotFound, Message: "no call waiting for approval has that id"}
	ErrAlreadyResolved  = &Error{Code: CodeAlreadyResolved, Message: "the call was already decided"}
	ErrApprovalExpired  = &Error{Code: CodeApprovalExpired, Message: "the approval expired"}
	ErrArtifactNotFound = &Error{Code: CodeArtifactNotFound, Message: "artifact not found"}
	ErrBadCursor        = &Error{Code: CodeBadCursor, Message: "invalid cursor"}
	ErrOverBudget       = &Error{Code: CodeOverBudget, Message: "a usage limit was reached"}
	ErrMessageTooBig    = &Error{Code: CodeMessageTooBig, Message: "the message is over the host's limit (--max-message-bytes)"}

	ErrIdempotencyKeyReused  = &Error{Code: CodeIdempotencyKeyReused, Message: "this Idempotency-Key was used with a different request"}
	ErrIdempotencyInProgress = &Error{Code: CodeIdempotencyInProgress, Message: "the first request with this Idempotency-Key is still running"}

	ErrOverCapacity = &Error{Code: CodeOverCapacity, Message: "the host is at its limit of connections or event streams"}

	ErrRequesterCannotApprove = &Error{Code: CodeRequesterCannotApprove, Message: "the requester may not decide this call"}
	ErrNotAnApprover          = &Error{Code: CodeNotAnApprover, Message: "the decider has none of the roles that may decide this call"}
	ErrAlreadyApprovedByYou   = &Error{Code: CodeAlreadyApprovedByYou, Message: "you approved this call already"}
	ErrOnBehalfNotAllowed     = &Error{Code: CodeOnBehalfNotAllowed, Message: "only an admin may decide on behalf of someone"}
	ErrEditNotAllowed         = &Error{Code: CodeEditNotAllowed, Message: "the tool's approver policy forbids edits"}
)

// AsError returns err as an *Error: itself if it is one (or wraps one),
// the code of a tool's typed error (unknown tool, agent tool, invalid
// input), body_too_large for an *http.MaxBytesError, and internal for
// anything else.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var (
		e       *Error
		unknown *tool.UnknownToolError
		agent   *tool.AgentToolError
		invalid *tool.InputError
		tooBig  *http.MaxBytesError
	)
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &unknown):
		available := unknown.Available
		if available == nil {
			available = []string{}
		}
		return &Error{Code: CodeUnknownTool, Message: err.Error(), Available: available, err: err}
	case errors.As(err, &agent):
		return &Error{Code: CodeAgentTool, Message: err.Error(), err: err}
	case errors.As(err, &invalid):
		return &Error{Code: CodeInvalidInput, Message: err.Error(), Violations: invalid.Violations, err: err}
	case errors.As(err, &tooBig):
		return &Error{Code: CodeBodyTooLarge, Message: fmt.Sprintf("request body is larger than %d bytes", tooBig.Limit), err: err}
	}
	return Wrap(CodeInternal, err)
}

package api

import (
	"encoding/json"
	"time"
)

// SessionCreated opens a session's stream.
type SessionCreated struct {
	Channel   string `json:"channel"`
	Mode      Mode   `json:"mode"`
	Principal string `json:"principal"`
	Runtime   string `json:"runtime,omitempty"` // "" for native
}

// SessionTagged records a tag a tool put on its session (call.Host.Otel).
type SessionTagged struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// TurnStarted begins a turn: a model turn, or a direct call made in the
// session (then Tool names the tool).
type TurnStarted struct {
	Kind TurnKind `json:"kind"`
	Tool string   `json:"tool,omitempty"`
}

// WorkspaceMoved says that a turn runs on another host than the session's
// last one (the last host died, or another took the session over): the
// session's workspace directory there was made afresh, with the agent tools
// in it; files a tool wrote into the old one stayed behind. The session's
// events, KV entries, files (on a shared store) and artifacts all move
// with it.
type WorkspaceMoved struct {
	From string `json:"from"` // the last host: its name and state directory
	To   string `json:"to"`   // this one
}

// MessageDelta is a piece of the model's answer as it streams.
type MessageDelta struct {
	Text string `json:"text"`
}

// Roles of a [Message].
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is a whole message: the user's, or the model's answer once
// streamed.
type Message struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// ActionsRequested announces the tool calls of one model answer, before
// they run.
type ActionsRequested struct {
	Actions []Action `json:"actions"`
}

// Action is one tool call the model asked for.
type Action struct {
	// CallID is the host's id of the call: tool_<name>_<random>.
	CallID string `json:"callId"`
	// ModelCallID is the model's id of the call.
	ModelCallID string          `json:"modelCallId"`
	Tool        string          `json:"tool"`
	Input       json.RawMessage `json:"input,omitempty"`
	// InputText holds input that is not valid JSON, as the model sent it.
	InputText string `json:"inputText,omitempty"`
	// Title, Kind and Locations describe a harness's own tool call (a
	// harness turn): what it does as the harness says it ("Run `go
	// test`"), its ACP tool kind (read, edit, execute, …) and the files it
	// touches.
	Title     string   `json:"title,omitempty"`
	Kind      string   `json:"kind,omitempty"`
	Locations []string `json:"locations,omitempty"`
}

// ApprovalRequested announces a call parked until a person decides.
// (Fields in alphabetical order: the wire order.)
type ApprovalRequested struct {
	CallID      string          `json:"callId"`
	ExpiresAt   time.Time       `json:"expiresAt"`
	HowToAnswer HowToAnswer     `json:"howToAnswer"`
	Input       json.RawMessage `json:"input"`
	ModelCallID string          `json:"modelCallId"`
	RequestedBy string          `json:"requestedBy"`
	Tool        string          `json:"tool"`
}

// HowToAnswer tells a person how to decide a parked call.
type HowToAnswer struct {
	CLI  string `json:"cli"`
	HTTP string `json:"http"`
}

// ApprovalResolved records a decision on a parked call, or its expiry.
// (Fields in alphabetical order: the wire order.)
//
// Under an approver policy with a quorum, Approvals and Quorum say how
// many approved (the last of them By) of how many needed; they are absent
// otherwise. When an approver changed the input, Input is the input that
// runs and Changes how it differs from the input asked for (the one
// action.approval_requested carries).
type ApprovalResolved struct {
	At     time.Time      `json:"at"`
	By     string         `json:"by"`
	CallID string         `json:"callId"`
	Reason string         `json:"reason"`
	Status ApprovalStatus `json:"status"`
	Tool   string         `json:"tool"`

	Approvals int             `json:"approvals,omitempty"`
	Quorum    int             `json:"quorum,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Changes   []InputChange   `json:"changes,omitempty"`
}

// ApprovalVoted records one approval of a call that needs several
// (its tool's ApprovalPolicy.Quorum) before the quorum is reached: "2 of
// 3". The approval that reaches it is action.approval_resolved. Input and
// Changes are there when this approval changed the input (which drops the
// approvals before it: they approved another input).
type ApprovalVoted struct {
	At        time.Time       `json:"at"`
	By        string          `json:"by"`
	CallID    string          `json:"callId"`
	Tool      string          `json:"tool"`
	Approvals int             `json:"approvals"`
	Quorum    int             `json:"quorum"`
	Input     json.RawMessage `json:"input,omitempty"`
	Changes   []InputChange   `json:"changes,omitempty"`
}

// ActionProgress is a running call's progress, as its tool reports it
// (call.Progress). Updates are coalesced: a tool reporting faster than the
// host records gets its latest state recorded at a bounded rate. Done and
// Total are in the tool's own units; Total is 0 when unknown.
type ActionProgress struct {
	CallID  string  `json:"callId"`
	Tool    string  `json:"tool"`
	Done    float64 `json:"done"`
	Total   float64 `json:"total,omitempty"`
	Message string  `json:"message,omitempty"`
}

// ActionOutput is live output of a running call: text a Go tool writes
// with call.Output, or the lines an agent tool writes to stderr. Writes are
// batched at a bounded rate, and what a call records is capped; Truncated
// marks the last record of a call that went over the cap.
type ActionOutput struct {
	CallID    string `json:"callId"`
	Tool      string `json:"tool"`
	Text      string `json:"text"`
	Truncated bool   `json:"truncated,omitempty"`
}

// ActionResult is a tool call's outcome.
type ActionResult struct {
	CallID      string          `json:"callId"`
	ModelCallID string          `json:"modelCallId,omitempty"`
	Tool        string          `json:"tool"`
	IsError     bool            `json:"isError"`
	Result      json.RawMessage `json:"result"`
	DurationMs  int64           `json:"durationMs"`
	// Direct marks a call made directly (HTTP, CLI, Go), not by the model.
	Direct bool `json:"direct,omitempty"`
	// Stubbed marks a call an eval's stub answered: the tool's handler
	// did not run (see EvalStub).
	Stubbed bool `json:"stubbed,omitempty"`
}

// ArtifactCreated announces a file a tool stored as a session artifact.
// (Fields in alphabetical order: the wire order.)
type ArtifactCreated struct {
	CallID      string `json:"callId"`
	ContentType string `json:"contentType"`
	Name        string `json:"name"`
	SHA256      string `json:"sha256"`
	Size        int64  `json:"size"`
}

// TurnCompleted ends a turn that succeeded. Steps counts a model turn's
// model calls; a direct call's turn has none. Usage is what the turn's
// model calls consumed (absent for a direct call's turn).
type TurnCompleted struct {
	Steps *int   `json:"steps,omitempty"`
	Usage *Usage `json:"usage,omitempty"`
}

// TurnFailed ends a turn that failed. Code classifies why (a
// [FailureCode]: rate_limited, budget_exceeded, …) so that a client can
// act on it; Reason says it in words, with the provider's own message
// when the provider failed. (Fields in alphabetical order: the wire
// order.)
type TurnFailed struct {
	Code   FailureCode `json:"code,omitempty"`
	Reason string      `json:"reason"`
	Steps  *int        `json:"steps,omitempty"`
	Usage  *Usage      `json:"usage,omitempty"`
}

// FailureCode classifies a failed turn ([TurnFailed.Code]).
type FailureCode string

// Why a turn fails. The first seven are a model call's failures, as the
// provider answered (model.Reason has the same values).
const (
	FailureRateLimited    FailureCode = "rate_limited"
	FailureOverloaded     FailureCode = "overloaded"
	FailureContextLength  FailureCode = "context_length_exceeded"
	FailureAuthFailed     FailureCode = "auth_failed"
	FailureInvalidRequest FailureCode = "invalid_request"
	FailureTimeout        FailureCode = "timeout"
	FailureProviderError  FailureCode = "provider_error"
	FailureBudgetExceeded FailureCode = "budget_exceeded"
	FailureStepLimit      FailureCode = "step_limit"
	FailureCancelled      FailureCode = "cancelled"
	FailureInterrupted    FailureCode = "interrupted"
	FailureNotConfigured  FailureCode = "model_not_configured"
	FailureResumeLimit    FailureCode = "resume_limit"
	FailureHarness        FailureCode = "harness_failed"
	FailureInternal       FailureCode = "internal"
)

// FailureCodes lists every failure code with what it means and what a
// client can do, in the order above (README's table is made from it).
var FailureCodes = []struct {
	Code    FailureCode
	Meaning string
}{
	{FailureRateLimited, "the provider refused for the rate (429), still after `modelRetries` retries: try again later"},
	{FailureOverloaded, "the provider was overloaded or failing (500, 502, 503, 504, 529, reset connections), still after the retries"},
	{FailureContextLength, "the conversation does not fit the model's context window, even compacted (the provider said so, or the host counted it before calling)"},
	{FailureAuthFailed, "the provider refused the key (401, 403): not retried"},
	{FailureInvalidRequest, "the provider refused the request as malformed (400, 404, 413, 422): not retried"},
	{FailureTimeout, "the model did not answer within `modelTimeout` (retries included)"},
	{FailureProviderError, "anything else the provider or the connection did"},
	{FailureBudgetExceeded, "a limit of `limits:` in agent.yaml was reached, and not raised (`onExceed: fail`, or the raise was denied or expired)"},
	{FailureStepLimit, "the model was still calling tools after `maxSteps` model calls"},
	{FailureCancelled, "the turn was cancelled (`POST …/cancel`, `agent-sdk cancel`)"},
	{FailureInterrupted, "its host shut down or died while it ran"},
	{FailureNotConfigured, "the agent has no model (`model:` in agent.yaml, or `--model`)"},
	{FailureResumeLimit, "its host died while it ran more often than `maxResumes` allows (each time it was resumed from what was stored): not resumed again"},
	{FailureHarness, "the turn's harness (Claude Code, Codex, Gemini CLI, an ACP agent) could not be started, exited or failed; the reason ends with the tail of its stderr"},
	{FailureInternal, "the host could not run it (its store failed, its channel's onStart failed, …)"},
}

// Usage is what model calls consumed: one call's, a turn's, a session's or
// an aggregate's. Tokens are as the provider reported them, normalised
// (model.Usage): InputTokens is full-price input, without the cached part;
// OutputTokens includes ReasoningTokens. CostMicroUsd is the cost in
// millionths of a dollar, summed as integers, and CostUsd the same in
// dollars; both are null when a call's model has no price (pricing: in
// agent.yaml), never a made-up figure. (Fields in alphabetical order: the
// wire order.)
type Usage struct {
	CacheReadTokens  int64    `json:"cacheReadTokens"`
	CacheWriteTokens int64    `json:"cacheWriteTokens"`
	CostMicroUsd     *int64   `json:"costMicroUsd"`
	CostUsd          *float64 `json:"costUsd"`
	InputTokens      int64    `json:"inputTokens"`
	ModelCalls       int64    `json:"modelCalls"`
	OutputTokens     int64    `json:"outputTokens"`
	ReasoningTokens  int64    `json:"reasoningTokens"`
}

// ModelUsage records one model call's usage, after the call, on the turn's
// stream: the model that answered, the tokens, the cost (null without a
// price) and how long the call took. (Fields in alphabetical order: the
// wire order.)
type ModelUsage struct {
	CacheReadTokens  int64  `json:"cacheReadTokens"`
	CacheWriteTokens int64  `json:"cacheWriteTokens"`
	CostMicroUsd     *int64 `json:"costMicroUsd"`
	DurationMs       int64  `json:"durationMs"`
	InputTokens      int64  `json:"inputTokens"`
	Model            string `json:"model"`
	OutputTokens     int64  `json:"outputTokens"`
	Provider         string `json:"provider"`
	// Purpose is why the call was made when it was not for the turn's
	// answer: "compaction" for a summary of the conversation's older part
	// (context.compacted).
	Purpose         string `json:"purpose,omitempty"`
	ReasoningTokens int64  `json:"reasoningTokens"`
	// Reported is false when the provider said nothing of usage (some
	// OpenAI-compatible servers): the call counts, its tokens are 0.
	Reported bool `json:"reported"`
	// RequestBytes is the size of what the call sent (turnloop's
	// RequestBytes): with the input tokens reported, it calibrates the
	// count of the session's next requests.
	RequestBytes int64  `json:"requestBytes,omitempty"`
	StopReason   string `json:"stopReason,omitempty"`
}

// ContextCompacted records that the older part of a session's
// conversation was summarised: from now on the model sees Summary in
// place of everything up to ThroughSeq, then what came after it
// verbatim. Tags are the session's tags at the time (so that a turn can
// read the session from here). TokensBefore and TokensAfter are the
// counts of the next request without and with the summary; Trigger is
// "auto" (a model call's count passed the threshold) or "manual" (POST
// /v1/session/{id}/compact). (Fields in alphabetical order: the wire
// order.)
type ContextCompacted struct {
	Summary      string            `json:"summary"`
	Tags         map[string]string `json:"tags,omitempty"`
	ThroughSeq   int64             `json:"throughSeq"`
	TokensAfter  int64             `json:"tokensAfter"`
	TokensBefore int64             `json:"tokensBefore"`
	Trigger      string            `json:"trigger"`
}

// ContextCleared records that tool results up to ThroughSeq, older than
// the last turns and larger than the clearing threshold, are replaced in
// what the model sees by a short stand-in (the stream keeps them whole;
// read_result reads one again). Results is how many were cleared.
// TokensBefore and TokensAfter are the counts of the next request
// without and with the stand-ins.
// (Fields in alphabetical order: the wire order.)
type ContextCleared struct {
	// MinBytes: only results larger than this are cleared.
	MinBytes     int   `json:"minBytes"`
	Results      int   `json:"results"`
	ThroughSeq   int64 `json:"throughSeq"`
	TokensAfter  int64 `json:"tokensAfter"`
	TokensBefore int64 `json:"tokensBefore"`
}

// TurnResumed records that a model turn whose host died is continued by
// another (or the same, restarted) host: From is the dead holder's home,
// Attempt counts the resumptions of this turn from 1. Calls that were
// running when it died have their "interrupted by host restart; not
// retried" results before it; an answer that was streaming is asked
// again.
type TurnResumed struct {
	Attempt int    `json:"attempt"`
	From    string `json:"from,omitempty"`
}

// EventKind returns [KindContextCompacted].
func (ContextCompacted) EventKind() Kind { return KindContextCompacted }

// EventKind returns [KindContextCleared].
func (ContextCleared) EventKind() Kind { return KindContextCleared }

// EventKind returns [KindTurnResumed].
func (TurnResumed) EventKind() Kind { return KindTurnResumed }

// ModelRetry records a model call that failed in a way worth retrying (a
// rate limit, an overload) and is tried again after WaitMs. (Fields in
// alphabetical order: the wire order.)
type ModelRetry struct {
	Attempt int         `json:"attempt"` // 1 for the first retry
	Code    FailureCode `json:"code"`
	Message string      `json:"message"` // the provider's
	Status  int         `json:"status,omitempty"`
	WaitMs  int64       `json:"waitMs"`
}

// ReasoningDelta is a piece of the model's reasoning as it streams. It is
// shown to people (folded), never fed to tools.
type ReasoningDelta struct {
	Text string `json:"text"`
}

// Reasoning is a complete block of the model's reasoning, recorded before
// the answer it led to; Signature and Redacted are the provider's seal and
// encrypted data, sent back unchanged in later calls of the conversation.
// (Fields in alphabetical order: the wire order.)
type Reasoning struct {
	Redacted  string `json:"redacted,omitempty"`
	Signature string `json:"signature,omitempty"`
	Text      string `json:"text"`
}

// EventKind returns [KindModelUsage].
func (ModelUsage) EventKind() Kind { return KindModelUsage }

// EventKind returns [KindModelRetry].
func (ModelRetry) EventKind() Kind { return KindModelRetry }

// EventKind returns [KindReasoningDelta].
func (ReasoningDelta) EventKind() Kind { return KindReasoningDelta }

// EventKind returns [KindReasoning].
func (Reasoning) EventKind() Kind { return KindReasoning }

// EventKind returns [KindSessionCreated].
func (SessionCreated) EventKind() Kind { return KindSessionCreated }

// EventKind returns [KindSessionTagged].
func (SessionTagged) EventKind() Kind { return KindSessionTagged }

// EventKind returns [KindTurnStarted].
func (TurnStarted) EventKind() Kind { return KindTurnStarted }

// EventKind returns [KindWorkspaceMoved].
func (WorkspaceMoved) EventKind() Kind { return KindWorkspaceMoved }

// EventKind returns [KindMessageDelta].
func (MessageDelta) EventKind() Kind { return KindMessageDelta }

// EventKind returns [KindMessage].
func (Message) EventKind() Kind { return KindMessage }

// EventKind returns [KindActionsRequested].
func (ActionsRequested) EventKind() Kind { return KindActionsRequested }

// EventKind returns [KindApprovalRequested].
func (ApprovalRequested) EventKind() Kind { return KindApprovalRequested }

// EventKind returns [KindApprovalResolved].
func (ApprovalResolved) EventKind() Kind { return KindApprovalResolved }

// EventKind returns [KindApprovalVoted].
func (ApprovalVoted) EventKind() Kind { return KindApprovalVoted }

// EventKind returns [KindActionResult].
func (ActionResult) EventKind() Kind { return KindActionResult }

// EventKind returns [KindActionProgress].
func (ActionProgress) EventKind() Kind { return KindActionProgress }

// EventKind returns [KindActionOutput].
func (ActionOutput) EventKind() Kind { return KindActionOutput }

// EventKind returns [KindArtifactCreated].
func (ArtifactCreated) EventKind() Kind { return KindArtifactCreated }

// EventKind returns [KindTurnCompleted].
func (TurnCompleted) EventKind() Kind { return KindTurnCompleted }

// EventKind returns [KindTurnFailed].
func (TurnFailed) EventKind() Kind { return KindTurnFailed }

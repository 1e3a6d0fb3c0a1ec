package api

import "time"

// EvalCase is one case of an eval: what is said to the agent, and what is
// checked of what happened. The eval file (YAML) is a list of them.
type EvalCase struct {
	// Name identifies the case in its batch (default: case-<n>).
	Name string `json:"name,omitempty" yaml:"name"`
	// Message is the user's message; Conversation, several in turn (each
	// sent once the previous turn has ended). One of the two.
	Message      string   `json:"message,omitempty" yaml:"message"`
	Conversation []string `json:"conversation,omitempty" yaml:"conversation"`
	// Checks are checked against the session's trajectory once its last
	// turn has ended.
	Checks []EvalCheck `json:"checks" yaml:"checks"`
	// Scorer names a tool of the agent's own that scores the case: it is
	// called with {"case": …, "events": […]} and returns {"pass": bool,
	// "score": 0..1, "reason": "…"}; its verdict is one more check.
	Scorer string `json:"scorer,omitempty" yaml:"scorer"`
	// Stubs answer the calls of the tools they name instead of the tools'
	// handlers, by tool: the first stub of the tool whose Match the
	// call's input holds answers it. A tool with stubs never runs in the
	// case; a call of it that no stub matches is a tool error the model
	// reads, and fails the case. A case's stubs of a tool replace the
	// eval's (EvalRunRequest.Stubs) of that tool.
	Stubs map[string][]EvalStub `json:"stubs,omitempty" yaml:"stubs"`
	// Replay, if set, answers the case's model calls in turn instead of
	// the host's model: the n-th call gets the n-th answer, and a call
	// past the last fails the case's turn. agent-sdk session export
	// writes it from a session's recorded answers.
	Replay []EvalAnswer `json:"replay,omitempty" yaml:"replay"`
}

// EvalStub answers the calls of a tool whose input matches it, without
// running the tool. Exactly one of Result, Error and Sequence is set.
type EvalStub struct {
	// Match is a subset of the call's input (compared as JSON, as a
	// called check's args): the stub answers the calls whose input holds
	// these fields with these values. Absent: every call.
	Match map[string]any `json:"match,omitempty" yaml:"match"`
	// Result is the call's result (any JSON value but null).
	Result any `json:"result,omitempty" yaml:"result"`
	// Error makes the call fail with this message (an isError result).
	Error string `json:"error,omitempty" yaml:"error"`
	// Sequence answers the calls the stub matches in turn: the first
	// call gets the first answer, the second the second, and every call
	// past the end the last (end it with an error to make extra calls
	// fail).
	Sequence []EvalStubAnswer `json:"sequence,omitempty" yaml:"sequence"`
}

// EvalStubAnswer is one answer of a stub's sequence: a Result or an
// Error.
type EvalStubAnswer struct {
	Result any    `json:"result,omitempty" yaml:"result"`
	Error  string `json:"error,omitempty" yaml:"error"`
}

// EvalAnswer is one recorded model answer of a case's Replay: its text
// and the tool calls it made.
type EvalAnswer struct {
	Text  string         `json:"text,omitempty" yaml:"text"`
	Calls []EvalToolCall `json:"calls,omitempty" yaml:"calls"`
}

// EvalToolCall is a tool call of a replayed answer.
type EvalToolCall struct {
	Tool  string         `json:"tool" yaml:"tool"`
	Input map[string]any `json:"input,omitempty" yaml:"input"`
}

// EvalCheck is one check of a case. Exactly one of its fields is set.
type EvalCheck struct {
	// Called: the tool was called; with Args, by a call whose input holds
	// these fields with these values (a subset, compared as JSON).
	Called string `json:"called,omitempty" yaml:"called"`
	// Scorer marks the check the case's scorer tool made (set by the
	// host; not written in eval files).
	Scorer string `json:"scorer,omitempty" yaml:"-"`
	// Stub marks the check the case's stubs made: every call of a
	// stubbed tool matched a stub (set by the host, only when one did
	// not; not written in eval files).
	Stub string         `json:"stub,omitempty" yaml:"-"`
	Args map[string]any `json:"args,omitempty" yaml:"args"`
	// Result narrows a called check to a call whose result holds it: the
	// fields with these values of an object result (a subset), or the
	// value itself (a string, a number, a list).
	Result any `json:"result,omitempty" yaml:"result"`
	// NotCalled: the tool was not called.
	NotCalled string `json:"notCalled,omitempty" yaml:"notCalled"`
	// Contains: the final answer contains this text (case-sensitive).
	Contains string `json:"contains,omitempty" yaml:"contains"`
	// Matches: the final answer matches this regular expression (RE2).
	Matches string `json:"matches,omitempty" yaml:"matches"`
	// MaxSteps: the case's turns took at most this many model steps.
	MaxSteps int `json:"maxSteps,omitempty" yaml:"maxSteps"`
	// NoError: no tool call had an isError result (and no turn failed).
	NoError bool `json:"noError,omitempty" yaml:"noError"`
}

// EvalBatchStatus says where a batch stands.
type EvalBatchStatus string

// The statuses of a batch, and of a case.
const (
	EvalQueued    EvalBatchStatus = "queued"
	EvalRunning   EvalBatchStatus = "running"
	EvalCompleted EvalBatchStatus = "completed" // a case: all checks ran (passed or not)
	EvalFailed    EvalBatchStatus = "failed"    // a case: it could not be run to the end (its turn failed, its host died)
)

// EvalCheckResult is a check's outcome.
type EvalCheckResult struct {
	Check  EvalCheck `json:"check"`
	Pass   bool      `json:"pass"`
	Detail string    `json:"detail,omitempty"` // why it failed, or what it found
}

// EvalCaseResult is one case of a batch: its status, its session (the
// trajectory), its checks and its score (the share of checks that passed,
// 0..1).
type EvalCaseResult struct {
	Index     int               `json:"index"`
	Case      EvalCase          `json:"case"`
	Status    EvalBatchStatus   `json:"status"`
	SessionID string            `json:"sessionId,omitempty"`
	Checks    []EvalCheckResult `json:"checks,omitempty"`
	Score     float64           `json:"score"`
	Pass      bool              `json:"pass"`
	Error     string            `json:"error,omitempty"`
	Started   *time.Time        `json:"startedAt,omitempty"`
	Ended     *time.Time        `json:"endedAt,omitempty"`
	// Usage is what the model calls of the case's session consumed
	// (absent while the case has no session), as the host sums it when
	// the batch is read.
	Usage *Usage `json:"usage,omitempty"`
}

// EvalBatch is a run of an eval's cases.
type EvalBatch struct {
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	Status  EvalBatchStatus `json:"status"`
	Created time.Time       `json:"createdAt"`
	Ended   *time.Time      `json:"endedAt,omitempty"`
	// Score is the mean of the cases' scores; Passed counts the cases
	// whose every check passed.
	Score  float64 `json:"score"`
	Passed int     `json:"passed"`
	Total  int     `json:"total"`
	// Concurrency is how many cases run at once.
	Concurrency int `json:"concurrency"`
	// Principal is who ran the batch: its cases' sessions are that
	// principal's, and count against its quota.
	Principal string `json:"principal,omitempty"`
	// Cases are the case results (in a listing: omitted).
	Cases []EvalCaseResult `json:"cases,omitempty"`
	// Usage is the sum of its cases' usage (in a listing too); its cost
	// is null when a case's is.
	Usage *Usage `json:"usage,omitempty"`
}

// EvalRunRequest is POST /v1/evals: an eval's cases to run as a batch.
type EvalRunRequest struct {
	Name        string     `json:"name"`
	Cases       []EvalCase `json:"cases"`
	Concurrency int        `json:"concurrency,omitempty"` // cases at once (default 4)
	// Stubs are every case's stubs, by tool (a case's own stubs of a
	// tool replace these): see EvalCase.Stubs.
	Stubs map[string][]EvalStub `json:"stubs,omitempty"`
}

// EvalList is the body of GET /v1/evals.
type EvalList struct {
	OK      bool        `json:"ok"`
	Batches []EvalBatch `json:"batches"`
	Next    string      `json:"next,omitempty"`
}

// EvalBatchResponse is the body of POST /v1/evals (the batch as it
// started) and of GET /v1/evals/<id>.
type EvalBatchResponse struct {
	OK bool `json:"ok"`
	EvalBatch
}

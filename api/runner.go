package api

import (
	"encoding/json"

	"github.com/agentsdk/agentsdk/model"
)

// A cloud session's turns run on a runner (agent-sdk runner), not in the
// host. The runner claims a turn (POST /<slug>/v1/runner/claim), runs the
// model loop in its own workspace with the agent tools the claim carries,
// calls the server tools over the host's MCP endpoint with the claim's
// runner token, and reports the turn's events back (POST
// /<slug>/v1/runner/turns/{sessionId}/{turnId}), which also renews its
// lease. A runner that stops reporting loses the turn when its lease runs
// out: it is closed as interrupted, as a dead host's turn is.

// RunnerClaimRequest is the body of POST /<slug>/v1/runner/claim.
type RunnerClaimRequest struct {
	// Runner names the runner, for the lease and the logs.
	Runner string `json:"runner"`
	// WaitMs is how long to wait for a turn to claim (0 to 30000); none
	// in time is 204.
	WaitMs int `json:"waitMs,omitempty"`
}

// RunnerClaim is a claimed cloud turn: what a runner needs to run it.
type RunnerClaim struct {
	OK        bool   `json:"ok"`
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId"`
	// Token is the turn's fence: every report carries it, and one the host
	// no longer holds is refused (lease_lost).
	Token int64 `json:"token"`
	// LeaseMs is the lease: report (events or none) more often than this.
	LeaseMs int64 `json:"leaseMs"`
	// RunnerToken is a bearer token for the host's MCP endpoint, good only
	// for calls in this session's running turn.
	RunnerToken string `json:"runnerToken"`
	// MCPURL is where the server tools are ("" when the host advertises
	// none: the model is offered the agent tools only).
	MCPURL string `json:"mcpUrl,omitempty"`
	// Model is the model to use (its credentials are the runner's own).
	Model model.Config `json:"model"`
	// System, MaxSteps, MaxTokens, ModelTimeoutMs, ToolConcurrency and
	// ModelRetries (how many times a model call that failed in a way worth
	// retrying is tried again) are the agent's turn settings.
	System          string `json:"system,omitempty"`
	MaxSteps        int    `json:"maxSteps"`
	MaxTokens       int    `json:"maxTokens,omitempty"`
	ModelTimeoutMs  int64  `json:"modelTimeoutMs"`
	ToolConcurrency int    `json:"toolConcurrency"`
	ModelRetries    int    `json:"modelRetries"`
	// Tools are the tools offered to the model: the agent tools, and the
	// server tools when MCPURL is set.
	Tools []RunnerTool `json:"tools"`
	// Events is the session's stream so far, the turn's history: from its
	// latest compaction's throughSeq on (all of it if never compacted).
	Events []Event `json:"events"`
	// Context keeps the turn's requests within the model's window, as on
	// the host (absent: the window is unknown; nothing is counted).
	Context *RunnerContext `json:"context,omitempty"`
	// Harness is set when the session runs on a coding-agent harness: the
	// runner runs the turn on its own installation of it, instead of the
	// model loop (Model, System, MaxSteps and the loop's settings do not
	// apply), and asks the host (runnerPermission) before the harness runs
	// what needs a person's approval.
	Harness *RunnerHarness `json:"harness,omitempty"`
}

// RunnerHarness is how a runner runs a harness turn: agent.yaml's
// harness of the session's runtime.
type RunnerHarness struct {
	// Name is the runtime: claude-code, codex, gemini, or the agent's own.
	Name string `json:"name"`
	// Command, Args and Env start it ("" Command: the built-in harness's
	// program on the runner's PATH).
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// Model is the harness's model ("" its default).
	Model string `json:"model,omitempty"`
	// Permissions answers the harness's requests without a person where
	// it can: ACP tool kinds, or kind:glob over the request's title.
	Permissions HarnessPermissions `json:"permissions"`
	// HangTimeoutMs is how long the prompted harness may send nothing
	// before its turn fails as hung: 0 for the default (30 minutes),
	// negative never.
	HangTimeoutMs int64 `json:"hangTimeoutMs,omitempty"`
}

// HarnessPermissions is a harness's permissions policy (agent.yaml's
// harnesses.<name>.permissions): deny, then allow, then ask.
type HarnessPermissions struct {
	Allow []string `json:"allow,omitempty"`
	Ask   []string `json:"ask,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	// Always: what, once allowed, is answered "allow always".
	Always []string `json:"always,omitempty"`
}

// RunnerPermission is the body of POST
// /<slug>/v1/runner/turns/{sessionId}/{turnId}/permission: a harness
// turn's request for permission to run one of the harness's own calls,
// which the host parks for a person (the first time) and waits on.
type RunnerPermission struct {
	// Token is the claim's fence token.
	Token int64 `json:"token"`
	// CallID is the call's id as the runner announced it in
	// actions.requested (tool_<kind>_<random>); ModelCallID the
	// harness's own id of it.
	CallID      string `json:"callId"`
	ModelCallID string `json:"modelCallId,omitempty"`
	// Tool is the call's harness tool, harness_<kind>, and Input what
	// the approver sees: the title, kind, files, raw input and diff.
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input"`
	// WaitMs is how long to wait for the decision (0 to 30000); still
	// undecided, the answer is pending and the runner asks again.
	WaitMs int `json:"waitMs,omitempty"`
	// Withdraw says the harness withdrew the request (its turn ended):
	// the host decides the call denied, unless it was decided already.
	Withdraw bool `json:"withdraw,omitempty"`
}

// RunnerDecision answers a [RunnerPermission]: pending (ask again),
// approved (claimed for this runner: the harness runs the call, and the
// runner reports its action.result, which the host records with the
// approval), denied or expired (the host recorded its result; the harness
// is refused).
type RunnerDecision struct {
	OK     bool           `json:"ok"`
	Status ApprovalStatus `json:"status"`
	By     string         `json:"by,omitempty"`
	Reason string         `json:"reason,omitempty"`
}

// RunnerContext is agent.yaml's compaction: for a cloud turn: the model's
// window in tokens, the share of it past which old results are cleared
// and the older turns summarised (with the turn's own model), the turns
// kept verbatim, the size over which an old result is cleared (-1:
// never), the summariser's prompt ("" the default) and a summary's cap.
type RunnerContext struct {
	Window        int64   `json:"window"`
	Threshold     float64 `json:"threshold,omitempty"`
	KeepTurns     int     `json:"keepTurns,omitempty"`
	ClearBytes    int     `json:"clearBytes,omitempty"`
	Prompt        string  `json:"prompt,omitempty"`
	SummaryTokens int     `json:"summaryTokens,omitempty"`
}

// RunnerTool is a tool of a cloud turn.
type RunnerTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// Execution is agent (run by the runner, from Script) or server
	// (called over MCP).
	Execution string `json:"execution"`
	// Script is an agent tool's script, to materialise in the workspace.
	Script    string `json:"script,omitempty"`
	TimeoutMs int64  `json:"timeoutMs,omitempty"`
}

// RunnerReport is the body of POST /<slug>/v1/runner/turns/{sessionId}/{turnId}.
type RunnerReport struct {
	// Token is the claim's fence token.
	Token int64 `json:"token"`
	// Events are the turn's new events, in order: message.delta,
	// message (assistant), actions.requested, action.result, action
	// progress and output, model.usage (priced by the host),
	// model.retry, reasoning.delta, reasoning, context.cleared,
	// context.compacted, and a harness turn's plan and harness.session
	// only.
	Events []Event `json:"events,omitempty"`
	// End, if set, ends the runner's claim: completed, failed (with
	// Reason) or parked (calls wait for approval; the turn goes on when
	// they are decided, on whichever runner claims it then).
	End    string `json:"end,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Code classifies a failed end (a model call's failure, the step
	// limit); the host records another as provider_error.
	Code  FailureCode `json:"code,omitempty"`
	Steps *int        `json:"steps,omitempty"`
	// Running are the harness calls approved for this runner
	// (runnerPermission) that its harness is still running: the host
	// renews their executor leases, which otherwise run out as a dead
	// host's do, and the call is recorded interrupted.
	Running []string `json:"running,omitempty"`
}

// Runner report ends.
const (
	RunnerEndCompleted = "completed"
	RunnerEndFailed    = "failed"
	RunnerEndParked    = "parked"
)

// RunnerAdmit asks the host, before a cloud turn's model call, whether
// the usage limits (agent.yaml's limits:) let it be made: the host
// reserves what the call may consume, as it does before a local turn's,
// until the runner reports the call's model.usage.
type RunnerAdmit struct {
	// Token is the claim's fence token.
	Token int64 `json:"token"`
	// InputBytes is the size of what the call sends (its system prompt,
	// messages and tools), and MaxTokens its output allowance: the host
	// estimates the call from them.
	InputBytes int64 `json:"inputBytes"`
	MaxTokens  int   `json:"maxTokens"`
}

// RunnerAdmitted answers a [RunnerAdmit]: the call may be made; or, with
// Parked, the turn waits for a person to raise a limit (onExceed:
// approve) and the runner ends its claim parked.
type RunnerAdmitted struct {
	OK     bool `json:"ok"`
	Parked bool `json:"parked"`
}

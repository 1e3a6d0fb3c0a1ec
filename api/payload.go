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
type ApprovalResolved struct {
	At     time.Time      `json:"at"`
	By     string         `json:"by"`
	CallID string         `json:"callId"`
	Reason string         `json:"reason"`
	Status ApprovalStatus `json:"status"`
	Tool   string         `json:"tool"`
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
// model calls; a direct call's turn has none.
type TurnCompleted struct {
	Steps *int `json:"steps,omitempty"`
}

// TurnFailed ends a turn that failed, with the reason: the provider's
// error, a timeout, the step limit, "cancelled", a shutdown or a restart.
// (Fields in alphabetical order: the wire order.)
type TurnFailed struct {
	Reason string `json:"reason"`
	Steps  *int   `json:"steps,omitempty"`
}

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

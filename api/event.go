package api

import (
	"encoding/json"
	"fmt"

	"github.com/agentsdk/agentsdk/tool"
)

// Kind names the kind of an [Event]. Each kind has one payload type,
// listed with the constants. It is declared in package tool, so that a
// tool.Handle can follow a session's stream.
type Kind = tool.EventKind

// Event kinds, with their payload types.
const (
	KindSessionCreated    Kind = "session.created"           // SessionCreated
	KindSessionTagged     Kind = "session.tagged"            // SessionTagged
	KindTurnStarted       Kind = "turn.started"              // TurnStarted
	KindWorkspaceMoved    Kind = "workspace.moved"           // WorkspaceMoved
	KindMessageDelta      Kind = "message.delta"             // MessageDelta
	KindMessage           Kind = "message"                   // Message
	KindActionsRequested  Kind = "actions.requested"         // ActionsRequested
	KindApprovalRequested Kind = "action.approval_requested" // ApprovalRequested
	KindApprovalResolved  Kind = "action.approval_resolved"  // ApprovalResolved
	KindActionProgress    Kind = "action.progress"           // ActionProgress
	KindActionOutput      Kind = "action.output"             // ActionOutput
	KindActionResult      Kind = "action.result"             // ActionResult
	KindArtifactCreated   Kind = "artifact.created"          // ArtifactCreated
	KindTurnCompleted     Kind = "turn.completed"            // TurnCompleted
	KindTurnFailed        Kind = "turn.failed"               // TurnFailed
	KindChannelStarted    Kind = "channel.started"           // ChannelStarted
	KindReminderSet       Kind = "reminder.set"              // ReminderSet
	KindReminderFired     Kind = "reminder.fired"            // ReminderFired
	KindReasoningDelta    Kind = "reasoning.delta"           // ReasoningDelta
	KindReasoning         Kind = "reasoning"                 // Reasoning
	KindModelRetry        Kind = "model.retry"               // ModelRetry
	KindModelUsage        Kind = "model.usage"               // ModelUsage
	KindContextCompacted  Kind = "context.compacted"         // ContextCompacted
	KindContextCleared    Kind = "context.cleared"           // ContextCleared
	KindTurnResumed       Kind = "turn.resumed"              // TurnResumed
	KindApprovalVoted     Kind = "action.approval_voted"     // ApprovalVoted
	KindPlan              Kind = "plan"                      // Plan
	KindHarnessSession    Kind = "harness.session"           // HarnessSession
)

// Kinds lists every event kind, in the order a turn usually produces them.
var Kinds = []Kind{
	KindSessionCreated, KindSessionTagged, KindTurnStarted, KindWorkspaceMoved, KindMessageDelta, KindMessage, KindActionsRequested,
	KindApprovalRequested, KindApprovalResolved, KindActionProgress, KindActionOutput, KindActionResult, KindArtifactCreated, KindTurnCompleted, KindTurnFailed,
	KindChannelStarted, KindReminderSet, KindReminderFired, KindReasoningDelta, KindReasoning, KindModelRetry, KindModelUsage,
	KindContextCompacted, KindContextCleared, KindTurnResumed, KindApprovalVoted, KindPlan, KindHarnessSession,
}

// Payload is the data of an event of one kind.
type Payload interface {
	EventKind() Kind
}

// Event is one entry of a session's stream. Seq numbers a session's events
// from 1 without gaps; the store assigns it, and the time, when the event
// is appended. Data is the JSON of the kind's payload. It is declared in
// package tool, so that a tool.Handle can follow a session's stream.
type Event = tool.Event

// NewEvent returns an unsaved event carrying p. A payload that cannot be
// encoded (a json.RawMessage field holding invalid JSON) is recorded as
// {"error": "…"}, so that the stream says what went wrong rather than lose
// the event.
func NewEvent(p Payload) Event {
	b, err := json.Marshal(p)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return Event{Kind: p.EventKind(), Data: b}
}

// Decode reads an event's payload as T, the payload type of its kind.
func Decode[T Payload](e Event) (T, error) {
	var p T
	if e.Kind != p.EventKind() {
		return p, fmt.Errorf("decoding event %d: it is %s, not %s", e.Seq, e.Kind, p.EventKind())
	}
	if err := json.Unmarshal(e.Data, &p); err != nil {
		return p, fmt.Errorf("decoding %s event %d: %w", e.Kind, e.Seq, err)
	}
	return p, nil
}

// PayloadOf returns a new zero payload of kind k, for decoding an event
// whose kind is known only at run time; nil for an unknown kind.
func PayloadOf(k Kind) Payload {
	switch k {
	case KindSessionCreated:
		return &SessionCreated{}
	case KindSessionTagged:
		return &SessionTagged{}
	case KindTurnStarted:
		return &TurnStarted{}
	case KindWorkspaceMoved:
		return &WorkspaceMoved{}
	case KindMessageDelta:
		return &MessageDelta{}
	case KindPlan:
		return &Plan{}
	case KindHarnessSession:
		return &HarnessSession{}
	case KindMessage:
		return &Message{}
	case KindActionsRequested:
		return &ActionsRequested{}
	case KindApprovalRequested:
		return &ApprovalRequested{}
	case KindApprovalResolved:
		return &ApprovalResolved{}
	case KindApprovalVoted:
		return &ApprovalVoted{}
	case KindActionProgress:
		return &ActionProgress{}
	case KindActionOutput:
		return &ActionOutput{}
	case KindActionResult:
		return &ActionResult{}
	case KindArtifactCreated:
		return &ArtifactCreated{}
	case KindTurnCompleted:
		return &TurnCompleted{}
	case KindTurnFailed:
		return &TurnFailed{}
	case KindChannelStarted:
		return &ChannelStarted{}
	case KindReminderSet:
		return &ReminderSet{}
	case KindReminderFired:
		return &ReminderFired{}
	case KindReasoningDelta:
		return &ReasoningDelta{}
	case KindReasoning:
		return &Reasoning{}
	case KindModelRetry:
		return &ModelRetry{}
	case KindModelUsage:
		return &ModelUsage{}
	case KindContextCompacted:
		return &ContextCompacted{}
	case KindContextCleared:
		return &ContextCleared{}
	case KindTurnResumed:
		return &TurnResumed{}
	}
	return nil
}
